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

/* The --device option of every tool that computes (as-bench, as-costfit, as-rl): "auto"
 * (CUDA device 0 when one works, else the CPU), "cpu", "cuda" (device 0) or "cuda:N".
 * *dev = -1 for the CPU, else the CUDA device (checked to exist and work). Returns 0, or
 * an exit code (common.h) with err: AS_EXIT_USAGE for a string that names no device
 * ("--device: 'tpu' is not auto, cpu, cuda or cuda:N"), AS_EXIT_ENV for a CUDA device that
 * does not exist or work ("--device cuda:1: only 1 CUDA device(s)"). */
int as_device_parse(const char *spec, int *dev, char *err, size_t errlen);

#endif
