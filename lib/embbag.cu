/* embbag.cu - the fused multi-table embedding-bag op on CUDA (see embbag.h for the math).
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables, n lookups (= offsets[T*B]).
 *
 * Forward: ONE launch for all tables. A host-built work list of items (table, first bag,
 * number of bags), balanced by lookups, gives one item per warp. The warp splits into
 * 32/G lane groups of G lanes, one bag per group; each lane owns V consecutive columns
 * (V = 8 halves = 16-byte loads when D and the table's weight offset allow, else 4/2/1)
 * and keeps 4 rows in flight before adding them, in lookup order, into fp32 accumulators:
 * every output element is the sequential sum the CPU reference computes (bit-exact).
 *
 * Backward + exact SGD (all on one stream, no host sync, no allocation):
 *   1. keygen: key = row base of the table in the shard + row (32-bit keys when the shard
 *      has <= 2^32 rows, else 64-bit), value = global bag id t*B+b, in lookup order.
 *   2. cub::DeviceRadixSort::SortPairs (stable LSD) over only ceil(log2 sumE) key bits.
 *   3. cub::DeviceSelect::UniqueByKey with a counting iterator: unique rows + run starts.
 *   4. prep (1 block): per-table first run (binary search on the sorted unique keys) and a
 *      prefix of per-table warp tasks; zeroes the long-run counters.
 *   5. short runs (<= AS_LONG_RUN lookups): a lane group per run (D/4 lanes, float4 grad
 *      loads), 4 grad rows in flight, fp32 sums in ascending lookup order per column, then
 *      W = half(float(W) - lr*G) with __fmul_rn/__fsub_rn/__float2half_rn (no FMA
 *      contraction, one round-to-nearest-even). Longer runs are appended to a list.
 *   6. long runs (hot rows): one 256-thread block per (run, 32-column slice), runs taken
 *      dynamically from the list. All 8 warps gather tiles of 256 grad rows (32 columns)
 *      into shared memory, double-buffered, while warp 0 adds the previous tile column-
 *      sequentially: the order stays ascending lookup order, so results are bit-exact too.
 *   Every unique row is updated by exactly one group or block: deterministic, no atomics on
 *   data (the only atomics hand out list slots, which does not affect any value).
 *
 * Guard words surround the device output and weights (as_eb_gpu_check_guards, tests). */
#include "embbag.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AS_LONG_RUN 64      /* runs longer than this go to the block-per-run kernel */
#define AS_TILE 256         /* lookups per shared-memory tile in the long-run kernel */
#define AS_SLICE 32         /* columns per long-run block */
#define AS_GUARD 1024       /* guard elements on each side of out and W */
#define AS_GUARD_F32 0x7fbadbadu
#define AS_GUARD_F16 0x7dadu  /* a NaN pattern no kernel writes */

/* ---- errors ---------------------------------------------------------------------------- */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int ck_(cudaError_t e, const char *what, char *err, size_t errlen, int line)
{
    if (e == cudaSuccess) return 0;
    seterr(err, errlen, "cuda: %s: %s (embbag.cu:%d)", what, cudaGetErrorString(e), line);
    cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
    return -1;
}
#define CK(call, what) ck_((call), (what), err, errlen, __LINE__)

/* ---- device-side structures -------------------------------------------------------------- */

struct TblDev {
    long long w_off;     /* element offset of the table in W */
    long long row_base;  /* first linear row of the table in the shard */
    int D;
    int d_off;
    int fV, fG;          /* forward: halves per lane load, lanes per bag */
    int out_vec;         /* forward: float4 stores allowed */
    int bV, bG;          /* backward: floats per lane load (4 or 1), lanes per run */
    int pad;
};

struct FwdItem {
    int t, b0, nb, pad;
};

struct as_eb_gpu {
    int dev;
    int nsm;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    int T;
    long long B, n, sumE, wtotal, TB;
    int sumD, maxD, max_slices;
    int key64, end_bit;

    uint16_t *dW_base, *dW;
    float *dout_base, *dout;
    float *dgrad;
    int *dind;
    long long *doff;
    TblDev *dtbl;
    long long *drow_base;   /* [T+1] */
    FwdItem *ditems;
    long long nitems;

    void *dkeys[2];
    uint32_t *dvals[2];
    int *dcnt;              /* [0] unique runs, [1] long runs, [2..2+max_slices) slice counters */
    int *dtruns;            /* [T+1] first run of each table */
    int *dtask;             /* [T+1] prefix of warp tasks */
    uint32_t *dlong;
    long long long_cap;
    void *dtemp;
    size_t temp_bytes;

    unsigned char *dflush;
    size_t flush_bytes;
    unsigned *dsink;
};

/* ---- small device helpers ------------------------------------------------------------- */

template <int V> struct HRaw;
template <> struct HRaw<8> { typedef uint4 T; };
template <> struct HRaw<4> { typedef uint2 T; };
template <> struct HRaw<2> { typedef unsigned int T; };
template <> struct HRaw<1> { typedef unsigned short T; };

template <int V>
__device__ __forceinline__ typename HRaw<V>::T ld_h(const __half *p)
{
    return __ldg(reinterpret_cast<const typename HRaw<V>::T *>(p));
}

__device__ __forceinline__ float h2f_bits(unsigned short u)
{
    return __half2float(__ushort_as_half(u));
}

/* acc[v] += element v of the raw vector, v ascending (each acc[v] is its own chain) */
__device__ __forceinline__ void add_raw(float *acc, uint4 r)
{
    unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        acc[2 * k] += h2f_bits((unsigned short)(w[k] & 0xffffu));
        acc[2 * k + 1] += h2f_bits((unsigned short)(w[k] >> 16));
    }
}
__device__ __forceinline__ void add_raw(float *acc, uint2 r)
{
    acc[0] += h2f_bits((unsigned short)(r.x & 0xffffu));
    acc[1] += h2f_bits((unsigned short)(r.x >> 16));
    acc[2] += h2f_bits((unsigned short)(r.y & 0xffffu));
    acc[3] += h2f_bits((unsigned short)(r.y >> 16));
}
__device__ __forceinline__ void add_raw(float *acc, unsigned int r)
{
    acc[0] += h2f_bits((unsigned short)(r & 0xffffu));
    acc[1] += h2f_bits((unsigned short)(r >> 16));
}
__device__ __forceinline__ void add_raw(float *acc, unsigned short r)
{
    acc[0] += h2f_bits(r);
}

/* ---- forward ------------------------------------------------------------------------------ */

template <int V>
__device__ __forceinline__ void fwd_bag(const __half *__restrict__ Wt, const int *__restrict__ ind,
                                        long long s, long long e, int D, int G, int gl,
                                        float *__restrict__ orow, int out_vec)
{
    typedef typename HRaw<V>::T R;
    for (int c0 = gl * V; c0 < D; c0 += G * V) {
        float acc[V];
#pragma unroll
        for (int v = 0; v < V; v++) acc[v] = 0.0f;
        const __half *base = Wt + c0;
        long long k = s;
        for (; k + 4 <= e; k += 4) {
            int i0 = __ldg(ind + k), i1 = __ldg(ind + k + 1);
            int i2 = __ldg(ind + k + 2), i3 = __ldg(ind + k + 3);
            R r0 = ld_h<V>(base + (long long)i0 * D);
            R r1 = ld_h<V>(base + (long long)i1 * D);
            R r2 = ld_h<V>(base + (long long)i2 * D);
            R r3 = ld_h<V>(base + (long long)i3 * D);
            add_raw(acc, r0);
            add_raw(acc, r1);
            add_raw(acc, r2);
            add_raw(acc, r3);
        }
        for (; k < e; k++) {
            int i0 = __ldg(ind + k);
            add_raw(acc, ld_h<V>(base + (long long)i0 * D));
        }
        float *o = orow + c0;
        if (V >= 4 && out_vec) {
#pragma unroll
            for (int v = 0; v < V; v += 4)
                *reinterpret_cast<float4 *>(o + v) = make_float4(acc[v], acc[v + 1], acc[v + 2], acc[v + 3]);
        } else {
#pragma unroll
            for (int v = 0; v < V; v++) o[v] = acc[v];
        }
    }
}

template <int V>
__device__ __forceinline__ void fwd_item(const FwdItem &it, const TblDev &tb, const __half *__restrict__ W,
                                         const int *__restrict__ ind, const long long *__restrict__ off,
                                         float *__restrict__ out, long long B, int sumD)
{
    int lane = threadIdx.x & 31;
    int G = tb.fG, gpw = 32 / G;
    int grp = lane / G, gl = lane % G;
    const __half *Wt = W + tb.w_off;
    for (int bi = grp; bi < it.nb; bi += gpw) {
        long long b = (long long)it.b0 + bi;
        long long gb = (long long)it.t * B + b;
        long long s = off[gb], e = off[gb + 1];
        fwd_bag<V>(Wt, ind, s, e, tb.D, G, gl, out + b * sumD + tb.d_off, tb.out_vec);
    }
}

__global__ void __launch_bounds__(256) eb_fwd_kernel(const FwdItem *__restrict__ items, long long nitems,
                                                     const TblDev *__restrict__ tbl, const __half *__restrict__ W,
                                                     const int *__restrict__ ind, const long long *__restrict__ off,
                                                     float *__restrict__ out, long long B, int sumD)
{
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w >= nitems) return;
    FwdItem it = items[w];
    TblDev tb = tbl[it.t];
    switch (tb.fV) { /* warp-uniform: one item per warp */
    case 8: fwd_item<8>(it, tb, W, ind, off, out, B, sumD); break;
    case 4: fwd_item<4>(it, tb, W, ind, off, out, B, sumD); break;
    case 2: fwd_item<2>(it, tb, W, ind, off, out, B, sumD); break;
    default: fwd_item<1>(it, tb, W, ind, off, out, B, sumD); break;
    }
}

/* ---- backward: keys ------------------------------------------------------------------------ */

/* one warp per 32 consecutive global bags; lanes walk the bags' lookups coalesced and find
 * their bag by a 5-step binary search over the 32 offsets held one per lane */
template <typename K>
__global__ void __launch_bounds__(256) eb_keygen_kernel(const long long *__restrict__ off, const int *__restrict__ ind,
                                                        const long long *__restrict__ row_base, long long TB,
                                                        unsigned Bu, K *__restrict__ keys,
                                                        uint32_t *__restrict__ vals)
{
    long long nchunks = (TB + 31) / 32;
    long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    int lane = threadIdx.x & 31;
    for (long long c = warp; c < nchunks; c += nwarps) {
        long long g0 = c * 32;
        long long gl = g0 + lane;
        long long o = off[gl < TB ? gl : TB];
        long long end = off[g0 + 32 < TB ? g0 + 32 : TB];
        long long start = __shfl_sync(0xffffffffu, o, 0);
        for (long long base = start; base < end; base += 32) {
            long long p = base + lane;
            int lo = 0;
#pragma unroll
            for (int step = 16; step >= 1; step >>= 1) {
                long long oc = __shfl_sync(0xffffffffu, o, lo + step);
                if (oc <= p) lo += step;
            }
            if (p < end) {
                unsigned g = (unsigned)(g0 + lo);
                unsigned t = g / Bu;
                keys[p] = (K)(row_base[t] + (long long)ind[p]);
                vals[p] = g;
            }
        }
    }
}

/* largest i in [0, n) with a[i] <= x (a ascending, a[0] <= x) */
template <typename A, typename X>
__device__ __forceinline__ int last_le(const A *a, int n, X x)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if ((X)a[mid] <= x) lo = mid; else hi = mid - 1;
    }
    return lo;
}

template <typename K>
__global__ void eb_prep_kernel(const K *__restrict__ ukeys, const long long *__restrict__ row_base,
                               const TblDev *__restrict__ tbl, int T, int *cnt, int nslice_ctr,
                               int *truns, int *task)
{
    int nruns = cnt[0];
    for (int t = threadIdx.x; t <= T; t += blockDim.x) {
        if (t == T) { truns[t] = nruns; continue; }
        K x = (K)row_base[t];
        int lo = 0, hi = nruns; /* first run with key >= x */
        while (lo < hi) {
            int mid = (lo + hi) >> 1;
            if (ukeys[mid] < x) lo = mid + 1; else hi = mid;
        }
        truns[t] = lo;
    }
    for (int i = threadIdx.x; i < nslice_ctr; i += blockDim.x) cnt[1 + i] = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        int acc = 0;
        for (int t = 0; t < T; t++) {
            task[t] = acc;
            int gpw = 32 / tbl[t].bG;
            int r = truns[t + 1] - truns[t];
            acc += (r + gpw - 1) / gpw;
        }
        task[T] = acc;
    }
}

/* ---- backward: short runs ------------------------------------------------------------------ */

template <int V>
__device__ __forceinline__ void ld_g(const float *p, float *f)
{
    if (V == 4) {
        float4 x = __ldg(reinterpret_cast<const float4 *>(p));
        f[0] = x.x; f[1] = x.y; f[2] = x.z; f[3] = x.w;
    } else {
        f[0] = __ldg(p);
    }
}

__device__ __forceinline__ unsigned short sgd_h(unsigned short w, float lr, float g)
{
    float nw = __fsub_rn(h2f_bits(w), __fmul_rn(lr, g));
    return __half_as_ushort(__float2half_rn(nw));
}

template <int V>
__device__ __forceinline__ void bwd_run(__half *__restrict__ Wrow, const float *__restrict__ gcol,
                                        const uint32_t *__restrict__ vals, long long s, long long e,
                                        unsigned tB, int D, int G, int gl, int sumD, float lr)
{
    for (int c0 = gl * V; c0 < D; c0 += G * V) {
        float acc[V];
#pragma unroll
        for (int v = 0; v < V; v++) acc[v] = 0.0f;
        const float *gc = gcol + c0;
        long long k = s;
        for (; k + 4 <= e; k += 4) {
            unsigned b0 = __ldg(vals + k) - tB, b1 = __ldg(vals + k + 1) - tB;
            unsigned b2 = __ldg(vals + k + 2) - tB, b3 = __ldg(vals + k + 3) - tB;
            float f0[V], f1[V], f2[V], f3[V];
            ld_g<V>(gc + (size_t)b0 * sumD, f0);
            ld_g<V>(gc + (size_t)b1 * sumD, f1);
            ld_g<V>(gc + (size_t)b2 * sumD, f2);
            ld_g<V>(gc + (size_t)b3 * sumD, f3);
#pragma unroll
            for (int v = 0; v < V; v++) { acc[v] += f0[v]; acc[v] += f1[v]; acc[v] += f2[v]; acc[v] += f3[v]; }
        }
        for (; k < e; k++) {
            unsigned b0 = __ldg(vals + k) - tB;
            float f0[V];
            ld_g<V>(gc + (size_t)b0 * sumD, f0);
#pragma unroll
            for (int v = 0; v < V; v++) acc[v] += f0[v];
        }
        __half *wp = Wrow + c0;
        if (V == 4) {
            uint2 r = *reinterpret_cast<uint2 *>(wp);
            unsigned short h0 = sgd_h((unsigned short)(r.x & 0xffffu), lr, acc[0]);
            unsigned short h1 = sgd_h((unsigned short)(r.x >> 16), lr, acc[V > 1 ? 1 : 0]);
            unsigned short h2 = sgd_h((unsigned short)(r.y & 0xffffu), lr, acc[V > 2 ? 2 : 0]);
            unsigned short h3 = sgd_h((unsigned short)(r.y >> 16), lr, acc[V > 3 ? 3 : 0]);
            r.x = (unsigned)h0 | ((unsigned)h1 << 16);
            r.y = (unsigned)h2 | ((unsigned)h3 << 16);
            *reinterpret_cast<uint2 *>(wp) = r;
        } else {
            unsigned short *u = reinterpret_cast<unsigned short *>(wp);
            *u = sgd_h(*u, lr, acc[0]);
        }
    }
}

template <typename K>
__global__ void __launch_bounds__(256) eb_short_kernel(const TblDev *__restrict__ tbl, int T,
                                                       const int *__restrict__ truns, const int *__restrict__ task,
                                                       const int *__restrict__ cnt_ro, int *cnt,
                                                       const K *__restrict__ ukeys, const uint32_t *__restrict__ starts,
                                                       const uint32_t *__restrict__ vals, long long n,
                                                       const float *__restrict__ grad, __half *W,
                                                       unsigned Bu, int sumD, float lr,
                                                       uint32_t *__restrict__ long_list)
{
    int total = task[T];
    int nruns = cnt_ro[0];
    int warp = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    int nwarps = (int)(((long long)gridDim.x * blockDim.x) >> 5);
    int lane = threadIdx.x & 31;
    for (int k = warp; k < total; k += nwarps) {
        /* the largest t with task[t] <= k: tables without tasks (task[t] == task[t+1])
         * are passed over because a later table with the same prefix wins */
        int t = last_le(task, T, k);
        TblDev tb = tbl[t];
        int G = tb.bG, gpw = 32 / G;
        int grp = lane / G, gl = lane % G;
        int r = truns[t] + (k - task[t]) * gpw + grp;
        if (r >= truns[t + 1]) continue;
        long long s = starts[r];
        long long e = r + 1 < nruns ? (long long)starts[r + 1] : n;
        if (e - s > AS_LONG_RUN) {
            if (gl == 0) {
                int q = atomicAdd(cnt + 1, 1);
                long_list[q] = (uint32_t)r;
            }
            continue;
        }
        long long row = (long long)ukeys[r] - tb.row_base;
        __half *Wrow = W + tb.w_off + row * tb.D;
        const float *gcol = grad + tb.d_off;
        unsigned tB = (unsigned)t * Bu;
        if (tb.bV == 4) bwd_run<4>(Wrow, gcol, vals, s, e, tB, tb.D, G, gl, sumD, lr);
        else bwd_run<1>(Wrow, gcol, vals, s, e, tB, tb.D, G, gl, sumD, lr);
    }
}

/* ---- backward: long runs ------------------------------------------------------------------- */

struct LongSmem {
    float buf[2][AS_TILE][AS_SLICE];
    uint32_t sb[2][AS_TILE];
    int q;
};

template <typename K>
__global__ void __launch_bounds__(256) eb_long_kernel(const TblDev *__restrict__ tbl, const long long *__restrict__ row_base,
                                                      int T, const int *__restrict__ cnt_ro, int *cnt,
                                                      const K *__restrict__ ukeys, const uint32_t *__restrict__ starts,
                                                      const uint32_t *__restrict__ vals, long long n,
                                                      const float *__restrict__ grad, __half *W,
                                                      unsigned Bu, int sumD, float lr,
                                                      const uint32_t *__restrict__ long_list)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    LongSmem &sm = *reinterpret_cast<LongSmem *>(smem_raw);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int slice = blockIdx.y;
    const int nlong = cnt_ro[1];
    const int nruns = cnt_ro[0];
    int *ctr = cnt + 2 + slice;
    for (;;) {
        if (tid == 0) sm.q = atomicAdd(ctr, 1);
        __syncthreads();
        int q = sm.q;
        __syncthreads(); /* everyone has read sm.q before thread 0 may overwrite it */
        if (q >= nlong) break;
        int r = (int)long_list[q];
        K key = ukeys[r];
        int t = last_le(row_base, T, (long long)key);
        TblDev tb = tbl[t];
        int c0 = slice * AS_SLICE;
        if (c0 >= tb.D) continue; /* block-uniform */
        long long s = starts[r];
        long long e = r + 1 < nruns ? (long long)starts[r + 1] : n;
        long long len = e - s;
        long long row = (long long)key - tb.row_base;
        unsigned tB = (unsigned)t * Bu;
        int col = c0 + lane;
        bool cvalid = col < tb.D;
        const float *gbase = grad + tb.d_off + (cvalid ? col : 0);
        long long ntiles = (len + AS_TILE - 1) / AS_TILE;

        /* prologue: bag ids of tiles 0 and 1, grads of tile 0 */
        sm.sb[0][tid] = tid < len ? vals[s + tid] - tB : 0u;
        if (ntiles > 1) sm.sb[1][tid] = AS_TILE + tid < len ? vals[s + AS_TILE + tid] - tB : 0u;
        __syncthreads();
        {
            int cn = (int)(len < AS_TILE ? len : AS_TILE);
            float v[AS_TILE / 8];
#pragma unroll
            for (int kk = 0; kk < AS_TILE / 8; kk++) {
                int k = warp + 8 * kk;
                v[kk] = (k < cn && cvalid) ? __ldg(gbase + (size_t)sm.sb[0][k] * sumD) : 0.0f;
            }
#pragma unroll
            for (int kk = 0; kk < AS_TILE / 8; kk++) sm.buf[0][warp + 8 * kk][lane] = v[kk];
        }
        __syncthreads();

        float acc = 0.0f;
        for (long long i = 0; i < ntiles; i++) {
            int cur = (int)(i & 1), nxt = cur ^ 1;
            float v[AS_TILE / 8];
            bool more = i + 1 < ntiles;
            if (more) {
                long long rem = len - (i + 1) * AS_TILE;
                int cn = (int)(rem < AS_TILE ? rem : AS_TILE);
#pragma unroll
                for (int kk = 0; kk < AS_TILE / 8; kk++) {
                    int k = warp + 8 * kk;
                    v[kk] = (k < cn && cvalid) ? __ldg(gbase + (size_t)sm.sb[nxt][k] * sumD) : 0.0f;
                }
            }
            if (warp == 0) {
                long long rem = len - i * AS_TILE;
                int cn = (int)(rem < AS_TILE ? rem : AS_TILE);
                const float *bp = &sm.buf[cur][0][lane];
#pragma unroll 8
                for (int k = 0; k < cn; k++) acc += bp[k * AS_SLICE];
            }
            if (more) {
#pragma unroll
                for (int kk = 0; kk < AS_TILE / 8; kk++) sm.buf[nxt][warp + 8 * kk][lane] = v[kk];
            }
            if (i + 2 < ntiles) {
                long long p = (i + 2) * AS_TILE + tid;
                sm.sb[cur][tid] = p < len ? vals[s + p] - tB : 0u;
            }
            __syncthreads();
        }
        if (warp == 0 && cvalid) {
            unsigned short *u = reinterpret_cast<unsigned short *>(W + tb.w_off + row * tb.D + col);
            *u = sgd_h(*u, lr, acc);
        }
    }
}

/* ---- cache flush --------------------------------------------------------------------------- */

__global__ void eb_flush_kernel(const uint4 *__restrict__ p, size_t n16, unsigned *sink)
{
    unsigned x = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) sink[0] = x; /* data-dependent: the loads cannot be dropped */
}

__global__ void eb_fill_f32(float *p, size_t n, unsigned bits)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __uint_as_float(bits);
}

/* ---- host helpers ---------------------------------------------------------------------------- */

static size_t rup(size_t x) { return (x + 255) & ~(size_t)255; }

static int next_pow2_le32(int x)
{
    int g = 1;
    while (g < x && g < 32) g <<= 1;
    return g;
}

static void table_params(const as_eb_shard *s, int t, TblDev *tb)
{
    int D = s->dims[t];
    long long wo = s->w_off[t];
    int sumD = s->d_off[s->T];
    int dof = s->d_off[t];
    int V = 1;
    if (D % 8 == 0 && wo % 8 == 0) V = 8;
    else if (D % 4 == 0 && wo % 4 == 0) V = 4;
    else if (D % 2 == 0 && wo % 2 == 0) V = 2;
    tb->w_off = wo;
    tb->D = D;
    tb->d_off = dof;
    tb->fV = V;
    tb->fG = next_pow2_le32((D + V - 1) / V);
    tb->out_vec = (V >= 4 && sumD % 4 == 0 && dof % 4 == 0);
    int bV = (D % 4 == 0 && wo % 4 == 0 && sumD % 4 == 0 && dof % 4 == 0) ? 4 : 1;
    tb->bV = bV;
    tb->bG = next_pow2_le32((D + bV - 1) / bV);
    tb->pad = 0;
}

/* forward work items: each covers >= one bag per lane group and about gpw*64 lookups,
 * at most 8 bags per group. Returns the count; fills items when non-NULL. */
static long long build_items(const as_eb_shard *s, FwdItem *items)
{
    long long cnt = 0;
    for (int t = 0; t < s->T; t++) {
        TblDev tb;
        table_params(s, t, &tb);
        int gpw = 32 / tb.fG;
        const int64_t *off = s->offsets + (int64_t)t * s->B;
        long long b = 0;
        while (b < s->B) {
            long long b0 = b, nb = 0, look = 0;
            while (b < s->B && (nb < gpw || (nb < 8LL * gpw && look < 64LL * gpw))) {
                look += off[b + 1] - off[b];
                nb++;
                b++;
            }
            if (items) {
                items[cnt].t = t;
                items[cnt].b0 = (int)b0;
                items[cnt].nb = (int)nb;
                items[cnt].pad = 0;
            }
            cnt++;
        }
    }
    return cnt;
}

static long long sum_rows(const as_eb_shard *s)
{
    long long e = 0;
    for (int t = 0; t < s->T; t++) e += s->rows[t];
    return e;
}

static int key_bits(long long sumE)
{
    unsigned long long m = sumE > 1 ? (unsigned long long)(sumE - 1) : 0;
    int b = 0;
    while (m) { b++; m >>= 1; }
    return b < 1 ? 1 : b;
}

static long long long_capacity(long long n) { return n / (AS_LONG_RUN + 1) + 1; }

/* CUB temporary storage for sort + unique (query only; may fail without a device) */
template <typename K>
static cudaError_t cub_temp(long long n, int end_bit, size_t *bytes)
{
    size_t a = 0, b = 0;
    int ni = (int)(n > 0 ? n : 1);
    cub::DoubleBuffer<K> kb((K *)0, (K *)0);
    cub::DoubleBuffer<uint32_t> vb((uint32_t *)0, (uint32_t *)0);
    cudaError_t e = cub::DeviceRadixSort::SortPairs((void *)0, a, kb, vb, ni, 0, end_bit, (cudaStream_t)0);
    if (e != cudaSuccess) return e;
    e = cub::DeviceSelect::UniqueByKey((void *)0, b, (const K *)0, thrust::counting_iterator<uint32_t>(0),
                                       (K *)0, (uint32_t *)0, (int *)0, ni, (cudaStream_t)0);
    if (e != cudaSuccess) return e;
    *bytes = a > b ? a : b;
    return cudaSuccess;
}

static int flush_size(int dev, size_t *bytes)
{
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess || l2 <= 0) {
        cudaGetLastError();
        l2 = 128 << 20;
    }
    size_t f = 2 * (size_t)l2;
    if (f < ((size_t)64 << 20)) f = (size_t)64 << 20;
    *bytes = rup(f);
    return 0;
}

struct Sizes {
    size_t W, out, grad, ind, off, tbl, rowb, items, keys, vals, cnt, truns, task, lng, temp, flush, sink;
    size_t total;
};

/* 64-bit keys when the shard has more than 2^32 rows; AS_EB_FORCE_KEY64=1 forces them
 * (tests use it to exercise that path on small shards) */
static int want_key64(long long sumE)
{
    const char *f = getenv("AS_EB_FORCE_KEY64");
    return sumE > 4294967296LL || (f && f[0] == '1');
}

static int compute_sizes(const as_eb_shard *s, int dev, int have_dev, Sizes *z)
{
    long long TB = (long long)s->T * s->B;
    long long n = s->offsets[TB];
    long long sumE = sum_rows(s);
    int key64 = want_key64(sumE);
    size_t ks = key64 ? 8 : 4;
    int sumD = s->d_off[s->T];
    int maxD = 1;
    for (int t = 0; t < s->T; t++) if (s->dims[t] > maxD) maxD = s->dims[t];
    int max_slices = (maxD + AS_SLICE - 1) / AS_SLICE;
    memset(z, 0, sizeof *z);
    z->W = rup(2 * ((size_t)s->w_off[s->T] + 2 * AS_GUARD));
    z->out = rup(4 * ((size_t)s->B * sumD + 2 * AS_GUARD));
    z->grad = rup(4 * ((size_t)s->B * sumD + 1));
    z->ind = rup(4 * ((size_t)n + 1));
    z->off = rup(8 * ((size_t)TB + 1));
    z->tbl = rup(sizeof(TblDev) * (size_t)s->T);
    z->rowb = rup(8 * ((size_t)s->T + 1));
    z->items = rup(sizeof(FwdItem) * (size_t)(build_items(s, NULL) + 1));
    z->keys = rup(ks * ((size_t)n + 1));
    z->vals = rup(4 * ((size_t)n + 1));
    z->cnt = rup(4 * (size_t)(2 + max_slices));
    z->truns = rup(4 * ((size_t)s->T + 1));
    z->task = rup(4 * ((size_t)s->T + 1));
    z->lng = rup(4 * (size_t)long_capacity(n));
    size_t tb = 0;
    cudaError_t e = cudaErrorNoDevice;
    if (have_dev) {
        int eb = key_bits(sumE);
        e = key64 ? cub_temp<unsigned long long>(n, eb, &tb) : cub_temp<uint32_t>(n, eb, &tb);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        tb = (size_t)n * 2 + ((size_t)64 << 20); /* estimate when no device answers */
    }
    z->temp = rup(tb + 16);
    if (have_dev) flush_size(dev, &z->flush);
    else z->flush = (size_t)256 << 20;
    z->sink = 256;
    z->total = z->W + z->out + z->grad + z->ind + z->off + z->tbl + z->rowb + z->items + 2 * z->keys +
               2 * z->vals + z->cnt + z->truns + z->task + z->lng + z->temp + z->flush + z->sink;
    return 0;
}

static int current_or_zero(void)
{
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess) { cudaGetLastError(); d = 0; }
    return d;
}

/* ---- the C API -------------------------------------------------------------------------------- */

extern "C" size_t as_eb_gpu_bytes_needed(const as_eb_shard *s)
{
    if (!s || s->T < 1 || s->B < 0) return 0;
    int ndev = 0;
    int have = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    if (!have) cudaGetLastError();
    Sizes z;
    compute_sizes(s, have ? current_or_zero() : 0, have, &z);
    return z.total;
}

extern "C" void as_eb_gpu_destroy(as_eb_gpu *g)
{
    if (!g) return;
    cudaSetDevice(g->dev);
    if (g->st) cudaStreamSynchronize(g->st);
    void *ptrs[] = {g->dW_base, g->dout_base, g->dgrad, g->dind, g->doff, g->dtbl, g->drow_base, g->ditems,
                    g->dkeys[0], g->dkeys[1], g->dvals[0], g->dvals[1], g->dcnt, g->dtruns, g->dtask,
                    g->dlong, g->dtemp, g->dflush, g->dsink};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i]) cudaFree(ptrs[i]);
    if (g->e0) cudaEventDestroy(g->e0);
    if (g->e1) cudaEventDestroy(g->e1);
    if (g->st) cudaStreamDestroy(g->st);
    cudaGetLastError();
    free(g);
}

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

extern "C" int as_eb_gpu_create(as_eb_gpu **gp, const as_eb_shard *s, const uint16_t *W, const float *grad,
                                int device, char *err, size_t errlen)
{
    if (!gp) { seterr(err, errlen, "as_eb_gpu_create: no output pointer"); return -1; }
    *gp = NULL;
    if (!s || !W || !grad) { seterr(err, errlen, "as_eb_gpu_create: null shard, weights or grad"); return -1; }
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev <= 0) {
        seterr(err, errlen, "no CUDA device (%s)", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        cudaGetLastError();
        return -1;
    }
    if (device < 0 || device >= ndev) {
        seterr(err, errlen, "CUDA device %d does not exist (%d present)", device, ndev);
        return -1;
    }
    if (as_eb_validate(s, err, errlen) != 0) return -1;
    /* limits of this implementation (32-bit bag ids, positions and CUB item counts) */
    long long TB = (long long)s->T * s->B;
    long long n = s->offsets[TB];
    if (s->B > INT_MAX || TB >= 4294967295LL || n >= (long long)INT_MAX) {
        seterr(err, errlen, "shard too large for the GPU path (T*B=%lld, lookups=%lld; limits 2^32-1 and 2^31-1)",
               TB, n);
        return -1;
    }
    for (int t = 0; t < s->T; t++) {
        if (s->dims[t] < 1 || s->rows[t] < 1) { seterr(err, errlen, "table %d: empty table or dim", t); return -1; }
        if (s->d_off[t] + s->dims[t] > s->d_off[s->T] ||
            s->w_off[t] + (long long)s->rows[t] * s->dims[t] > s->w_off[s->T]) {
            seterr(err, errlen, "table %d: w_off/d_off inconsistent with rows and dims", t);
            return -1;
        }
    }
    if (CK(cudaSetDevice(device), "cudaSetDevice")) return -1;

    Sizes z;
    compute_sizes(s, device, 1, &z);
    size_t freeb = 0, totalb = 0;
    if (CK(cudaMemGetInfo(&freeb, &totalb), "cudaMemGetInfo")) return -1;
    size_t margin = (size_t)64 << 20;
    if (z.total + margin > freeb) {
        seterr(err, errlen, "shard needs %.2f GiB of device memory, %.2f GiB free (of %.2f GiB)", gib(z.total),
               gib(freeb), gib(totalb));
        return -1;
    }

    as_eb_gpu *g = (as_eb_gpu *)calloc(1, sizeof *g);
    if (!g) { seterr(err, errlen, "out of host memory"); return -1; }
    g->dev = device;
    g->T = s->T;
    g->B = s->B;
    g->TB = TB;
    g->n = n;
    g->sumE = sum_rows(s);
    g->wtotal = s->w_off[s->T];
    g->sumD = s->d_off[s->T];
    g->key64 = want_key64(g->sumE);
    g->end_bit = key_bits(g->sumE);
    g->maxD = 1;
    for (int t = 0; t < s->T; t++) if (s->dims[t] > g->maxD) g->maxD = s->dims[t];
    g->max_slices = (g->maxD + AS_SLICE - 1) / AS_SLICE;
    g->long_cap = long_capacity(n);
    g->temp_bytes = z.temp;
    g->flush_bytes = z.flush;

    TblDev *htbl = NULL;
    long long *hrb = NULL;
    FwdItem *hitems = NULL;
    int rc = -1;
    {
        int nsm = 0;
        if (CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute"))
            goto out;
        g->nsm = nsm > 0 ? nsm : 1;
        if (CK(cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking), "cudaStreamCreate")) goto out;
        if (CK(cudaEventCreate(&g->e0), "cudaEventCreate")) goto out;
        if (CK(cudaEventCreate(&g->e1), "cudaEventCreate")) goto out;

        if (CK(cudaMalloc((void **)&g->dW_base, z.W), "cudaMalloc(W)")) goto out;
        if (CK(cudaMalloc((void **)&g->dout_base, z.out), "cudaMalloc(out)")) goto out;
        if (CK(cudaMalloc((void **)&g->dgrad, z.grad), "cudaMalloc(grad)")) goto out;
        if (CK(cudaMalloc((void **)&g->dind, z.ind), "cudaMalloc(indices)")) goto out;
        if (CK(cudaMalloc((void **)&g->doff, z.off), "cudaMalloc(offsets)")) goto out;
        if (CK(cudaMalloc((void **)&g->dtbl, z.tbl), "cudaMalloc(tables)")) goto out;
        if (CK(cudaMalloc((void **)&g->drow_base, z.rowb), "cudaMalloc(row base)")) goto out;
        if (CK(cudaMalloc((void **)&g->ditems, z.items), "cudaMalloc(items)")) goto out;
        for (int i = 0; i < 2; i++) {
            if (CK(cudaMalloc(&g->dkeys[i], z.keys), "cudaMalloc(keys)")) goto out;
            if (CK(cudaMalloc((void **)&g->dvals[i], z.vals), "cudaMalloc(vals)")) goto out;
        }
        if (CK(cudaMalloc((void **)&g->dcnt, z.cnt), "cudaMalloc(counters)")) goto out;
        if (CK(cudaMalloc((void **)&g->dtruns, z.truns), "cudaMalloc(table runs)")) goto out;
        if (CK(cudaMalloc((void **)&g->dtask, z.task), "cudaMalloc(tasks)")) goto out;
        if (CK(cudaMalloc((void **)&g->dlong, z.lng), "cudaMalloc(long runs)")) goto out;
        if (CK(cudaMalloc(&g->dtemp, z.temp), "cudaMalloc(cub temp)")) goto out;
        if (CK(cudaMalloc((void **)&g->dflush, z.flush), "cudaMalloc(flush)")) goto out;
        if (CK(cudaMalloc((void **)&g->dsink, z.sink), "cudaMalloc(sink)")) goto out;
        g->dW = g->dW_base + AS_GUARD;
        g->dout = g->dout_base + AS_GUARD;

        /* host-side tables */
        htbl = (TblDev *)calloc((size_t)s->T, sizeof *htbl);
        hrb = (long long *)calloc((size_t)s->T + 1, sizeof *hrb);
        g->nitems = build_items(s, NULL);
        hitems = (FwdItem *)calloc((size_t)g->nitems + 1, sizeof *hitems);
        if (!htbl || !hrb || !hitems) { seterr(err, errlen, "out of host memory"); goto out; }
        build_items(s, hitems);
        long long rb = 0;
        for (int t = 0; t < s->T; t++) {
            table_params(s, t, &htbl[t]);
            htbl[t].row_base = rb;
            hrb[t] = rb;
            rb += s->rows[t];
        }
        hrb[s->T] = rb;

        /* uploads (synchronous copies from pageable memory) */
        size_t wbytes = 2 * (size_t)g->wtotal;
        if (CK(cudaMemset(g->dW_base, 0, z.W), "cudaMemset(W)")) goto out;
        {
            /* guard halves before and after W */
            uint16_t *gh = (uint16_t *)malloc(AS_GUARD * sizeof(uint16_t));
            if (!gh) { seterr(err, errlen, "out of host memory"); goto out; }
            for (int i = 0; i < AS_GUARD; i++) gh[i] = AS_GUARD_F16;
            int bad = CK(cudaMemcpy(g->dW_base, gh, AS_GUARD * 2, cudaMemcpyHostToDevice), "upload guard") ||
                      CK(cudaMemcpy(g->dW + g->wtotal, gh, AS_GUARD * 2, cudaMemcpyHostToDevice), "upload guard");
            free(gh);
            if (bad) goto out;
        }
        if (wbytes && CK(cudaMemcpy(g->dW, W, wbytes, cudaMemcpyHostToDevice), "upload W")) goto out;
        size_t outn = (size_t)g->B * g->sumD;
        if (outn && CK(cudaMemcpy(g->dgrad, grad, outn * 4, cudaMemcpyHostToDevice), "upload grad")) goto out;
        if (n && CK(cudaMemcpy(g->dind, s->indices, (size_t)n * 4, cudaMemcpyHostToDevice), "upload indices"))
            goto out;
        if (CK(cudaMemcpy(g->doff, s->offsets, 8 * ((size_t)TB + 1), cudaMemcpyHostToDevice), "upload offsets"))
            goto out;
        if (CK(cudaMemcpy(g->dtbl, htbl, sizeof(TblDev) * s->T, cudaMemcpyHostToDevice), "upload tables")) goto out;
        if (CK(cudaMemcpy(g->drow_base, hrb, 8 * ((size_t)s->T + 1), cudaMemcpyHostToDevice), "upload row base"))
            goto out;
        if (g->nitems &&
            CK(cudaMemcpy(g->ditems, hitems, sizeof(FwdItem) * g->nitems, cudaMemcpyHostToDevice), "upload items"))
            goto out;
        if (CK(cudaMemset(g->dcnt, 0, z.cnt), "cudaMemset") || CK(cudaMemset(g->dflush, 0x5a, z.flush), "cudaMemset") ||
            CK(cudaMemset(g->dsink, 0, z.sink), "cudaMemset") || CK(cudaMemset(g->dtruns, 0, z.truns), "cudaMemset") ||
            CK(cudaMemset(g->dtask, 0, z.task), "cudaMemset"))
            goto out;
        /* output: guard words everywhere; the forward must overwrite every element of [B, sumD] */
        eb_fill_f32<<<g->nsm * 4, 256, 0, g->st>>>(g->dout_base, z.out / 4, AS_GUARD_F32);
        if (CK(cudaGetLastError(), "launch fill")) goto out;
        if (CK(cudaStreamSynchronize(g->st), "fill output")) goto out;

        int smem = (int)sizeof(LongSmem);
        if (CK(cudaFuncSetAttribute(eb_long_kernel<uint32_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "cudaFuncSetAttribute") ||
            CK(cudaFuncSetAttribute(eb_long_kernel<unsigned long long>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    smem),
               "cudaFuncSetAttribute"))
            goto out;
        /* the uploads and memsets ran on the legacy stream, which does not order with the
         * non-blocking stream st: wait for all of them before any kernel uses the data */
        if (CK(cudaDeviceSynchronize(), "upload")) goto out;
        rc = 0;
    }
out:
    free(htbl);
    free(hrb);
    free(hitems);
    if (rc) { as_eb_gpu_destroy(g); return -1; }
    *gp = g;
    return 0;
}

static int finish_timed(as_eb_gpu *g, float *ms, char *err, size_t errlen)
{
    if (CK(cudaEventRecord(g->e1, g->st), "cudaEventRecord")) return -1;
    if (CK(cudaEventSynchronize(g->e1), "kernel execution")) return -1;
    float t = 0;
    if (CK(cudaEventElapsedTime(&t, g->e0, g->e1), "cudaEventElapsedTime")) return -1;
    if (ms) *ms = t;
    return 0;
}

extern "C" int as_eb_gpu_forward(as_eb_gpu *g, float *ms, char *err, size_t errlen)
{
    if (!g) { seterr(err, errlen, "as_eb_gpu_forward: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaEventRecord(g->e0, g->st), "cudaEventRecord")) return -1;
    if (g->nitems > 0) {
        long long threads = g->nitems * 32;
        unsigned blocks = (unsigned)((threads + 255) / 256);
        eb_fwd_kernel<<<blocks, 256, 0, g->st>>>(g->ditems, g->nitems, g->dtbl, (const __half *)g->dW, g->dind,
                                                 g->doff, g->dout, g->B, g->sumD);
        if (CK(cudaGetLastError(), "launch forward")) return -1;
    }
    return finish_timed(g, ms, err, errlen);
}

template <typename K>
static int backward_t(as_eb_gpu *g, float lr, char *err, size_t errlen)
{
    cudaStream_t st = g->st;
    int n = (int)g->n;
    K *k0 = (K *)g->dkeys[0], *k1 = (K *)g->dkeys[1];
    long long nchunks = (g->TB + 31) / 32;
    long long kb = (nchunks * 32 + 255) / 256;
    unsigned kblocks = (unsigned)(kb < (long long)g->nsm * 16 ? kb : (long long)g->nsm * 16);
    if (kblocks < 1) kblocks = 1;
    eb_keygen_kernel<K><<<kblocks, 256, 0, st>>>(g->doff, g->dind, g->drow_base, g->TB, (unsigned)g->B, k0,
                                                 g->dvals[0]);
    if (CK(cudaGetLastError(), "launch keygen")) return -1;

    cub::DoubleBuffer<K> kbuf(k0, k1);
    cub::DoubleBuffer<uint32_t> vbuf(g->dvals[0], g->dvals[1]);
    size_t tb = g->temp_bytes;
    if (CK(cub::DeviceRadixSort::SortPairs(g->dtemp, tb, kbuf, vbuf, n, 0, g->end_bit, st), "radix sort")) return -1;
    K *sk = kbuf.Current(), *uk = kbuf.Alternate();
    uint32_t *sv = vbuf.Current(), *starts = vbuf.Alternate();
    tb = g->temp_bytes;
    if (CK(cub::DeviceSelect::UniqueByKey(g->dtemp, tb, (const K *)sk, thrust::counting_iterator<uint32_t>(0), uk,
                                          starts, g->dcnt, n, st),
           "unique by key"))
        return -1;

    eb_prep_kernel<K><<<1, 256, 0, st>>>(uk, g->drow_base, g->dtbl, g->T, g->dcnt, 1 + g->max_slices, g->dtruns,
                                         g->dtask);
    if (CK(cudaGetLastError(), "launch prep")) return -1;

    eb_short_kernel<K><<<g->nsm * 8, 256, 0, st>>>(g->dtbl, g->T, g->dtruns, g->dtask, g->dcnt, g->dcnt, uk, starts,
                                                   sv, g->n, g->dgrad, (__half *)g->dW, (unsigned)g->B, g->sumD, lr,
                                                   g->dlong);
    if (CK(cudaGetLastError(), "launch short runs")) return -1;

    dim3 lg((unsigned)(g->nsm * 3 / g->max_slices > 0 ? g->nsm * 3 / g->max_slices : 1), (unsigned)g->max_slices);
    eb_long_kernel<K><<<lg, 256, sizeof(LongSmem), st>>>(g->dtbl, g->drow_base, g->T, g->dcnt, g->dcnt, uk, starts,
                                                         sv, g->n, g->dgrad, (__half *)g->dW, (unsigned)g->B,
                                                         g->sumD, lr, g->dlong);
    if (CK(cudaGetLastError(), "launch long runs")) return -1;
    return 0;
}

extern "C" int as_eb_gpu_backward_sgd(as_eb_gpu *g, float lr, float *ms, char *err, size_t errlen)
{
    if (!g) { seterr(err, errlen, "as_eb_gpu_backward_sgd: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaEventRecord(g->e0, g->st), "cudaEventRecord")) return -1;
    if (g->n > 0) {
        int r = g->key64 ? backward_t<unsigned long long>(g, lr, err, errlen) : backward_t<uint32_t>(g, lr, err, errlen);
        if (r) {
            cudaStreamSynchronize(g->st);
            cudaGetLastError();
            return -1;
        }
    }
    return finish_timed(g, ms, err, errlen);
}

extern "C" int as_eb_gpu_flush_cache(as_eb_gpu *g, char *err, size_t errlen)
{
    if (!g) { seterr(err, errlen, "as_eb_gpu_flush_cache: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    eb_flush_kernel<<<g->nsm * 8, 256, 0, g->st>>>((const uint4 *)g->dflush, g->flush_bytes / 16, g->dsink);
    if (CK(cudaGetLastError(), "launch flush")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "flush")) return -1;
    return 0;
}

extern "C" int as_eb_gpu_download(as_eb_gpu *g, float *out, uint16_t *W, char *err, size_t errlen)
{
    if (!g) { seterr(err, errlen, "as_eb_gpu_download: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    size_t outn = (size_t)g->B * g->sumD;
    if (out && outn && CK(cudaMemcpy(out, g->dout, outn * 4, cudaMemcpyDeviceToHost), "download out")) return -1;
    if (W && g->wtotal && CK(cudaMemcpy(W, g->dW, 2 * (size_t)g->wtotal, cudaMemcpyDeviceToHost), "download W"))
        return -1;
    return 0;
}

extern "C" int as_eb_gpu_check_guards(as_eb_gpu *g, char *err, size_t errlen)
{
    if (!g) { seterr(err, errlen, "as_eb_gpu_check_guards: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    uint32_t f[AS_GUARD];
    uint16_t h[AS_GUARD];
    size_t outn = (size_t)g->B * g->sumD;
    const float *fsrc[2] = {g->dout_base, g->dout + outn};
    for (int side = 0; side < 2; side++) {
        if (CK(cudaMemcpy(f, fsrc[side], sizeof f, cudaMemcpyDeviceToHost), "download guard")) return -1;
        for (int i = 0; i < AS_GUARD; i++)
            if (f[i] != AS_GUARD_F32) {
                seterr(err, errlen, "output guard %s the buffer overwritten at element %d (0x%08x)",
                       side ? "after" : "before", side ? i : i - AS_GUARD, f[i]);
                return -1;
            }
    }
    const uint16_t *hsrc[2] = {g->dW_base, g->dW + g->wtotal};
    for (int side = 0; side < 2; side++) {
        if (CK(cudaMemcpy(h, hsrc[side], sizeof h, cudaMemcpyDeviceToHost), "download guard")) return -1;
        for (int i = 0; i < AS_GUARD; i++)
            if (h[i] != AS_GUARD_F16) {
                seterr(err, errlen, "weight guard %s the buffer overwritten at element %d (0x%04x)",
                       side ? "after" : "before", side ? i : i - AS_GUARD, h[i]);
                return -1;
            }
    }
    return 0;
}

extern "C" int as_eb_gpu_info(as_eb_gpu *g, char *name, size_t namelen, int *sm_clock_mhz, double *copy_gbps)
{
    if (name && namelen) name[0] = 0;
    if (sm_clock_mhz) *sm_clock_mhz = 0;
    if (copy_gbps) *copy_gbps = 0;
    if (!g) return -1;
    char errbuf[256];
    char *err = errbuf;
    size_t errlen = sizeof errbuf;
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    cudaDeviceProp p;
    if (CK(cudaGetDeviceProperties(&p, g->dev), "cudaGetDeviceProperties")) return -1;
    if (name && namelen) snprintf(name, namelen, "%s", p.name);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, g->dev) != cudaSuccess) { cudaGetLastError(); khz = 0; }
    if (sm_clock_mhz) *sm_clock_mhz = khz / 1000;
    if (copy_gbps) {
        /* device-to-device copy of half the flush buffer into the other half; counted as
         * read + write bytes (like CUDA's bandwidthTest), mean of 5 after one warm-up */
        size_t half = (g->flush_bytes / 2) & ~(size_t)255;
        float total = 0;
        for (int it = 0; it < 6; it++) {
            if (CK(cudaEventRecord(g->e0, g->st), "cudaEventRecord")) return -1;
            if (CK(cudaMemcpyAsync(g->dflush + half, g->dflush, half, cudaMemcpyDeviceToDevice, g->st), "copy"))
                return -1;
            float ms = 0;
            if (finish_timed(g, &ms, err, errlen)) return -1;
            if (it > 0) total += ms;
        }
        double mean = total / 5.0;
        if (mean > 0) *copy_gbps = 2.0 * (double)half / (mean * 1e-3) / 1e9;
    }
    return 0;
}
