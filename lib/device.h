/* device.h - which compute devices exist. CUDA support is compiled in when nvcc was found
 * at build time (AS_HAVE_CUDA); the binaries still run on hosts without a GPU or driver:
 * probing never aborts, it reports zero devices. */
#ifndef AS_DEVICE_H
#define AS_DEVICE_H

#include <stddef.h>

/* number of CUDA devices that work (a tiny kernel ran and returned the right value);
 * 0 without CUDA support, driver or GPU. Cached after the first call. */
int as_cuda_device_count(void);
/* name of device i ("NVIDIA H100 80GB HBM3"); 0 ok */
int as_cuda_device_name(int i, char *buf, size_t len);
/* "CUDA: built (sm_90), 1 device(s)" / "CUDA: not built" */
const char *as_device_build_info(void);

#endif
