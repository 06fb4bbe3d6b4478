/* device_cuda.cu - probe CUDA devices without ever aborting: count the devices the runtime
 * reports, then check each one really runs a kernel. Linked only when nvcc was found. */
#include <cuda_runtime.h>
#include <stdio.h>

static __global__ void as_probe_kernel(int *out, int v)
{
    out[threadIdx.x] = v + (int)threadIdx.x;
}

static int probe_one(int dev)
{
    if (cudaSetDevice(dev) != cudaSuccess) return 0;
    int *d = 0, h[32];
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) { cudaGetLastError(); return 0; }
    as_probe_kernel<<<1, 32>>>(d, 1000 + dev);
    int ok = cudaGetLastError() == cudaSuccess &&
             cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(d);
    if (ok)
        for (int i = 0; i < 32; i++) ok &= h[i] == 1000 + dev + i;
    return ok;
}

extern "C" int as_cuda_probe(int *count)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); *count = 0; return 0; }
    int working = 0;
    for (int i = 0; i < n; i++) working += probe_one(i);
    *count = working;
    return 0;
}

extern "C" int as_cuda_name(int i, char *buf, size_t len)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) return -1;
    snprintf(buf, len, "%s", p.name);
    return 0;
}

extern "C" const char *as_cuda_runtime_version(void)
{
    static char buf[32];
    int v = 0;
    cudaRuntimeGetVersion(&v);
    snprintf(buf, sizeof buf, "%d.%d", v / 1000, (v % 1000) / 10);
    return buf;
}
