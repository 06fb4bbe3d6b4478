/* device.c - device probing front end; the CUDA side lives in device_cuda.cu */
#include "device.h"
#include "common.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef AS_HAVE_CUDA
/* from device_cuda.cu */
int as_cuda_probe(int *count);
int as_cuda_name(int i, char *buf, size_t len);
const char *as_cuda_runtime_version(void);
#endif

int as_cuda_device_count(void)
{
#ifdef AS_HAVE_CUDA
    static int cached = -1;
    if (cached < 0) {
        int n = 0;
        cached = as_cuda_probe(&n) == 0 ? n : 0;
    }
    return cached;
#else
    return 0;
#endif
}

int as_cuda_device_name(int i, char *buf, size_t len)
{
#ifdef AS_HAVE_CUDA
    if (i < 0 || i >= as_cuda_device_count()) return -1;
    return as_cuda_name(i, buf, len);
#else
    (void)i;
    if (len) buf[0] = 0;
    return -1;
#endif
}

const char *as_device_build_info(void)
{
    static char buf[512];
#ifdef AS_HAVE_CUDA
    int n = as_cuda_device_count();
    char name[256] = "";
    if (n > 0) as_cuda_device_name(0, name, sizeof name);
    snprintf(buf, sizeof buf, "CUDA: built (runtime %s), %d working device(s)%s%s",
             as_cuda_runtime_version(), n, n ? ": " : "", name);
#else
    snprintf(buf, sizeof buf, "CUDA: not built (CPU only)");
#endif
    return buf;
}

int as_device_parse(const char *spec, int *dev, char *err, size_t errlen)
{
    *dev = -1;
    if (!strcmp(spec, "cpu")) return 0;
    if (!strcmp(spec, "auto")) {
        if (as_cuda_device_count() > 0) *dev = 0;
        return 0;
    }
    if (!strncmp(spec, "cuda", 4) && (spec[4] == 0 || spec[4] == ':')) {
        int64_t d = 0;
        if (spec[4] == ':' && as_parse_i64(spec + 5, 0, 1024, &d)) {
            snprintf(err, errlen, "--device: '%s' is not cuda:N", spec);
            return AS_EXIT_USAGE;
        }
        int n = as_cuda_device_count();
        if (n == 0) {
            snprintf(err, errlen, "--device %s: no working CUDA device (%s)", spec, as_device_build_info());
            return AS_EXIT_ENV;
        }
        if (d >= n) {
            snprintf(err, errlen, "--device %s: only %d CUDA device(s)", spec, n);
            return AS_EXIT_ENV;
        }
        *dev = (int)d;
        return 0;
    }
    snprintf(err, errlen, "--device: '%s' is not auto, cpu, cuda or cuda:N", spec);
    return AS_EXIT_USAGE;
}
