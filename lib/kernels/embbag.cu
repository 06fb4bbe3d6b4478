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
 *      loads), 4 grad rows in flight (a run's last 1-3 loaded together too), a grid of
 *      exactly the resident blocks, fp32 sums in ascending lookup order per column, then
 *      W = half(float(W) - lr*G) with __fmul_rn/__fsub_rn/__float2half_rn (no FMA
 *      contraction, one round-to-nearest-even). Longer runs are appended to a list
 *      (LongRun) with their work items reserved: one 64-bit atomic hands out the list slot
 *      q and the run's first item together, so item bases ascend with q; runs of more than
 *      AS_EB_CHUNK lookups also reserve nchunks*D floats of the partial-sum scratch.
 *   6. long runs, chunks (eb_chunk_kernel): a run is cut into chunks of AS_EB_CHUNK lookups
 *      (embbag.h's canonical order); a work item is (run, chunk, slice of 32*V columns)
 *      and takes one warp, lane l owning columns slice*32V + l*V .. +V-1 (V = 4/2/1 floats
 *      per load, the fewest slices the alignment allows). The warp reads 32 bag ids at a
 *      time (one per lane, coalesced), broadcasts them by shuffle, keeps U grad-row loads
 *      in flight (each a contiguous 32V-float segment of a row), then adds them in lookup
 *      order: P = the chunk's sequential sum from 0.0f, per column. No shared memory, no
 *      block barriers; warps find their item by a warp-wide search of the item bases. A
 *      run of one chunk applies SGD at once (G = P); longer runs store P to the scratch.
 *   7. long runs, combine (eb_combine_kernel): one warp per (run, slice) of each run of
 *      more than one chunk: G = P_0, G += P_1, ... left to right (U partials in flight),
 *      then SGD once, rounded as in 5.
 *   Every unique row is updated by exactly one lane group or warp: deterministic, no
 *   atomics on data (atomics only hand out list slots and scratch space, which does not
 *   affect any value), bit-exact with the CPU reference in every case.
 *
 * Guard words surround the device output and weights (as_eb_gpu_check_guards, tests). */
#include "embbag.h"
#include "ebgen.h"
#include "errbuf.h"

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

#define AS_LONG_RUN 64      /* runs longer than this go to the chunked long-run kernels */
#define AS_SLICE 32         /* lanes per long-run slice: a slice is AS_SLICE*V columns */
#define AS_LQ_SHIFT 38      /* long-run counter: list slots above bit 38, work items below */
#define AS_CHUNK_BLOCKS 3   /* resident 256-thread blocks per SM (launch bounds = grid) */
#define AS_COMBINE_BLOCKS 2
#define AS_CNT_INTS 6       /* dcnt: [0] runs, [1] unused, [2..3] u64 long-run counter
                             * (slots << AS_LQ_SHIFT | items), [4..5] u64 scratch floats */
#define AS_GUARD 1024       /* guard elements on each side of out and W */
#define AS_GUARD_F32 0x7fbadbadu
#define AS_GUARD_F16 0x7dadu  /* a NaN pattern no kernel writes */
#define AS_NBUF 18          /* device buffers of a workspace (ws_list) */

/* ---- errors ---------------------------------------------------------------------------- */


static int ck_(cudaError_t e, const char *what, char *err, size_t errlen, int line)
{
    if (e == cudaSuccess) return 0;
    as_errbuf(err, errlen, "cuda: %s: %s (embbag.cu:%d)", what, cudaGetErrorString(e), line);
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
    int lV;              /* long runs: floats per lane load (4, 2 or 1); a slice is 32*lV columns */
    int dt;              /* typed op (ebopt.h): the weight type (as_eb_dtype); w_off in 2-byte units */
    long long st_off;    /* typed op: the table's optimizer state in S (floats) */
    long long E;         /* rows (Adam: the second moments follow the first E*D floats) */
};

struct FwdItem {
    int t, b0, nb, pad;
};

/* a run of more than AS_LONG_RUN lookups (eb_short_kernel appends it) */
struct LongRun {
    unsigned long long ibase;  /* first work item of the chunk kernel */
    unsigned long long pbase;  /* first float of its partial sums in the scratch (> 1 chunk) */
    unsigned s, len;           /* sorted positions [s, s + len) */
    int t, row;                /* table, row within it */
};

/* bytes of each device buffer of a shard's workspace (what it needs, or what is allocated) */
struct Sizes {
    size_t W, out, grad, ind, off, tbl, rowb, items, keys, vals, cnt, truns, task, lng, part, temp, flush, sink;
    size_t total;
};

struct MeasSlot {
    cudaEvent_t *ev;        /* [0] before the warm-ups, [1] after them; run r: [2+3r] after
                               its flush, [3+3r] after its forward, [4+3r] after its backward */
    int nev;
    int runs;               /* timed runs of the started measurement */
    cudaEvent_t s0, s1;     /* the set-up it took over */
    int setup;              /* s0/s1 hold a set-up to read at its end */
};

struct as_eb_gpu {
    int dev;
    int nsm;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    cudaEvent_t s0, s1;     /* around a context's set-up of the shard (as_eb_gpu_ctx_shard) */
    int set_pending;        /* s0/s1 recorded, not yet taken by as_eb_gpu_measure_start */
    /* up to two started measurements (as_eb_gpu_measure_start), ended oldest first: each
       with its events and the set-up events it took over (swapped with s0/s1, so that the
       next shard's set-up and measurement can be queued behind it) */
    MeasSlot ms[2];
    int ms_head, ms_count;  /* the oldest started slot; how many are started */
    double last_setup_ms, last_flush_ms;   /* as_eb_gpu_overhead */
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
    int *dcnt;              /* [AS_CNT_INTS]: unique runs, long-run and scratch counters */
    int *dtruns;            /* [T+1] first run of each table */
    int *dtask;             /* [T+1] prefix of warp tasks */
    LongRun *dlong;         /* [long_cap] */
    long long long_cap;
    float *dpart;           /* partial sums of the chunks of runs of more than one chunk */
    void *dtemp;
    size_t temp_bytes;

    unsigned char *dflush;
    size_t flush_bytes;
    unsigned *dsink;

    size_t capb[AS_NBUF];   /* bytes allocated per workspace buffer (ws_list's order; grows, never shrinks) */
    long long grows;        /* times the workspace was (re)allocated */
    as_eb_gpu_ctx *ctx;     /* non-NULL: the handle and its buffers belong to this context */
    int short_grid[2];      /* eb_short_kernel's grid (32- and 64-bit keys), 0 until known */
    /* the typed op (as_eb_gpu_set_typed, as_eb_gpu_ctx_set_kind): the tables' types are in
       dtbl; opt.step is the step the next backward takes (Adam), then counted up */
    int typed;
    as_eb_opt opt;
    float *dS;              /* optimizer state [nstate] */
    long long nstate;
    size_t S_cap;           /* bytes allocated for dS */
    float *dpart_t;         /* chunk sums of every long run (typed backward) */
    size_t part_t_cap;
    int short_grid_t[2];
    int info_ok, mhz;       /* as_eb_gpu_info's cached answers */
    char name[256];
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
                               const TblDev *__restrict__ tbl, int T, int *cnt, int nctr,
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
    for (int i = threadIdx.x; i < nctr; i += blockDim.x) cnt[1 + i] = 0;   /* the long-run counters */
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
        if (k < e) {
            /* the last 1-3 lookups: their loads issued together (a missing one reloads the
             * first row), then added in order, only those that exist */
            const int m = (int)(e - k);
            unsigned b0 = __ldg(vals + k) - tB;
            unsigned b1 = m > 1 ? __ldg(vals + k + 1) - tB : b0;
            unsigned b2 = m > 2 ? __ldg(vals + k + 2) - tB : b0;
            float f0[V], f1[V], f2[V];
            ld_g<V>(gc + (size_t)b0 * sumD, f0);
            ld_g<V>(gc + (size_t)b1 * sumD, f1);
            ld_g<V>(gc + (size_t)b2 * sumD, f2);
#pragma unroll
            for (int v = 0; v < V; v++) {
                acc[v] += f0[v];
                if (m > 1) acc[v] += f1[v];
                if (m > 2) acc[v] += f2[v];
            }
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

/* 32*V-column slices of a table's row in the long-run kernels */
__device__ __forceinline__ int long_slices(const TblDev &tb)
{
    return (tb.D + AS_SLICE * tb.lV - 1) / (AS_SLICE * tb.lV);
}

/* eb_short_kernel's hand-off of a run (sorted positions [s, e), e - s > AS_LONG_RUN) of
 * table t: one 64-bit atomic on cnt[2..3] returns the list slot (high bits) and the first
 * work item (low bits) together, so item bases ascend with the slot; a run of more than one
 * chunk also reserves nchunks*D floats of the scratch (cnt[4..5]). The host checks that
 * the item count fits below bit AS_LQ_SHIFT, and sizes the scratch for the worst case. */
__device__ __noinline__ void long_append(int *cnt, LongRun *__restrict__ list, int t, int D, int nslices,
                                        long long row, long long s, long long e, int all)
{
    const unsigned long long len = (unsigned long long)(e - s);
    const unsigned long long nch = (len + AS_EB_CHUNK - 1) / AS_EB_CHUNK;
    const unsigned long long items = nch * (unsigned long long)nslices;
    const unsigned long long old =
        atomicAdd(reinterpret_cast<unsigned long long *>(cnt + 2), (1ULL << AS_LQ_SHIFT) | items);
    LongRun L;
    L.ibase = old & ((1ULL << AS_LQ_SHIFT) - 1);
    L.pbase = nch > 1 || all ? atomicAdd(reinterpret_cast<unsigned long long *>(cnt + 4), nch * (unsigned long long)D)
                      : 0ULL;
    L.s = (unsigned)s;
    L.len = (unsigned)len;
    L.t = t;
    L.row = (int)row;
    list[old >> AS_LQ_SHIFT] = L;
}

template <typename K>
__global__ void __launch_bounds__(256) eb_short_kernel(const TblDev *__restrict__ tbl, int T,
                                                       const int *__restrict__ truns, const int *__restrict__ task,
                                                       const int *__restrict__ cnt_ro, int *cnt,
                                                       const K *__restrict__ ukeys, const uint32_t *__restrict__ starts,
                                                       const uint32_t *__restrict__ vals, long long n,
                                                       const float *__restrict__ grad, __half *W,
                                                       unsigned Bu, int sumD, float lr,
                                                       LongRun *__restrict__ long_list)
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
            if (gl == 0)   /* out of line: the rare path must not cost the short path registers */
                long_append(cnt, long_list, t, tb.D, long_slices(tb), (long long)ukeys[r] - tb.row_base, s, e, 0);
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

/* V consecutive grad floats at p (V-aligned), zeros when !ok */
template <int V>
__device__ __forceinline__ void ld_gv(const float *p, float *f, bool ok)
{
    if constexpr (V == 4) {
        float4 x = ok ? __ldg(reinterpret_cast<const float4 *>(p)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        f[0] = x.x; f[1] = x.y; f[2] = x.z; f[3] = x.w;
    } else if constexpr (V == 2) {
        float2 x = ok ? __ldg(reinterpret_cast<const float2 *>(p)) : make_float2(0.0f, 0.0f);
        f[0] = x.x; f[1] = x.y;
    } else {
        f[0] = ok ? __ldg(p) : 0.0f;
    }
}

/* the largest q in [0, n) with list[q].ibase <= x (ibase ascending, list[0].ibase = 0 <= x),
 * found by the whole warp: each round its 32 lanes probe 32 evenly spaced slots, so a list
 * of a million runs takes 4 rounds. Called by all 32 lanes with the same arguments. */
__device__ __forceinline__ int warp_find_run(const LongRun *__restrict__ list, int n, unsigned long long x, int lane)
{
    int lo = 0, hi = n;   /* the answer lies in [lo, hi) */
    while (hi - lo > 1) {
        const int step = (hi - lo + 31) / 32;
        const int p = lo + lane * step;
        const bool ok = p < hi && list[p].ibase <= x;
        const unsigned m = __ballot_sync(0xffffffffu, ok);   /* a prefix of lanes; lane 0 probes lo */
        lo += (31 - __clz(m)) * step;
        hi = min(hi, lo + step);
    }
    return lo;
}

/* one work item: chunk `chunk` of the run, columns slice*32V + lane*V .. +V-1 of each lane.
 * The warp reads the chunk's bag ids 32 at a time (coalesced, one per lane) and broadcasts
 * them; each lane keeps U grad loads in flight (the warp's loads of one lookup are one
 * contiguous 32V-float segment of the grad row), then adds them in lookup order:
 * P = 0.0f + g_0 + g_1 + ... per column, the CPU's chunk sum. A run of one chunk is
 * updated here (G = P); otherwise P goes to the scratch for eb_combine_kernel. */
template <int V, int U>
__device__ __forceinline__ void chunk_item(const LongRun &L, const TblDev &tb, long long chunk, int slice,
                                           const uint32_t *__restrict__ vals, const float *__restrict__ grad,
                                           __half *W, float *__restrict__ part, unsigned tB, int sumD, float lr,
                                           int lane, int all)
{
    const long long p0 = (long long)L.s + chunk * AS_EB_CHUNK;
    const long long rem = (long long)L.len - chunk * AS_EB_CHUNK;
    const int cnt = rem < AS_EB_CHUNK ? (int)rem : AS_EB_CHUNK;
    const int col = (slice * AS_SLICE + lane) * V;
    const bool cv = col < tb.D;   /* D is a multiple of V: a lane's V columns are all in or all out */
    const float *gc = grad + tb.d_off + (cv ? col : 0);
    float acc[V];
#pragma unroll
    for (int v = 0; v < V; v++) acc[v] = 0.0f;
    for (int j0 = 0; j0 < cnt; j0 += 32) {
        const int m = cnt - j0 < 32 ? cnt - j0 : 32;   /* warp-uniform */
        const unsigned myb = lane < m ? __ldg(vals + p0 + j0 + lane) - tB : 0u;
        int j = 0;
        for (; j + U <= m; j += U) {
            float f[U][V];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const unsigned b = __shfl_sync(0xffffffffu, myb, j + u);
                ld_gv<V>(gc + (size_t)b * sumD, f[u], cv);
            }
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int v = 0; v < V; v++) acc[v] += f[u][v];
        }
        for (; j < m; j++) {
            const unsigned b = __shfl_sync(0xffffffffu, myb, j);
            float f[V];
            ld_gv<V>(gc + (size_t)b * sumD, f, cv);
#pragma unroll
            for (int v = 0; v < V; v++) acc[v] += f[v];
        }
    }
    if (!cv) return;
    if (L.len <= AS_EB_CHUNK && !all) {
        unsigned short *w = reinterpret_cast<unsigned short *>(W + tb.w_off + (long long)L.row * tb.D + col);
#pragma unroll
        for (int v = 0; v < V; v++) w[v] = sgd_h(w[v], lr, acc[v]);
    } else {
        float *o = part + L.pbase + chunk * tb.D + col;
#pragma unroll
        for (int v = 0; v < V; v++) o[v] = acc[v];
    }
}

/* every (run, chunk, slice) of the long-run list, one warp each, grid-stride; a run's items
 * are ibase .. ibase + nchunks*slices - 1, chunk-major. No shared memory, no barriers. */
__global__ void __launch_bounds__(256, AS_CHUNK_BLOCKS) eb_chunk_kernel(const TblDev *__restrict__ tbl, const int *__restrict__ cnt,
                                                       const LongRun *__restrict__ list,
                                                       const uint32_t *__restrict__ vals,
                                                       const float *__restrict__ grad, __half *W,
                                                       float *__restrict__ part, unsigned Bu, int sumD, float lr,
                                                       int all)
{
    const unsigned long long c = *reinterpret_cast<const unsigned long long *>(cnt + 2);
    const int nlong = (int)(c >> AS_LQ_SHIFT);
    const unsigned long long total = c & ((1ULL << AS_LQ_SHIFT) - 1);
    const unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const unsigned long long nwarps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    const int lane = threadIdx.x & 31;
    for (unsigned long long w = warp; w < total; w += nwarps) {
        const LongRun L = list[warp_find_run(list, nlong, w, lane)];
        const TblDev tb = tbl[L.t];
        const unsigned long long ns = (unsigned long long)long_slices(tb), li = w - L.ibase;
        const long long chunk = (long long)(li / ns);
        const int slice = (int)(li - (unsigned long long)chunk * ns);
        const unsigned tB = (unsigned)L.t * Bu;
        switch (tb.lV) {   /* warp-uniform */
        case 4: chunk_item<4, 8>(L, tb, chunk, slice, vals, grad, W, part, tB, sumD, lr, lane, all); break;
        case 2: chunk_item<2, 16>(L, tb, chunk, slice, vals, grad, W, part, tB, sumD, lr, lane, all); break;
        default: chunk_item<1, 16>(L, tb, chunk, slice, vals, grad, W, part, tB, sumD, lr, lane, all); break;
        }
    }
}

/* one slice of a run of more than one chunk: G = P_0, G += P_1, ... in chunk order (U
 * partials in flight), then the SGD update as in bwd_run. Here lane l owns the columns
 * slice*32V + v*32 + l (v < V), so each of its loads is a coalesced 32-float segment. */
template <int V, int U>
__device__ __forceinline__ void combine_item(const LongRun &L, const TblDev &tb, int slice,
                                             const float *__restrict__ part, __half *W, float lr, int lane)
{
    const long long D = tb.D;
    const long long nch = ((long long)L.len + AS_EB_CHUNK - 1) / AS_EB_CHUNK;
    const int c0 = slice * AS_SLICE * V + lane;
    const float *p = part + L.pbase;
    bool ok[V];
    float G[V];
#pragma unroll
    for (int v = 0; v < V; v++) {
        ok[v] = c0 + v * AS_SLICE < D;
        G[v] = ok[v] ? __ldg(p + c0 + v * AS_SLICE) : 0.0f;   /* P_0 */
    }
    long long k = 1;
    for (; k + U <= nch; k += U) {
        float f[U][V];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int v = 0; v < V; v++) f[u][v] = ok[v] ? __ldg(p + (k + u) * D + c0 + v * AS_SLICE) : 0.0f;
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int v = 0; v < V; v++) G[v] += f[u][v];
    }
    for (; k < nch; k++)
#pragma unroll
        for (int v = 0; v < V; v++) G[v] += ok[v] ? __ldg(p + k * D + c0 + v * AS_SLICE) : 0.0f;
    unsigned short *w = reinterpret_cast<unsigned short *>(W + tb.w_off + (long long)L.row * D);
#pragma unroll
    for (int v = 0; v < V; v++)
        if (ok[v]) w[c0 + v * AS_SLICE] = sgd_h(w[c0 + v * AS_SLICE], lr, G[v]);
}

/* every (run, slice) with run < the long-run count and slice < max_slices (a bound for every
 * table), one warp each; runs of one chunk and slices past a table's own count are skipped */
__global__ void __launch_bounds__(256, AS_COMBINE_BLOCKS) eb_combine_kernel(const TblDev *__restrict__ tbl, const int *__restrict__ cnt,
                                                         const LongRun *__restrict__ list,
                                                         const float *__restrict__ part, __half *W, float lr,
                                                         int max_slices)
{
    const unsigned long long c = *reinterpret_cast<const unsigned long long *>(cnt + 2);
    const long long total = (long long)(c >> AS_LQ_SHIFT) * max_slices;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    const int lane = threadIdx.x & 31;
    for (long long w = warp; w < total; w += nwarps) {
        const long long q = w / max_slices;
        const int slice = (int)(w - q * max_slices);
        const LongRun L = list[q];
        if (L.len <= AS_EB_CHUNK) continue;
        const TblDev tb = tbl[L.t];
        if (slice >= long_slices(tb)) continue;
        switch (tb.lV) {   /* warp-uniform */
        case 4: combine_item<4, 16>(L, tb, slice, part, W, lr, lane); break;
        case 2: combine_item<2, 16>(L, tb, slice, part, W, lr, lane); break;
        default: combine_item<1, 16>(L, tb, slice, part, W, lr, lane); break;
        }
    }
}

/* ---- the typed op (ebopt.h): weight types and optimizers --------------------------------------
 * The same sort, runs and chunks as the fp16 + SGD backward above; what differs is how a
 * row's G is applied. Every row is owned by one warp whose lane l holds columns l, l + 32,
 * ... ascending: the order in which ebopt.h defines row-wise Adagrad's sum of squares (lane
 * partials from 0.0f, then the xor butterfly 16, 8, 4, 2, 1), so every optimizer gets its
 * row exactly as the CPU reference does. Short runs (<= AS_LONG_RUN lookups, one chunk):
 * eb_short_typed_kernel sums G per column in lookup order and applies it (Adagrad sums the
 * squares first, then forms G again: the same sums, so the same values). Long runs: every
 * one (one chunk or more) stores its chunk sums in the scratch (eb_chunk_kernel with all =
 * 1), and eb_combine_typed_kernel forms G = P_0 + P_1 + ... left to right per column and
 * applies it. Each formula is written with __f*_rn intrinsics (no contraction), one
 * rounding per operation as ebopt.h states, and the new weight rounded once to its type. */

/* the optimizer's constants as the kernels take them (c1, c2: Adam's bias corrections of
 * this step, rounded to fp32 on the host by as_eb_opt_prepare) */
struct TOpt {
    int kind;
    float lr, eps, b1, b2, c1, c2;
};

__device__ __forceinline__ float tw_get(const unsigned short *Wt, int dt, long long e)
{
    if (dt == AS_EB_F32) return __ldg(reinterpret_cast<const float *>(Wt) + e);
    if (dt == AS_EB_BF16) return __uint_as_float((unsigned)__ldg(Wt + e) << 16);
    return h2f_bits(__ldg(Wt + e));
}

/* fp32 -> bf16, round to nearest even, NaN quieted (half.h's as_float_to_bf16) */
__device__ __forceinline__ unsigned short f2bf_rn(float v)
{
    unsigned u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

/* a weight read and written by the lane that owns it (the backward's update) */
__device__ __forceinline__ float tw_load(const unsigned short *Wt, int dt, long long e)
{
    if (dt == AS_EB_F32) return reinterpret_cast<const float *>(Wt)[e];
    if (dt == AS_EB_BF16) return __uint_as_float((unsigned)Wt[e] << 16);
    return h2f_bits(Wt[e]);
}

__device__ __forceinline__ void tw_store(unsigned short *Wt, int dt, long long e, float v)
{
    if (dt == AS_EB_F32) reinterpret_cast<float *>(Wt)[e] = v;
    else if (dt == AS_EB_BF16) Wt[e] = f2bf_rn(v);
    else Wt[e] = __half_as_ushort(__float2half_rn(v));
}

/* the forward of one work item: the warp takes its bags one after another, lane l columns
 * l, l + 32, ...; each output element is the sequential sum from 0.0f in lookup order */
__global__ void __launch_bounds__(256) eb_fwd_typed_kernel(const FwdItem *__restrict__ items, long long nitems,
                                                           const TblDev *__restrict__ tbl,
                                                           const unsigned short *__restrict__ W,
                                                           const int *__restrict__ ind,
                                                           const long long *__restrict__ off,
                                                           float *__restrict__ out, long long B, int sumD)
{
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (w >= nitems) return;
    const int lane = threadIdx.x & 31;
    const FwdItem it = items[w];
    const TblDev tb = tbl[it.t];
    const unsigned short *Wt = W + tb.w_off;
    const long long D = tb.D;
    for (int bi = 0; bi < it.nb; bi++) {
        const long long b = (long long)it.b0 + bi, gb = (long long)it.t * B + b;
        const long long s = off[gb], e = off[gb + 1];
        float *o = out + b * sumD + tb.d_off;
        for (long long j = lane; j < D; j += 32) {
            float acc = 0.0f;
            for (long long k = s; k < e; k++) acc = __fadd_rn(acc, tw_get(Wt, tb.dt, (long long)__ldg(ind + k) * D + j));
            o[j] = acc;
        }
    }
}

/* column j of a run's G: its lookups [s, e) (at most one chunk) summed from 0.0f in order */
__device__ __forceinline__ float run_col(const float *__restrict__ gcol, const uint32_t *__restrict__ vals,
                                         long long s, long long e, unsigned tB, int sumD, long long j)
{
    float acc = 0.0f;
    for (long long k = s; k < e; k++) acc = __fadd_rn(acc, __ldg(gcol + (size_t)(__ldg(vals + k) - tB) * sumD + j));
    return acc;
}

/* the element-wise updates (ebopt.h): SGD, or Adam with its moments m1[j], m2[j] */
__device__ __forceinline__ float sgd_new(float w, float lr, float G)
{
    return __fsub_rn(w, __fmul_rn(lr, G));
}

__device__ __forceinline__ float adam_new(float w, float *m1, float *m2, const TOpt &o, float G)
{
    const float a1 = __fsub_rn(1.0f, o.b1), a2 = __fsub_rn(1.0f, o.b2);
    const float m = __fadd_rn(__fmul_rn(o.b1, *m1), __fmul_rn(a1, G));
    const float v = __fadd_rn(__fmul_rn(o.b2, *m2), __fmul_rn(a2, __fmul_rn(G, G)));
    *m1 = m;
    *m2 = v;
    const float den = __fadd_rn(__fsqrt_rn(__fdiv_rn(v, o.c2)), o.eps);
    return __fsub_rn(w, __fmul_rn(o.lr, __fdiv_rn(__fdiv_rn(m, o.c1), den)));
}

/* row-wise Adagrad's step for the row whose lane partials of the sum of squares are p: the
 * butterfly, the row's state s_r += q / D (read and written by lane 0 only), and the
 * multiplier lr / (sqrt(s_r) + eps) every lane gets. All 32 lanes call it. */
__device__ __forceinline__ float adagrad_mult(float p, float *sr, const TOpt &o, int D, int lane)
{
#pragma unroll
    for (int x = 16; x >= 1; x >>= 1) p = __fadd_rn(p, __shfl_xor_sync(0xffffffffu, p, x));
    float st = 0.0f;
    if (lane == 0) {
        st = __fadd_rn(*sr, __fdiv_rn(p, (float)D));
        *sr = st;
    }
    st = __shfl_sync(0xffffffffu, st, 0);
    return __fdiv_rn(o.lr, __fadd_rn(__fsqrt_rn(st), o.eps));
}

/* the update of row `row` of table tb by a warp: col(j) gives G_j (a functor called with
 * the same j twice under Adagrad: it must give the same value) */
template <typename F>
__device__ __forceinline__ void typed_update(const TblDev &tb, long long row, unsigned short *__restrict__ W,
                                             float *__restrict__ S, const TOpt &o, int lane, F col)
{
    const long long D = tb.D, e0 = row * D;
    unsigned short *Wt = W + tb.w_off;
    if (o.kind == AS_EB_ROWWISE_ADAGRAD) {
        float p = 0.0f;
        for (long long j = lane; j < D; j += 32) {
            const float G = col(j);
            p = __fadd_rn(p, __fmul_rn(G, G));
        }
        const float m = adagrad_mult(p, S + tb.st_off + row, o, tb.D, lane);
        for (long long j = lane; j < D; j += 32)
            tw_store(Wt, tb.dt, e0 + j, __fsub_rn(tw_load(Wt, tb.dt, e0 + j), __fmul_rn(m, col(j))));
    } else if (o.kind == AS_EB_ADAM) {
        float *m1 = S + tb.st_off + e0, *m2 = S + tb.st_off + tb.E * D + e0;
        for (long long j = lane; j < D; j += 32)
            tw_store(Wt, tb.dt, e0 + j, adam_new(tw_load(Wt, tb.dt, e0 + j), m1 + j, m2 + j, o, col(j)));
    } else {
        for (long long j = lane; j < D; j += 32)
            tw_store(Wt, tb.dt, e0 + j, sgd_new(tw_load(Wt, tb.dt, e0 + j), o.lr, col(j)));
    }
}

/* one run per warp (the typed tables have bG = 32: prep gives every run a task); runs of
 * more than AS_LONG_RUN lookups go to the long-run list, each with its scratch */
template <typename K>
__global__ void __launch_bounds__(256) eb_short_typed_kernel(const TblDev *__restrict__ tbl, int T,
                                                             const int *__restrict__ truns,
                                                             const int *__restrict__ task,
                                                             const int *__restrict__ cnt_ro, int *cnt,
                                                             const K *__restrict__ ukeys,
                                                             const uint32_t *__restrict__ starts,
                                                             const uint32_t *__restrict__ vals, long long n,
                                                             const float *__restrict__ grad, unsigned short *W,
                                                             float *S, unsigned Bu, int sumD, TOpt o,
                                                             LongRun *__restrict__ long_list)
{
    const int total = task[T];
    const int nruns = cnt_ro[0];
    const int warp = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int nwarps = (int)(((long long)gridDim.x * blockDim.x) >> 5);
    const int lane = threadIdx.x & 31;
    for (int k = warp; k < total; k += nwarps) {
        const int t = last_le(task, T, k);
        const TblDev tb = tbl[t];
        const int r = truns[t] + (k - task[t]);
        if (r >= truns[t + 1]) continue;
        const long long s = starts[r];
        const long long e = r + 1 < nruns ? (long long)starts[r + 1] : n;
        const long long row = (long long)ukeys[r] - tb.row_base;
        if (e - s > AS_LONG_RUN) {
            if (lane == 0) long_append(cnt, long_list, t, tb.D, long_slices(tb), row, s, e, 1);
            continue;
        }
        const float *gcol = grad + tb.d_off;
        const unsigned tB = (unsigned)t * Bu;
        typed_update(tb, row, W, S, o, lane, [&](long long j) { return run_col(gcol, vals, s, e, tB, sumD, j); });
    }
}

/* every long run, one warp each: first G_j = P_0 + P_1 + ... per column (its chunk sums in
 * the scratch, left to right), kept in chunk 0's slot (the lane that owns column j writes
 * and later reads it); then the update reads G from there */
__global__ void __launch_bounds__(256) eb_combine_typed_kernel(const TblDev *__restrict__ tbl,
                                                               const int *__restrict__ cnt,
                                                               const LongRun *__restrict__ list,
                                                               float *part, unsigned short *W, float *S, TOpt o)
{
    const unsigned long long c = *reinterpret_cast<const unsigned long long *>(cnt + 2);
    const long long nlong = (long long)(c >> AS_LQ_SHIFT);
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    const int lane = threadIdx.x & 31;
    for (long long q = warp; q < nlong; q += nwarps) {
        const LongRun L = list[q];
        const TblDev tb = tbl[L.t];
        const long long D = tb.D, nch = ((long long)L.len + AS_EB_CHUNK - 1) / AS_EB_CHUNK;
        float *p = part + L.pbase;
        for (long long j = lane; j < D; j += 32) {
            float G = p[j];
            for (long long k = 1; k < nch; k++) G = __fadd_rn(G, p[k * D + j]);
            p[j] = G;
        }
        typed_update(tb, (long long)L.row, W, S, o, lane, [&](long long j) { return p[j]; });
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

__global__ void eb_fill_u16(unsigned short *p, size_t n, unsigned short v)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

/* ---- shard setup in a context: gather from the pool, generated weights and gradients --------
 * One descriptor per table of the shard; blockIdx.y walks the tables, the x dimension the
 * elements. Each kernel's CPU reference is in ebgen.c (as_ebg_gather, as_ebg_fill_weights,
 * as_ebg_fill_grad); both use the same ebgen.h functions, so the results are identical. */

struct GenDev {
    unsigned long long wkey, gkey;  /* ebgen.h keys of the table's weights and gradients */
    long long w_off, w_end, nel;    /* weights [w_off, w_off + nel), zero padding up to w_end */
    long long soff, sind;           /* the table's offsets / indices in the source (pool) buffers */
    long long lookups, dst;         /* its lookups and where they go in the shard's indices */
    int D, d_off;
    int dt;                         /* the typed op: the weight type (w_off in 2-byte units) */
};

/* shard offsets [T*B+1] and indices from the source buffers (as_ebg_gather) */
__global__ void eb_gather_kernel(long long *__restrict__ off, int *__restrict__ ind,
                                 const long long *__restrict__ poff, const int *__restrict__ pind,
                                 const GenDev *__restrict__ gd, int T, long long B)
{
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    for (int t = blockIdx.y; t < T; t += gridDim.y) {
        const GenDev g = gd[t];
        const long long *so = poff + g.soff;
        const int *si = pind + g.sind;
        long long *o = off + (long long)t * B;
        for (long long i = i0; i < B; i += step) o[i] = g.dst + so[i];
        int *d = ind + g.dst;
        for (long long i = i0; i < g.lookups; i += step) d[i] = si[i];
        if (t == T - 1 && i0 == 0) off[(long long)T * B] = g.dst + g.lookups;
    }
}

/* W (as_ebg_fill_weights): 4 elements per thread from one 64-bit hash; w_off and w_end are
 * multiples of AS_EBG_W_ALIGN, so every group of 4 lies in one table and is 8-byte aligned */
__global__ void eb_gen_weights_kernel(unsigned short *__restrict__ W, const GenDev *__restrict__ gd, int T)
{
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    for (int t = blockIdx.y; t < T; t += gridDim.y) {
        const GenDev g = gd[t];
        const long long ngroups = (g.w_end - g.w_off) / 4;
        unsigned short *Wt = W + g.w_off;
        for (long long q = i0; q < ngroups; q += step) {
            const long long e = 4 * q;
            const uint64_t h = as_ebg_bits(g.wkey, (uint64_t)q);
            unsigned v[4];
#pragma unroll
            for (int k = 0; k < 4; k++)
                v[k] = e + k < g.nel ? as_ebg_half((uint32_t)(h >> (16 * k)) & 0xffffu) : 0u;
            *reinterpret_cast<uint2 *>(Wt + e) = make_uint2(v[0] | (v[1] << 16), v[2] | (v[3] << 16));
        }
    }
}

/* W of a typed shard: the same fp16 values (4 per 64-bit hash), stored in each table's type
 * (fp32: widened; bf16: rounded), as as-bench's CPU set-up writes them (bench.c) */
__global__ void eb_gen_weights_typed_kernel(unsigned short *__restrict__ W, const GenDev *__restrict__ gd, int T)
{
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    for (int t = blockIdx.y; t < T; t += gridDim.y) {
        const GenDev g = gd[t];
        const long long ngroups = (g.nel + 3) / 4;
        unsigned short *Wt = W + g.w_off;
        for (long long q = i0; q < ngroups; q += step) {
            const uint64_t h = as_ebg_bits(g.wkey, (uint64_t)q);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const long long e = 4 * q + k;
                if (e >= g.nel) break;
                const unsigned short v = (unsigned short)as_ebg_half((uint32_t)(h >> (16 * k)) & 0xffffu);
                if (g.dt == AS_EB_F16) Wt[e] = v;
                else tw_store(Wt, g.dt, e, h2f_bits(v));
            }
        }
    }
}

/* grad [B, sumD] (as_ebg_fill_grad): element e = b*D + j of table t goes to column d_off + j */
__global__ void eb_gen_grad_kernel(float *__restrict__ grad, const GenDev *__restrict__ gd, int T, long long B,
                                   int sumD)
{
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    for (int t = blockIdx.y; t < T; t += gridDim.y) {
        const GenDev g = gd[t];
        const long long n = B * g.D;
        for (long long e = i0; e < n; e += step) {
            long long b, j;
            if (n <= 0xffffffffLL) { b = (unsigned)e / (unsigned)g.D; j = (unsigned)e - (unsigned)b * (unsigned)g.D; }
            else { b = e / g.D; j = e - b * g.D; }
            grad[b * sumD + g.d_off + j] = as_ebg_grad(g.gkey, (uint64_t)e);
        }
    }
}

/* ---- host helpers ---------------------------------------------------------------------------- */

static size_t rup(size_t x) { return (x + 255) & ~(size_t)255; }

static int next_pow2_le32(int x)
{
    int g = 1;
    while (g < x && g < 32) g <<= 1;
    return g;
}

/* long runs: the smallest V in {1, 2, 4} that gives the fewest 32*V-column slices, among
 * those the grad's alignment allows (V floats per load: D, sumD and d_off multiples of V;
 * the weights are updated one half at a time, so their offset does not matter) */
static int long_vec(int D, int sumD, int dof)
{
    int V = 1, best = (D + 31) / 32;
    if (D % 2 == 0 && sumD % 2 == 0 && dof % 2 == 0 && (D + 63) / 64 < best) { V = 2; best = (D + 63) / 64; }
    if (D % 4 == 0 && sumD % 4 == 0 && dof % 4 == 0 && (D + 127) / 128 < best) V = 4;
    return V;
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
    tb->lV = long_vec(D, sumD, dof);
}

/* forward work items of table t (bag offsets off[0..B], gpw lane groups per warp): each
 * covers >= one bag per lane group and about gpw*64 lookups, at most 8 bags per group.
 * Returns the count; fills items when non-NULL. */
static long long build_items_table(const int64_t *off, long long B, int gpw, int t, FwdItem *items)
{
    long long cnt = 0, b = 0;
    while (b < B) {
        long long b0 = b, nb = 0, look = 0;
        while (b < B && (nb < gpw || (nb < 8LL * gpw && look < 64LL * gpw))) {
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
    return cnt;
}

/* the work items of every table of the shard. Returns the count; fills items when non-NULL. */
static long long build_items(const as_eb_shard *s, FwdItem *items)
{
    long long cnt = 0;
    for (int t = 0; t < s->T; t++) {
        TblDev tb;
        table_params(s, t, &tb);
        cnt += build_items_table(s->offsets + (int64_t)t * s->B, s->B, 32 / tb.fG, t, items ? items + cnt : NULL);
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

/* 64-bit keys when the shard has more than 2^32 rows; AS_EB_FORCE_KEY64=1 forces them
 * (tests use it to exercise that path on small shards) */
static int want_key64(long long sumE)
{
    const char *f = getenv("AS_EB_FORCE_KEY64");
    return sumE > 4294967296LL || (f && f[0] == '1');
}

/* what the workspace size of a shard depends on */
struct ShardDims {
    int T, sumD, maxD;
    long long B, n, sumE, wtotal, nitems;
};

static int sizes_for(const ShardDims *d, int dev, int have_dev, Sizes *z)
{
    long long TB = (long long)d->T * d->B;
    long long n = d->n;
    long long sumE = d->sumE;
    int key64 = want_key64(sumE);
    size_t ks = key64 ? 8 : 4;
    int sumD = d->sumD;
    int maxD = d->maxD;
    memset(z, 0, sizeof *z);
    z->W = rup(2 * ((size_t)d->wtotal + 2 * AS_GUARD));
    z->out = rup(4 * ((size_t)d->B * sumD + 2 * AS_GUARD));
    z->grad = rup(4 * ((size_t)d->B * sumD + 1));
    z->ind = rup(4 * ((size_t)n + 1));
    z->off = rup(8 * ((size_t)TB + 1));
    z->tbl = rup(sizeof(TblDev) * (size_t)d->T);
    z->rowb = rup(8 * ((size_t)d->T + 1));
    z->items = rup(sizeof(FwdItem) * (size_t)(d->nitems + 1));
    z->keys = rup(ks * ((size_t)n + 1));
    z->vals = rup(4 * ((size_t)n + 1));
    z->cnt = rup(4 * (size_t)AS_CNT_INTS);
    z->truns = rup(4 * ((size_t)d->T + 1));
    z->task = rup(4 * ((size_t)d->T + 1));
    z->lng = rup(sizeof(LongRun) * (size_t)long_capacity(n));
    /* the chunk sums of runs of more than one chunk: a table with n_t lookups has fewer than
     * 2*n_t/AS_EB_CHUNK such chunks (each run of len > C lookups has ceil(len/C) < 2*len/C),
     * each of D_t <= maxD floats */
    z->part = rup(4 * ((size_t)(2 * n / AS_EB_CHUNK + 1) * (size_t)maxD));
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
               2 * z->vals + z->cnt + z->truns + z->task + z->lng + z->part + z->temp + z->flush + z->sink;
    return 0;
}

/* what the workspace size of shard s depends on, from its layout */
static void dims_of(const as_eb_shard *s, ShardDims *d)
{
    d->T = s->T;
    d->B = s->B;
    d->n = s->offsets[(long long)s->T * s->B];
    d->sumE = sum_rows(s);
    d->wtotal = s->w_off[s->T];
    d->sumD = s->d_off[s->T];
    d->maxD = 1;
    for (int t = 0; t < s->T; t++) if (s->dims[t] > d->maxD) d->maxD = s->dims[t];
    d->nitems = build_items(s, NULL);
}

static int compute_sizes(const as_eb_shard *s, int dev, int have_dev, Sizes *z)
{
    ShardDims d;
    dims_of(s, &d);
    return sizes_for(&d, dev, have_dev, z);
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

/* ---- the workspace ------------------------------------------------------------------------------ */

/* the workspace's device buffers in one list (the keys and values twice: double buffers) */
static void ws_list(as_eb_gpu *g, const Sizes *z, void ***p, size_t *need)
{
    void **pp[AS_NBUF] = {(void **)&g->dW_base, (void **)&g->dout_base, (void **)&g->dgrad, (void **)&g->dind,
                          (void **)&g->doff, (void **)&g->dtbl, (void **)&g->drow_base, (void **)&g->ditems,
                          &g->dkeys[0], &g->dkeys[1], (void **)&g->dvals[0], (void **)&g->dvals[1],
                          (void **)&g->dcnt, (void **)&g->dtruns, (void **)&g->dtask, (void **)&g->dlong,
                          (void **)&g->dpart, &g->dtemp};
    for (int i = 0; i < AS_NBUF; i++) p[i] = pp[i];
    if (!z) return;
    size_t nn[AS_NBUF] = {z->W, z->out, z->grad, z->ind, z->off, z->tbl, z->rowb, z->items, z->keys, z->keys,
                          z->vals, z->vals, z->cnt, z->truns, z->task, z->lng, z->part, z->temp};
    for (int i = 0; i < AS_NBUF; i++) need[i] = nn[i];
}

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* bytes of device memory the handle's workspace holds (flush buffer included) */
static size_t ws_bytes(const as_eb_gpu *g)
{
    size_t b = g->flush_bytes + (g->dsink ? 256 : 0);
    for (int i = 0; i < AS_NBUF; i++) b += g->capb[i];
    return b;
}

/* make every workspace buffer at least as large as z says. A buffer that grows is freed and
 * allocated anew (its contents are lost), with 25 % headroom when `headroom` is set so that
 * slowly growing shards do not reallocate every time. 0 ok; 1 it does not fit in the free
 * device memory (err says so); -1 another CUDA error */
static int ws_reserve(as_eb_gpu *g, const Sizes *z, int headroom, char *err, size_t errlen)
{
    void **p[AS_NBUF];
    size_t need[AS_NBUF], want[AS_NBUF];
    ws_list(g, z, p, need);
    size_t add = 0, exact = 0, release = 0;
    for (int i = 0; i < AS_NBUF; i++) {
        want[i] = 0;
        if (need[i] <= g->capb[i]) continue;
        want[i] = headroom ? rup(need[i] + need[i] / 4) : need[i];
        add += want[i];
        exact += need[i];
        release += g->capb[i];
    }
    if (!add) return 0;
    size_t freeb = 0, totalb = 0;
    if (CK(cudaMemGetInfo(&freeb, &totalb), "cudaMemGetInfo")) return -1;
    size_t margin = (size_t)64 << 20;
    size_t avail = freeb + release > margin ? freeb + release - margin : 0;
    if (exact > avail) {
        as_errbuf(err, errlen, "shard needs %.2f GiB of device memory, %.2f GiB free (of %.2f GiB)", gib(z->total),
               gib(freeb + release), gib(totalb));
        return 1;
    }
    if (add > avail)
        for (int i = 0; i < AS_NBUF; i++) if (want[i]) want[i] = need[i];
    /* the old buffers may still be in use by queued work */
    if (g->st && CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    for (int i = 0; i < AS_NBUF; i++) {
        if (!want[i]) continue;
        if (*p[i]) cudaFree(*p[i]);
        *p[i] = NULL;
        g->capb[i] = 0;
    }
    g->grows++;
    for (int i = 0; i < AS_NBUF; i++) {
        if (!want[i]) continue;
        cudaError_t e = cudaMalloc(p[i], want[i]);
        if (e == cudaErrorMemoryAllocation && want[i] > need[i]) {
            cudaGetLastError();
            want[i] = need[i];
            e = cudaMalloc(p[i], want[i]);
        }
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            *p[i] = NULL;
            as_errbuf(err, errlen, "shard needs %.2f GiB of device memory: cudaMalloc of %.2f GiB failed", gib(z->total),
                   gib(want[i]));
            return 1;
        }
        if (CK(e, "cudaMalloc(workspace)")) { *p[i] = NULL; return -1; }
        g->capb[i] = want[i];
    }
    return 0;
}

/* what a handle needs before its first shard: stream, events, SM count, the flush buffer */
static int g_init(as_eb_gpu *g, int device, char *err, size_t errlen)
{
    g->dev = device;
    int nsm = 0;
    if (CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute")) return -1;
    g->nsm = nsm > 0 ? nsm : 1;
    if (CK(cudaStreamCreateWithFlags(&g->st, cudaStreamNonBlocking), "cudaStreamCreate")) return -1;
    if (CK(cudaEventCreate(&g->e0), "cudaEventCreate")) return -1;
    if (CK(cudaEventCreate(&g->e1), "cudaEventCreate")) return -1;
    if (CK(cudaEventCreate(&g->s0), "cudaEventCreate")) return -1;
    if (CK(cudaEventCreate(&g->s1), "cudaEventCreate")) return -1;
    for (int i = 0; i < 2; i++)
        if (CK(cudaEventCreate(&g->ms[i].s0), "cudaEventCreate") || CK(cudaEventCreate(&g->ms[i].s1), "cudaEventCreate"))
            return -1;
    size_t fb = 0;
    flush_size(device, &fb);
    if (CK(cudaMalloc((void **)&g->dflush, fb), "cudaMalloc(flush)")) return -1;
    g->flush_bytes = fb;
    if (CK(cudaMalloc((void **)&g->dsink, 256), "cudaMalloc(sink)")) return -1;
    if (CK(cudaMemsetAsync(g->dflush, 0x5a, fb, g->st), "cudaMemset") ||
        CK(cudaMemsetAsync(g->dsink, 0, 256, g->st), "cudaMemset"))
        return -1;
    return 0;
}

/* the handle's per-shard fields for a shard of these dimensions in a workspace sized by z */
static void g_set_dims(as_eb_gpu *g, const ShardDims *d, const Sizes *z)
{
    g->T = d->T;
    g->B = d->B;
    g->TB = (long long)d->T * d->B;
    g->n = d->n;
    g->sumE = d->sumE;
    g->wtotal = d->wtotal;
    g->sumD = d->sumD;
    g->key64 = want_key64(d->sumE);
    g->end_bit = key_bits(d->sumE);
    g->maxD = d->maxD;
    g->max_slices = (d->maxD + AS_SLICE - 1) / AS_SLICE;
    g->long_cap = long_capacity(d->n);
    g->temp_bytes = z->temp;
    g->nitems = d->nitems;
    g->dW = g->dW_base + AS_GUARD;
    g->dout = g->dout_base + AS_GUARD;
}

static void typed_free(as_eb_gpu *g);

/* frees what g_init and ws_reserve allocated (not the handle itself) */
static void ws_free(as_eb_gpu *g)
{
    cudaSetDevice(g->dev);
    if (g->st) cudaStreamSynchronize(g->st);
    void **p[AS_NBUF];
    ws_list(g, NULL, p, NULL);
    for (int i = 0; i < AS_NBUF; i++) {
        if (*p[i]) cudaFree(*p[i]);
        *p[i] = NULL;
        g->capb[i] = 0;
    }
    typed_free(g);
    if (g->dflush) cudaFree(g->dflush);
    if (g->dsink) cudaFree(g->dsink);
    g->dflush = NULL;
    g->dsink = NULL;
    for (int m = 0; m < 2; m++) {
        MeasSlot *q = &g->ms[m];
        for (int i = 0; i < q->nev; i++) cudaEventDestroy(q->ev[i]);
        free(q->ev);
        if (q->s0) cudaEventDestroy(q->s0);
        if (q->s1) cudaEventDestroy(q->s1);
        memset(q, 0, sizeof *q);
    }
    g->ms_head = g->ms_count = 0;
    if (g->e0) cudaEventDestroy(g->e0);
    if (g->e1) cudaEventDestroy(g->e1);
    if (g->s0) cudaEventDestroy(g->s0);
    if (g->s1) cudaEventDestroy(g->s1);
    g->s0 = g->s1 = NULL;
    g->set_pending = 0;
    if (g->st) cudaStreamDestroy(g->st);
    g->e0 = g->e1 = NULL;
    g->st = NULL;
    cudaGetLastError();
}

extern "C" void as_eb_gpu_destroy(as_eb_gpu *g)
{
    if (!g || g->ctx) return;   /* a context's handle goes with the context */
    ws_free(g);
    free(g);
}

/* 0 when CUDA device `device` exists; else -1 with err (no device at all, or that number
 * out of range) and the sticky error cleared */
static int check_device(int device, char *err, size_t errlen)
{
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev <= 0) {
        as_errbuf(err, errlen, "no CUDA device (%s)", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        cudaGetLastError();
        return -1;
    }
    if (device < 0 || device >= ndev) {
        as_errbuf(err, errlen, "CUDA device %d does not exist (%d present)", device, ndev);
        return -1;
    }
    return 0;
}

/* the limits of this implementation (32-bit bag ids, positions and CUB item counts) and the
 * weight layout the kernels rely on */
static int create_check(const as_eb_shard *s, char *err, size_t errlen)
{
    long long TB = (long long)s->T * s->B;
    long long n = s->offsets[TB];
    if (s->B > INT_MAX || TB >= 4294967295LL || n >= (long long)INT_MAX) {
        as_errbuf(err, errlen, "shard too large for the GPU path (T*B=%lld, lookups=%lld; limits 2^32-1 and 2^31-1)",
               TB, n);
        return -1;
    }
    /* as_eb_validate has checked embbag.h's layout rule: every table's weights lie within
     * [0, w_off[T]) and no two tables overlap; padding around them is uploaded with W, never
     * touched by a kernel and downloaded unchanged. Re-checked here because the kernels index
     * W with these offsets unchecked. */
    for (int t = 0; t < s->T; t++) {
        if (s->dims[t] < 1 || s->rows[t] < 1) { as_errbuf(err, errlen, "table %d: empty table or dim", t); return -1; }
        if (s->d_off[t] + s->dims[t] > s->d_off[s->T] || s->w_off[t] < 0 ||
            s->w_off[t] + (long long)s->rows[t] * s->dims[t] > s->w_off[s->T]) {
            as_errbuf(err, errlen, "table %d: w_off/d_off inconsistent with rows and dims", t);
            return -1;
        }
    }
    return 0;
}

/* the workspace's sizes (z), and whether they fit in the device's free memory */
static int create_fits(const as_eb_shard *s, int device, Sizes *z, char *err, size_t errlen)
{
    compute_sizes(s, device, 1, z);
    size_t freeb = 0, totalb = 0;
    if (CK(cudaMemGetInfo(&freeb, &totalb), "cudaMemGetInfo")) return -1;
    size_t margin = (size_t)64 << 20;
    if (z->total + margin > freeb) {
        as_errbuf(err, errlen, "shard needs %.2f GiB of device memory, %.2f GiB free (of %.2f GiB)", gib(z->total),
               gib(freeb), gib(totalb));
        return -1;
    }
    return 0;
}

/* guard halves before and after W (synchronous copies) */
static int upload_w_guards(as_eb_gpu *g, char *err, size_t errlen)
{
    uint16_t *gh = (uint16_t *)malloc(AS_GUARD * sizeof(uint16_t));
    if (!gh) { as_errbuf(err, errlen, "out of host memory"); return -1; }
    for (int i = 0; i < AS_GUARD; i++) gh[i] = AS_GUARD_F16;
    int bad = CK(cudaMemcpy(g->dW_base, gh, AS_GUARD * 2, cudaMemcpyHostToDevice), "upload guard") ||
              CK(cudaMemcpy(g->dW + g->wtotal, gh, AS_GUARD * 2, cudaMemcpyHostToDevice), "upload guard");
    free(gh);
    return bad ? -1 : 0;
}

/* the caller's shard, weights and gradients and the host-side tables onto the device,
 * zeroed counters and guard words; returns when all of it has arrived */
static int create_upload(as_eb_gpu *g, const as_eb_shard *s, const uint16_t *W, const float *grad, const Sizes *z,
                         const TblDev *htbl, const long long *hrb, const FwdItem *hitems, char *err, size_t errlen)
{
    long long TB = (long long)s->T * s->B;
    long long n = s->offsets[TB];
    /* the flush buffer's fill ran on st, which the legacy-stream copies below do not
     * order with */
    if (CK(cudaStreamSynchronize(g->st), "fill flush buffer")) return -1;
    /* uploads (synchronous copies from pageable memory) */
    size_t wbytes = 2 * (size_t)g->wtotal;
    if (CK(cudaMemset(g->dW_base, 0, z->W), "cudaMemset(W)")) return -1;
    if (upload_w_guards(g, err, errlen)) return -1;
    if (wbytes && CK(cudaMemcpy(g->dW, W, wbytes, cudaMemcpyHostToDevice), "upload W")) return -1;
    size_t outn = (size_t)g->B * g->sumD;
    if (outn && CK(cudaMemcpy(g->dgrad, grad, outn * 4, cudaMemcpyHostToDevice), "upload grad")) return -1;
    if (n && CK(cudaMemcpy(g->dind, s->indices, (size_t)n * 4, cudaMemcpyHostToDevice), "upload indices"))
        return -1;
    if (CK(cudaMemcpy(g->doff, s->offsets, 8 * ((size_t)TB + 1), cudaMemcpyHostToDevice), "upload offsets"))
        return -1;
    if (CK(cudaMemcpy(g->dtbl, htbl, sizeof(TblDev) * s->T, cudaMemcpyHostToDevice), "upload tables")) return -1;
    if (CK(cudaMemcpy(g->drow_base, hrb, 8 * ((size_t)s->T + 1), cudaMemcpyHostToDevice), "upload row base"))
        return -1;
    if (g->nitems &&
        CK(cudaMemcpy(g->ditems, hitems, sizeof(FwdItem) * g->nitems, cudaMemcpyHostToDevice), "upload items"))
        return -1;
    if (CK(cudaMemset(g->dcnt, 0, z->cnt), "cudaMemset") || CK(cudaMemset(g->dtruns, 0, z->truns), "cudaMemset") ||
        CK(cudaMemset(g->dtask, 0, z->task), "cudaMemset"))
        return -1;
    /* output: guard words everywhere; the forward must overwrite every element of [B, sumD] */
    eb_fill_f32<<<g->nsm * 4, 256, 0, g->st>>>(g->dout_base, z->out / 4, AS_GUARD_F32);
    if (CK(cudaGetLastError(), "launch fill")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "fill output")) return -1;
    /* the uploads and memsets ran on the legacy stream, which does not order with the
     * non-blocking stream st: wait for all of them before any kernel uses the data */
    if (CK(cudaDeviceSynchronize(), "upload")) return -1;
    return 0;
}

extern "C" int as_eb_gpu_create(as_eb_gpu **gp, const as_eb_shard *s, const uint16_t *W, const float *grad,
                                int device, char *err, size_t errlen)
{
    if (!gp) { as_errbuf(err, errlen, "as_eb_gpu_create: no output pointer"); return -1; }
    *gp = NULL;
    if (!s || !W || !grad) { as_errbuf(err, errlen, "as_eb_gpu_create: null shard, weights or grad"); return -1; }
    if (check_device(device, err, errlen)) return -1;
    if (as_eb_validate(s, err, errlen) != 0) return -1;
    if (create_check(s, err, errlen)) return -1;
    if (CK(cudaSetDevice(device), "cudaSetDevice")) return -1;

    Sizes z;
    if (create_fits(s, device, &z, err, errlen)) return -1;

    as_eb_gpu *g = (as_eb_gpu *)calloc(1, sizeof *g);
    if (!g) { as_errbuf(err, errlen, "out of host memory"); return -1; }
    ShardDims d;
    dims_of(s, &d);

    TblDev *htbl = NULL;
    long long *hrb = NULL;
    FwdItem *hitems = NULL;
    int rc = -1;
    {
        if (g_init(g, device, err, errlen)) goto out;
        if (ws_reserve(g, &z, 0, err, errlen)) goto out;
        g_set_dims(g, &d, &z);

        /* host-side tables */
        htbl = (TblDev *)calloc((size_t)s->T, sizeof *htbl);
        hrb = (long long *)calloc((size_t)s->T + 1, sizeof *hrb);
        hitems = (FwdItem *)calloc((size_t)g->nitems + 1, sizeof *hitems);
        if (!htbl || !hrb || !hitems) { as_errbuf(err, errlen, "out of host memory"); goto out; }
        build_items(s, hitems);
        long long rb = 0;
        for (int t = 0; t < s->T; t++) {
            table_params(s, t, &htbl[t]);
            htbl[t].row_base = rb;
            hrb[t] = rb;
            rb += s->rows[t];
        }
        hrb[s->T] = rb;
        if (create_upload(g, s, W, grad, &z, htbl, hrb, hitems, err, errlen)) goto out;
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

/* ---- the typed op's set-up (ebopt.h) ------------------------------------------------------------- */

/* floats of the typed backward's scratch: the chunk sums of every long run. Runs of more
 * than one chunk have fewer than 2n/AS_EB_CHUNK chunks in all (as z->part), runs of one
 * chunk longer than AS_LONG_RUN number at most n/(AS_LONG_RUN+1); each chunk D <= maxD */
static size_t typed_part_floats(long long n, int maxD)
{
    return ((size_t)(2 * n / AS_EB_CHUNK) + (size_t)(n / (AS_LONG_RUN + 1)) + 1) * (size_t)maxD;
}

/* table t's device parameters for the typed kernels: as table_params, with its type, state
 * offset and rows, and one run per warp in the backward (bG = 32: prep's tasks) */
static void typed_params(const as_eb_shard *s, int t, const uint8_t *dtype, const int64_t *st_off, TblDev *tb)
{
    table_params(s, t, tb);
    tb->bV = 1;
    tb->bG = 32;
    tb->dt = dtype ? dtype[t] : AS_EB_F16;
    tb->st_off = st_off ? st_off[t] : 0;
    tb->E = s->rows[t];
}

/* the state [nstate] and the scratch for n lookups of dims <= maxD, grown when too small
 * (contents lost); 0, 1 (does not fit: err says so) or -1 */
static int typed_reserve(as_eb_gpu *g, long long nstate, long long n, int maxD, char *err, size_t errlen)
{
    const size_t sb = rup(4 * ((size_t)nstate + 1)), pb = rup(4 * typed_part_floats(n, maxD));
    const size_t add = (sb > g->S_cap ? sb : 0) + (pb > g->part_t_cap ? pb : 0);
    if (!add) return 0;
    if (g->st && CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    size_t freeb = 0, totalb = 0;
    if (CK(cudaMemGetInfo(&freeb, &totalb), "cudaMemGetInfo")) return -1;
    const size_t release = (sb > g->S_cap ? g->S_cap : 0) + (pb > g->part_t_cap ? g->part_t_cap : 0);
    const size_t margin = (size_t)64 << 20;
    if (add + margin > freeb + release) {
        as_errbuf(err, errlen, "the optimizer state and scratch need %.2f GiB of device memory, %.2f GiB free (of %.2f GiB)",
                  gib(add), gib(freeb + release), gib(totalb));
        return 1;
    }
    if (sb > g->S_cap) {
        if (g->dS) cudaFree(g->dS);
        g->dS = NULL;
        g->S_cap = 0;
        if (CK(cudaMalloc((void **)&g->dS, sb), "cudaMalloc(optimizer state)")) { g->dS = NULL; return -1; }
        g->S_cap = sb;
    }
    if (pb > g->part_t_cap) {
        if (g->dpart_t) cudaFree(g->dpart_t);
        g->dpart_t = NULL;
        g->part_t_cap = 0;
        if (CK(cudaMalloc((void **)&g->dpart_t, pb), "cudaMalloc(typed scratch)")) { g->dpart_t = NULL; return -1; }
        g->part_t_cap = pb;
    }
    return 0;
}

static void typed_free(as_eb_gpu *g)
{
    if (g->dS) cudaFree(g->dS);
    if (g->dpart_t) cudaFree(g->dpart_t);
    g->dS = NULL;
    g->dpart_t = NULL;
    g->S_cap = g->part_t_cap = 0;
    g->typed = 0;
    g->nstate = 0;
}

/* what keeps the typed kernels inside their buffers (the caller has validated the shard's
 * typed layout, ebopt.h's as_eb_validate_typed): known types, every table's weights in
 * their type inside W (a fp32 table at an even unit), its state inside the state buffer */
static int typed_check(const as_eb_shard *s, const uint8_t *dtype, as_eb_optim kind, const int64_t *st_off, char *err,
                       size_t errlen)
{
    if (kind < 0 || kind >= AS_EB_NOPTIM) { as_errbuf(err, errlen, "unknown optimizer %d", (int)kind); return -1; }
    for (int t = 0; t < s->T; t++) {
        const int d = dtype ? dtype[t] : AS_EB_F16;
        if (d >= AS_EB_NDTYPE) { as_errbuf(err, errlen, "table %d: unknown weight type %d", t, d); return -1; }
        const long long units = (long long)s->rows[t] * s->dims[t] * as_eb_dtype_units((as_eb_dtype)d);
        if (d == AS_EB_F32 && (s->w_off[t] & 1)) {
            as_errbuf(err, errlen, "table %d: fp32 weights at unit %lld, not 4-byte aligned", t, (long long)s->w_off[t]);
            return -1;
        }
        if (s->w_off[t] < 0 || s->w_off[t] + units > s->w_off[s->T]) {
            as_errbuf(err, errlen, "table %d: its %s weights (%lld units from %lld) pass the end of W (%lld units)", t,
                      as_eb_dtype_name((as_eb_dtype)d), units, (long long)s->w_off[t], (long long)s->w_off[s->T]);
            return -1;
        }
        const long long need = as_eb_opt_state(kind, s->rows[t], s->dims[t]);
        if (need && (!st_off || st_off[t] < 0 || st_off[t] + need > st_off[s->T])) {
            as_errbuf(err, errlen, "table %d: its %s state lies outside the state buffer", t, as_eb_optim_name(kind));
            return -1;
        }
    }
    return 0;
}

extern "C" int as_eb_gpu_set_typed(as_eb_gpu *g, const as_eb_shard *s, const uint8_t *dtype, const as_eb_opt *o,
                                   const int64_t *st_off, const float *S, char *err, size_t errlen)
{
    if (!g || !s || !o) { as_errbuf(err, errlen, "as_eb_gpu_set_typed: null handle, shard or optimizer"); return -1; }
    if (s->T != g->T || s->B != g->B || s->w_off[s->T] != g->wtotal || s->offsets[(long long)s->T * s->B] != g->n) {
        as_errbuf(err, errlen, "as_eb_gpu_set_typed: not the shard the handle was created with");
        return -1;
    }
    if (typed_check(s, dtype, o->kind, st_off, err, errlen)) return -1;
    as_eb_opt chk = *o;
    if (as_eb_opt_prepare(&chk, err, errlen)) return -1;
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    const long long nstate = st_off ? st_off[s->T] : 0;
    if (typed_reserve(g, nstate, g->n, g->maxD, err, errlen)) return -1;
    TblDev *htbl = (TblDev *)calloc((size_t)s->T, sizeof *htbl);
    if (!htbl) { as_errbuf(err, errlen, "out of host memory"); return -1; }
    long long rb = 0;
    for (int t = 0; t < s->T; t++) {
        typed_params(s, t, dtype, st_off, &htbl[t]);
        htbl[t].row_base = rb;
        rb += s->rows[t];
    }
    int bad = CK(cudaStreamSynchronize(g->st), "synchronize") ||
              CK(cudaMemcpy(g->dtbl, htbl, sizeof(TblDev) * s->T, cudaMemcpyHostToDevice), "upload tables");
    free(htbl);
    if (bad) return -1;
    if (nstate > 0) {
        if (S) bad = CK(cudaMemcpy(g->dS, S, 4 * (size_t)nstate, cudaMemcpyHostToDevice), "upload optimizer state");
        else bad = CK(cudaMemset(g->dS, 0, 4 * (size_t)nstate), "cudaMemset(optimizer state)");
        if (bad) return -1;
    }
    if (CK(cudaDeviceSynchronize(), "upload")) return -1;
    g->typed = 1;
    g->opt = *o;
    g->nstate = nstate;
    return 0;
}

extern "C" int as_eb_gpu_download_state(as_eb_gpu *g, float *S, char *err, size_t errlen)
{
    if (!g || !S) { as_errbuf(err, errlen, "as_eb_gpu_download_state: null handle or buffer"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    if (g->nstate > 0 && CK(cudaMemcpy(S, g->dS, 4 * (size_t)g->nstate, cudaMemcpyDeviceToHost), "download state"))
        return -1;
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

/* the forward's launch on the handle's stream, nothing else */
static int fwd_enqueue(as_eb_gpu *g, char *err, size_t errlen)
{
    if (g->nitems > 0 && g->typed) {
        long long threads = g->nitems * 32;
        unsigned blocks = (unsigned)((threads + 255) / 256);
        eb_fwd_typed_kernel<<<blocks, 256, 0, g->st>>>(g->ditems, g->nitems, g->dtbl, g->dW, g->dind, g->doff, g->dout,
                                                       g->B, g->sumD);
        if (CK(cudaGetLastError(), "launch typed forward")) return -1;
    } else if (g->nitems > 0) {
        long long threads = g->nitems * 32;
        unsigned blocks = (unsigned)((threads + 255) / 256);
        eb_fwd_kernel<<<blocks, 256, 0, g->st>>>(g->ditems, g->nitems, g->dtbl, (const __half *)g->dW, g->dind,
                                                 g->doff, g->dout, g->B, g->sumD);
        if (CK(cudaGetLastError(), "launch forward")) return -1;
    }
    return 0;
}

extern "C" int as_eb_gpu_forward(as_eb_gpu *g, float *ms, char *err, size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_forward: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaEventRecord(g->e0, g->st), "cudaEventRecord")) return -1;
    if (fwd_enqueue(g, err, errlen)) return -1;
    return finish_timed(g, ms, err, errlen);
}

/* the backward's first half, shared by the fp16 and the typed op: keys, sort, unique rows
 * and their runs, per-table tasks (prep). *uk: the unique keys, *starts: the runs' first
 * sorted positions, *sv: the sorted bag ids */
template <typename K>
static int bwd_sort(as_eb_gpu *g, K **ukp, uint32_t **startsp, uint32_t **svp, char *err, size_t errlen)
{
    cudaStream_t st = g->st;
    int n = (int)g->n;
    /* the long-run counter keeps list slots above bit AS_LQ_SHIFT and work items below: at
     * most long_cap slots and (n / AS_EB_CHUNK + long_cap) chunks times the widest row's
     * slices (only a dim of ~200k columns could overflow it) */
    if ((double)g->long_cap >= (double)(1ULL << (64 - AS_LQ_SHIFT)) ||
        ((double)g->n / AS_EB_CHUNK + (double)g->long_cap) * g->max_slices >= (double)(1ULL << AS_LQ_SHIFT)) {
        as_errbuf(err, errlen, "shard too large for the GPU backward (lookups %lld, widest dim %d)", g->n, g->maxD);
        return -1;
    }
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

    eb_prep_kernel<K><<<1, 256, 0, st>>>(uk, g->drow_base, g->dtbl, g->T, g->dcnt, AS_CNT_INTS - 1, g->dtruns,
                                         g->dtask);
    if (CK(cudaGetLastError(), "launch prep")) return -1;
    *ukp = uk;
    *startsp = starts;
    *svp = sv;
    return 0;
}

template <typename K>
static int backward_t(as_eb_gpu *g, float lr, char *err, size_t errlen)
{
    cudaStream_t st = g->st;
    K *uk = NULL;
    uint32_t *starts = NULL, *sv = NULL;
    if (bwd_sort<K>(g, &uk, &starts, &sv, err, errlen)) return -1;

    /* a grid-stride kernel: exactly the blocks that are resident at once, so no block
       waits for a second wave to start its share (48 registers: 5 blocks of 256 per SM
       on sm_90, not the 8 launched before) */
    const int kk = sizeof(K) == 8;
    if (!g->short_grid[kk]) {
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, eb_short_kernel<K>, 256, 0) != cudaSuccess ||
            per_sm < 1) {
            cudaGetLastError();
            per_sm = 4;
        }
        g->short_grid[kk] = g->nsm * per_sm;
    }
    eb_short_kernel<K><<<g->short_grid[kk], 256, 0, st>>>(g->dtbl, g->T, g->dtruns, g->dtask, g->dcnt, g->dcnt, uk, starts,
                                                   sv, g->n, g->dgrad, (__half *)g->dW, (unsigned)g->B, g->sumD, lr,
                                                   g->dlong);
    if (CK(cudaGetLastError(), "launch short runs")) return -1;

    /* long runs: chunk sums (runs of one chunk are finished there), then each longer run's
     * partial sums combined left to right and applied; both grids stride over the work the
     * short kernel listed, so nothing is read back to the host */
    eb_chunk_kernel<<<g->nsm * AS_CHUNK_BLOCKS, 256, 0, st>>>(g->dtbl, g->dcnt, g->dlong, sv, g->dgrad, (__half *)g->dW,
                                                 g->dpart, (unsigned)g->B, g->sumD, lr, 0);
    if (CK(cudaGetLastError(), "launch long-run chunks")) return -1;
    eb_combine_kernel<<<g->nsm * AS_COMBINE_BLOCKS, 256, 0, st>>>(g->dtbl, g->dcnt, g->dlong, g->dpart, (__half *)g->dW, lr,
                                                   g->max_slices);
    if (CK(cudaGetLastError(), "launch long-run combine")) return -1;
    return 0;
}

/* the typed backward (the top of the typed kernels' section): the shared first half, the
 * short runs (one warp each), every long run's chunk sums, then each long run combined and
 * applied with the handle's optimizer at step o */
template <typename K>
static int backward_typed_t(as_eb_gpu *g, const TOpt &o, char *err, size_t errlen)
{
    cudaStream_t st = g->st;
    K *uk = NULL;
    uint32_t *starts = NULL, *sv = NULL;
    if (bwd_sort<K>(g, &uk, &starts, &sv, err, errlen)) return -1;
    const int kk = sizeof(K) == 8;
    if (!g->short_grid_t[kk]) {
        int per_sm = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, eb_short_typed_kernel<K>, 256, 0) != cudaSuccess ||
            per_sm < 1) {
            cudaGetLastError();
            per_sm = 4;
        }
        g->short_grid_t[kk] = g->nsm * per_sm;
    }
    eb_short_typed_kernel<K><<<g->short_grid_t[kk], 256, 0, st>>>(g->dtbl, g->T, g->dtruns, g->dtask, g->dcnt, g->dcnt,
                                                                  uk, starts, sv, g->n, g->dgrad, g->dW, g->dS,
                                                                  (unsigned)g->B, g->sumD, o, g->dlong);
    if (CK(cudaGetLastError(), "launch typed short runs")) return -1;
    eb_chunk_kernel<<<g->nsm * AS_CHUNK_BLOCKS, 256, 0, st>>>(g->dtbl, g->dcnt, g->dlong, sv, g->dgrad, (__half *)g->dW,
                                                              g->dpart_t, (unsigned)g->B, g->sumD, 0.0f, 1);
    if (CK(cudaGetLastError(), "launch typed long-run chunks")) return -1;
    eb_combine_typed_kernel<<<g->nsm * 4, 256, 0, st>>>(g->dtbl, g->dcnt, g->dlong, g->dpart_t, g->dW, g->dS, o);
    if (CK(cudaGetLastError(), "launch typed long-run combine")) return -1;
    return 0;
}

/* the typed backward's launches with the handle's optimizer at its current step, which then
 * counts up (Adam's bias corrections are the host's, per step) */
static int bwd_typed_enqueue(as_eb_gpu *g, char *err, size_t errlen)
{
    if (as_eb_opt_prepare(&g->opt, err, errlen)) return -1;
    const TOpt o = {(int)g->opt.kind, g->opt.lr, g->opt.eps, g->opt.beta1, g->opt.beta2, g->opt.c1, g->opt.c2};
    g->opt.step++;
    if (g->n <= 0) return 0;
    return g->key64 ? backward_typed_t<unsigned long long>(g, o, err, errlen)
                    : backward_typed_t<uint32_t>(g, o, err, errlen);
}

/* the backward's launches on the handle's stream, nothing else */
static int bwd_enqueue(as_eb_gpu *g, float lr, char *err, size_t errlen)
{
    if (g->typed || g->n > 0) {
        int r = g->typed ? bwd_typed_enqueue(g, err, errlen)
                : g->key64 ? backward_t<unsigned long long>(g, lr, err, errlen) : backward_t<uint32_t>(g, lr, err, errlen);
        if (r) {
            cudaStreamSynchronize(g->st);
            cudaGetLastError();
            return -1;
        }
    }
    return 0;
}

extern "C" int as_eb_gpu_backward_sgd(as_eb_gpu *g, float lr, float *ms, char *err, size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_backward_sgd: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaEventRecord(g->e0, g->st), "cudaEventRecord")) return -1;
    if (bwd_enqueue(g, lr, err, errlen)) return -1;
    return finish_timed(g, ms, err, errlen);
}

static int flush_enqueue(as_eb_gpu *g, char *err, size_t errlen)
{
    eb_flush_kernel<<<g->nsm * 8, 256, 0, g->st>>>((const uint4 *)g->dflush, g->flush_bytes / 16, g->dsink);
    return CK(cudaGetLastError(), "launch flush");
}

extern "C" int as_eb_gpu_flush_cache(as_eb_gpu *g, char *err, size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_flush_cache: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (flush_enqueue(g, err, errlen)) return -1;
    if (CK(cudaStreamSynchronize(g->st), "flush")) return -1;
    return 0;
}

extern "C" int as_eb_gpu_measure_start(as_eb_gpu *g, int warmup, int runs, float lr, char *err, size_t errlen)
{
    if (!g || warmup < 0 || runs < 0) {
        as_errbuf(err, errlen, "as_eb_gpu_measure_start: bad arguments");
        return -1;
    }
    if (g->ms_count >= 2) {
        as_errbuf(err, errlen, "as_eb_gpu_measure_start: two measurements are already started on this handle");
        return -1;
    }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    MeasSlot *q = &g->ms[(g->ms_head + g->ms_count) & 1];
    const int need = 2 + 3 * runs;
    if (need > q->nev) {
        cudaEvent_t *ev = (cudaEvent_t *)realloc(q->ev, sizeof *ev * (size_t)need);
        if (!ev) { as_errbuf(err, errlen, "out of host memory"); return -1; }
        q->ev = ev;
        while (q->nev < need) {
            if (CK(cudaEventCreate(&q->ev[q->nev]), "cudaEventCreate")) return -1;
            q->nev++;
        }
    }
    /* the set-up just queued belongs to this measurement: its events move into the slot */
    q->setup = g->set_pending;
    if (g->set_pending) {
        cudaEvent_t t0 = q->s0, t1 = q->s1;
        q->s0 = g->s0;
        q->s1 = g->s1;
        g->s0 = t0;
        g->s1 = t1;
        g->set_pending = 0;
    }
    cudaEvent_t *ev = q->ev;
    int bad = CK(cudaEventRecord(ev[0], g->st), "cudaEventRecord");
    for (int i = 0; i < warmup && !bad; i++) bad = fwd_enqueue(g, err, errlen) || bwd_enqueue(g, lr, err, errlen);
    if (!bad) bad = CK(cudaEventRecord(ev[1], g->st), "cudaEventRecord");
    for (int r = 0; r < runs && !bad; r++)
        bad = flush_enqueue(g, err, errlen) || CK(cudaEventRecord(ev[2 + 3 * r], g->st), "cudaEventRecord") ||
              fwd_enqueue(g, err, errlen) || CK(cudaEventRecord(ev[3 + 3 * r], g->st), "cudaEventRecord") ||
              bwd_enqueue(g, lr, err, errlen) || CK(cudaEventRecord(ev[4 + 3 * r], g->st), "cudaEventRecord");
    if (bad) {
        cudaStreamSynchronize(g->st);
        cudaGetLastError();
        q->setup = 0;
        return -1;
    }
    q->runs = runs;
    g->ms_count++;
    return 0;
}

extern "C" int as_eb_gpu_measure_end(as_eb_gpu *g, double *fwd_ms, double *bwd_ms, double *busy_ms, char *err,
                                     size_t errlen)
{
    if (busy_ms) *busy_ms = 0;
    if (!g || g->ms_count < 1) {
        as_errbuf(err, errlen, "as_eb_gpu_measure_end: no measurement started on this handle");
        return -1;
    }
    MeasSlot *q = &g->ms[g->ms_head];
    g->ms_head ^= 1;
    g->ms_count--;
    const int runs = q->runs;
    const int setup = q->setup;
    q->setup = 0;
    if (runs > 0 && (!fwd_ms || !bwd_ms)) {
        cudaStreamSynchronize(g->st);
        as_errbuf(err, errlen, "as_eb_gpu_measure_end: bad arguments");
        return -1;
    }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    cudaEvent_t *ev = q->ev;
    if (CK(cudaEventSynchronize(ev[1 + 3 * runs]), "kernel execution")) return -1;
    float t = 0;
    if (CK(cudaEventElapsedTime(&t, ev[0], ev[1]), "cudaEventElapsedTime")) return -1;
    double busy = t, flush = 0;
    for (int r = 0; r < runs; r++) {
        float f = 0, b = 0, fl = 0;
        if (CK(cudaEventElapsedTime(&f, ev[2 + 3 * r], ev[3 + 3 * r]), "cudaEventElapsedTime") ||
            CK(cudaEventElapsedTime(&b, ev[3 + 3 * r], ev[4 + 3 * r]), "cudaEventElapsedTime") ||
            CK(cudaEventElapsedTime(&fl, r ? ev[1 + 3 * r] : ev[1], ev[2 + 3 * r]), "cudaEventElapsedTime"))
            return -1;
        fwd_ms[r] = f;
        bwd_ms[r] = b;
        busy += (double)f + (double)b;
        flush += fl;
    }
    /* the device time of what is not measured: the flushes before the timed runs, and the
       set-up kernels of a context's shard when they ran just before the start */
    g->last_flush_ms = flush;
    g->last_setup_ms = 0;
    if (setup) {
        float st = 0;
        if (cudaEventElapsedTime(&st, q->s0, q->s1) == cudaSuccess) g->last_setup_ms = st;
        else cudaGetLastError();
    }
    if (busy_ms) *busy_ms = busy;
    return 0;
}

extern "C" int as_eb_gpu_measure(as_eb_gpu *g, int warmup, int runs, float lr, double *fwd_ms, double *bwd_ms,
                                 double *busy_ms, char *err, size_t errlen)
{
    if (busy_ms) *busy_ms = 0;
    if (!g || warmup < 0 || runs < 0 || (runs > 0 && (!fwd_ms || !bwd_ms))) {
        as_errbuf(err, errlen, "as_eb_gpu_measure: bad arguments");
        return -1;
    }
    if (as_eb_gpu_measure_start(g, warmup, runs, lr, err, errlen)) return -1;
    return as_eb_gpu_measure_end(g, fwd_ms, bwd_ms, busy_ms, err, errlen);
}

extern "C" void as_eb_gpu_overhead(const as_eb_gpu *g, double *setup_ms, double *flush_ms)
{
    if (setup_ms) *setup_ms = g ? g->last_setup_ms : 0;
    if (flush_ms) *flush_ms = g ? g->last_flush_ms : 0;
}

extern "C" int as_eb_gpu_download(as_eb_gpu *g, float *out, uint16_t *W, char *err, size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_download: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    size_t outn = (size_t)g->B * g->sumD;
    if (out && outn && CK(cudaMemcpy(out, g->dout, outn * 4, cudaMemcpyDeviceToHost), "download out")) return -1;
    if (W && g->wtotal && CK(cudaMemcpy(W, g->dW, 2 * (size_t)g->wtotal, cudaMemcpyDeviceToHost), "download W"))
        return -1;
    return 0;
}

extern "C" int as_eb_gpu_download_inputs(as_eb_gpu *g, int64_t *offsets, int32_t *indices, float *grad, char *err,
                                         size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_download_inputs: null handle"); return -1; }
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
    size_t outn = (size_t)g->B * g->sumD;
    if (offsets && CK(cudaMemcpy(offsets, g->doff, 8 * ((size_t)g->TB + 1), cudaMemcpyDeviceToHost), "download offsets"))
        return -1;
    if (indices && g->n && CK(cudaMemcpy(indices, g->dind, 4 * (size_t)g->n, cudaMemcpyDeviceToHost), "download indices"))
        return -1;
    if (grad && outn && CK(cudaMemcpy(grad, g->dgrad, 4 * outn, cudaMemcpyDeviceToHost), "download grad")) return -1;
    return 0;
}

extern "C" int as_eb_gpu_check_guards(as_eb_gpu *g, char *err, size_t errlen)
{
    if (!g) { as_errbuf(err, errlen, "as_eb_gpu_check_guards: null handle"); return -1; }
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
                as_errbuf(err, errlen, "output guard %s the buffer overwritten at element %d (0x%08x)",
                       side ? "after" : "before", side ? i : i - AS_GUARD, f[i]);
                return -1;
            }
    }
    const uint16_t *hsrc[2] = {g->dW_base, g->dW + g->wtotal};
    for (int side = 0; side < 2; side++) {
        if (CK(cudaMemcpy(h, hsrc[side], sizeof h, cudaMemcpyDeviceToHost), "download guard")) return -1;
        for (int i = 0; i < AS_GUARD; i++)
            if (h[i] != AS_GUARD_F16) {
                as_errbuf(err, errlen, "weight guard %s the buffer overwritten at element %d (0x%04x)",
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
    if (!g->info_ok) {   /* asked once per handle (a context's handle serves every shard) */
        cudaDeviceProp p;
        if (CK(cudaGetDeviceProperties(&p, g->dev), "cudaGetDeviceProperties")) return -1;
        snprintf(g->name, sizeof g->name, "%s", p.name);
        int khz = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, g->dev) != cudaSuccess) { cudaGetLastError(); khz = 0; }
        g->mhz = khz / 1000;
        g->info_ok = 1;
    }
    if (name && namelen) snprintf(name, namelen, "%s", g->name);
    if (sm_clock_mhz) *sm_clock_mhz = g->mhz;
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

/* ---- the benchmark context ------------------------------------------------------------------------
 * One per process: the workspace handle every shard gets, the pool (resident on the device,
 * or staged per shard), pinned staging, per-table caches. Not thread-safe: one caller. */

#define AS_PIN_CHUNK ((size_t)32 << 20)   /* bytes of each of the two pinned staging chunks */

struct as_eb_gpu_ctx {
    as_eb_gpu g;                  /* the workspace; the handle as_eb_gpu_ctx_shard returns */
    long long ntab;
    as_eb_table *tabs;            /* the pool's descriptors (host data stays the caller's) */
    unsigned char *checked;       /* per table: passed as_ebg_check_table */
    FwdItem **items;              /* per table: forward work items (t = 0), built on first use */
    long long *nitems;            /* per table: their count, -1 not built yet */
    int *items_gpw;               /* per table: the lane groups per warp they were built for */
    int resident;                 /* the pool is on the device: dpoff, dpind */
    long long *pool_soff, *pool_sind;   /* per table: first element of its offsets / indices there */
    long long *dpoff;
    int *dpind;
    size_t pool_bytes;
    long long *dsoff;             /* not resident: the shard's tables, uploaded per shard */
    int *dsind;
    size_t cap_soff, cap_sind;    /* bytes */
    long long src_grows;
    unsigned char *pin[2];        /* pinned chunks for bulk uploads, used alternately */
    cudaEvent_t pin_ev[2];
    int pin_busy[2], pin_next;
    unsigned char *hmeta;         /* pinned: a shard's table parameters, row bases, descriptors, items */
    size_t cap_hmeta;
    cudaEvent_t meta_ev;          /* the last upload from hmeta */
    int meta_busy;
    GenDev *dgen;
    size_t cap_gen;
    int cap_T;                    /* host scratch for one shard */
    const as_eb_table **stab;
    int64_t *rows, *w_off;
    int32_t *dims, *d_off;
    long long shards;
    /* the typed op (as_eb_gpu_ctx_set_kind): each pool table's weight type, the optimizer,
       and per shard its tables' types and state offsets (host scratch of cap_T) */
    int typed;
    unsigned char *dt;
    as_eb_opt opt;
    uint8_t *sdt;
    int64_t *sst;
};

/* bytes from host memory to the device through the pinned chunks: the copy of one chunk
 * overlaps the memcpy into the other */
static int stage_upload(as_eb_gpu_ctx *c, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *d = (unsigned char *)dst;
    while (bytes) {
        int k = c->pin_next;
        c->pin_next ^= 1;
        if (c->pin_busy[k] && CK(cudaEventSynchronize(c->pin_ev[k]), "staging")) return -1;
        size_t len = bytes < AS_PIN_CHUNK ? bytes : AS_PIN_CHUNK;
        memcpy(c->pin[k], s, len);
        if (CK(cudaMemcpyAsync(d, c->pin[k], len, cudaMemcpyHostToDevice, c->g.st), "upload") ||
            CK(cudaEventRecord(c->pin_ev[k], c->g.st), "cudaEventRecord"))
            return -1;
        c->pin_busy[k] = 1;
        s += len;
        d += len;
        bytes -= len;
    }
    return 0;
}

static long long rup4(long long x) { return (x + 3) & ~3LL; }

/* the per-shard source buffers (not resident): 0 ok, 1 does not fit, -1 CUDA error */
static int src_reserve(as_eb_gpu_ctx *c, size_t soff, size_t sind, char *err, size_t errlen)
{
    void **p[2] = {(void **)&c->dsoff, (void **)&c->dsind};
    size_t need[2] = {rup(soff), rup(sind)}, *cap[2] = {&c->cap_soff, &c->cap_sind};
    for (int i = 0; i < 2; i++) {
        if (need[i] <= *cap[i]) continue;
        if (CK(cudaStreamSynchronize(c->g.st), "synchronize")) return -1;
        if (*p[i]) cudaFree(*p[i]);
        *p[i] = NULL;
        *cap[i] = 0;
        size_t want = rup(need[i] + need[i] / 4);
        cudaError_t e = cudaMalloc(p[i], want);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            want = need[i];
            e = cudaMalloc(p[i], want);
        }
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            *p[i] = NULL;
            as_errbuf(err, errlen, "shard's table data needs %.2f GiB of device memory: cudaMalloc failed", gib(need[i]));
            return 1;
        }
        if (CK(e, "cudaMalloc(table data)")) { *p[i] = NULL; return -1; }
        *cap[i] = want;
        c->src_grows++;
    }
    return 0;
}

static void pool_free(as_eb_gpu_ctx *c)
{
    if (c->dpoff) cudaFree(c->dpoff);
    if (c->dpind) cudaFree(c->dpind);
    c->dpoff = NULL;
    c->dpind = NULL;
    c->pool_bytes = 0;
    c->resident = 0;
}

extern "C" void as_eb_gpu_ctx_destroy(as_eb_gpu_ctx *c)
{
    if (!c) return;
    cudaSetDevice(c->g.dev);
    ws_free(&c->g);
    pool_free(c);
    if (c->dsoff) cudaFree(c->dsoff);
    if (c->dsind) cudaFree(c->dsind);
    if (c->dgen) cudaFree(c->dgen);
    for (int k = 0; k < 2; k++) {
        if (c->pin[k]) cudaFreeHost(c->pin[k]);
        if (c->pin_ev[k]) cudaEventDestroy(c->pin_ev[k]);
    }
    if (c->hmeta) cudaFreeHost(c->hmeta);
    if (c->meta_ev) cudaEventDestroy(c->meta_ev);
    cudaGetLastError();
    if (c->items)
        for (long long i = 0; i < c->ntab; i++) free(c->items[i]);
    free(c->items);
    free(c->nitems);
    free(c->items_gpw);
    free(c->tabs);
    free(c->checked);
    free(c->pool_soff);
    free(c->pool_sind);
    free(c->stab);
    free(c->rows);
    free(c->w_off);
    free(c->dims);
    free(c->d_off);
    free(c->dt);
    free(c->sdt);
    free(c->sst);
    free(c);
}

extern "C" int as_eb_gpu_ctx_create(as_eb_gpu_ctx **cp, int device, const as_eb_table *tabs, int64_t ntab,
                                    int resident, char *err, size_t errlen)
{
    if (!cp) { as_errbuf(err, errlen, "as_eb_gpu_ctx_create: no output pointer"); return -1; }
    *cp = NULL;
    if (ntab < 0 || (ntab > 0 && !tabs)) { as_errbuf(err, errlen, "as_eb_gpu_ctx_create: no tables"); return -1; }
    if (check_device(device, err, errlen)) return -1;
    if (CK(cudaSetDevice(device), "cudaSetDevice")) return -1;
    as_eb_gpu_ctx *c = (as_eb_gpu_ctx *)calloc(1, sizeof *c);
    if (!c) { as_errbuf(err, errlen, "out of host memory"); return -1; }
    c->g.ctx = c;
    c->g.dev = device;
    c->ntab = ntab;
    size_t nt = (size_t)(ntab > 0 ? ntab : 1);
    c->tabs = (as_eb_table *)malloc(nt * sizeof *c->tabs);
    c->checked = (unsigned char *)calloc(nt, 1);
    c->items = (FwdItem **)calloc(nt, sizeof *c->items);
    c->nitems = (long long *)malloc(nt * sizeof *c->nitems);
    c->items_gpw = (int *)calloc(nt, sizeof *c->items_gpw);
    c->pool_soff = (long long *)calloc(nt, sizeof *c->pool_soff);
    c->pool_sind = (long long *)calloc(nt, sizeof *c->pool_sind);
    if (!c->tabs || !c->checked || !c->items || !c->nitems || !c->items_gpw || !c->pool_soff || !c->pool_sind) {
        as_errbuf(err, errlen, "out of host memory");
        goto fail;
    }
    if (ntab > 0) memcpy(c->tabs, tabs, (size_t)ntab * sizeof *tabs);
    for (long long i = 0; i < ntab; i++) c->nitems[i] = -1;
    if (g_init(&c->g, device, err, errlen)) goto fail;
    for (int k = 0; k < 2; k++) {
        if (CK(cudaMallocHost((void **)&c->pin[k], AS_PIN_CHUNK), "cudaMallocHost(staging)")) goto fail;
        if (CK(cudaEventCreateWithFlags(&c->pin_ev[k], cudaEventDisableTiming), "cudaEventCreate")) goto fail;
    }
    if (CK(cudaEventCreateWithFlags(&c->meta_ev, cudaEventDisableTiming), "cudaEventCreate")) goto fail;
    if (resident && ntab > 0) {
        /* the pool's place on the device: each table's offsets, and its indices from a
         * multiple of 4 elements */
        long long so = 0, si = 0;
        for (long long i = 0; i < ntab; i++) {
            if (tabs[i].batch < 0 || tabs[i].lookups < 0) {
                as_errbuf(err, errlen, "table %lld: negative batch or lookups", (long long)tabs[i].id);
                goto fail;
            }
            c->pool_soff[i] = so;
            c->pool_sind[i] = si;
            so += tabs[i].batch + 1;
            si += rup4(tabs[i].lookups);
        }
        size_t bytes = rup(8 * (size_t)so) + rup(4 * (size_t)(si + 1));
        size_t freeb = 0, totalb = 0;
        if (CK(cudaMemGetInfo(&freeb, &totalb), "cudaMemGetInfo")) goto fail;
        if (bytes <= freeb / 2) {
            cudaError_t e1 = cudaMalloc((void **)&c->dpoff, rup(8 * (size_t)so));
            cudaError_t e2 = e1 == cudaSuccess ? cudaMalloc((void **)&c->dpind, rup(4 * (size_t)(si + 1))) : e1;
            if (e1 == cudaSuccess && e2 == cudaSuccess) {
                c->resident = 1;
                c->pool_bytes = bytes;
                for (long long i = 0; i < ntab && c->resident; i++) {
                    const as_eb_table *t = &tabs[i];
                    if (!t->offsets || (t->lookups && !t->indices)) continue;   /* fails its check when used */
                    if (stage_upload(c, c->dpoff + c->pool_soff[i], t->offsets, 8 * (size_t)(t->batch + 1), err,
                                     errlen) ||
                        (t->lookups &&
                         stage_upload(c, c->dpind + c->pool_sind[i], t->indices, 4 * (size_t)t->lookups, err, errlen)))
                        goto fail;
                }
            } else {
                /* no room after all: upload per shard */
                cudaGetLastError();
                pool_free(c);
            }
        }
    }
    if (CK(cudaStreamSynchronize(c->g.st), "upload the pool")) goto fail;
    *cp = c;
    return 0;
fail:
    as_eb_gpu_ctx_destroy(c);
    return -1;
}

extern "C" int as_eb_gpu_ctx_resident(const as_eb_gpu_ctx *c) { return c ? c->resident : 0; }

extern "C" void as_eb_gpu_ctx_stats(const as_eb_gpu_ctx *c, size_t *bytes, int64_t *grows, int64_t *shards)
{
    if (bytes) *bytes = c ? ws_bytes(&c->g) + c->pool_bytes + c->cap_soff + c->cap_sind + c->cap_gen : 0;
    if (grows) *grows = c ? c->g.grows + c->src_grows : 0;
    if (shards) *shards = c ? c->shards : 0;
}

/* blocks in x for a per-table loop over up to `len` elements with T tables in y: about
 * 32 blocks per SM in all */
static unsigned gx_for(const as_eb_gpu *g, long long len, int T)
{
    long long want = (len + 255) / 256, cap = ((long long)g->nsm * 32 + T - 1) / T;
    if (want > cap) want = cap;
    return (unsigned)(want < 1 ? 1 : want);
}

/* ---- a shard in a context, in phases: the host scratch and the tables, the dimensions and
 * forward work items, the workspace, the staged descriptors, their upload with the table
 * data, and the kernels that gather and generate the shard's data ---------------------------- */

/* what as_eb_gpu_ctx_shard's phases share */
struct ShardSet {
    ShardDims d;
    Sizes z;
    as_eb_shard hs;               /* the shard's layout without data (table_params reads it) */
    TblDev *htbl;                 /* in the pinned staging buffer hmeta: [TblDev T] */
    long long *hrb;               /* [row base T+1] */
    GenDev *hgen;                 /* [GenDev T] */
    FwdItem *hit;                 /* [items d.nitems] */
    long long maxw, maxg, maxc;   /* the longest per-table loops of the generation kernels */
};

/* the host scratch for a shard of T tables */
static int shard_scratch(as_eb_gpu_ctx *c, int32_t T, char *err, size_t errlen)
{
    if (T > c->cap_T) {
        free(c->stab); free(c->rows); free(c->w_off); free(c->dims); free(c->d_off); free(c->sdt); free(c->sst);
        c->stab = (const as_eb_table **)malloc(sizeof *c->stab * (size_t)T);
        c->rows = (int64_t *)malloc(sizeof *c->rows * (size_t)T);
        c->w_off = (int64_t *)malloc(sizeof *c->w_off * ((size_t)T + 1));
        c->dims = (int32_t *)malloc(sizeof *c->dims * (size_t)T);
        c->d_off = (int32_t *)malloc(sizeof *c->d_off * ((size_t)T + 1));
        c->sdt = (uint8_t *)malloc((size_t)T);
        c->sst = (int64_t *)malloc(sizeof *c->sst * ((size_t)T + 1));
        c->cap_T = T;
        if (!c->stab || !c->rows || !c->w_off || !c->dims || !c->d_off || !c->sdt || !c->sst) {
            c->cap_T = 0;
            as_errbuf(err, errlen, "out of host memory");
            return -1;
        }
    }
    return 0;
}

/* the tables (c->stab): checked on first use, one batch size */
static int shard_tables(as_eb_gpu_ctx *c, const int64_t *pos, int32_t T, char *err, size_t errlen)
{
    for (int t = 0; t < T; t++) {
        if (pos[t] < 0 || pos[t] >= c->ntab) {
            as_errbuf(err, errlen, "table position %lld is not in the pool of %lld", (long long)pos[t], c->ntab);
            return -1;
        }
        const as_eb_table *tb = &c->tabs[pos[t]];
        if (!c->checked[pos[t]]) {
            if (as_ebg_check_table(tb, err, errlen)) return -1;
            c->checked[pos[t]] = 1;
        }
        if (tb->batch != c->tabs[pos[0]].batch) {
            as_errbuf(err, errlen, "tables %lld and %lld have different batch sizes", (long long)c->tabs[pos[0]].id,
                   (long long)tb->id);
            return -1;
        }
        c->stab[t] = tb;
    }
    return 0;
}

/* a typed shard's layout (as_ebg_layout's in 2-byte units: a table takes rows x dim x its
 * type's units, rounded up to AS_EBG_W_ALIGN, so a fp32 table starts at an even unit) and
 * its optimizer state (each table's rounded up to 16 floats), as as-bench lays a CPU part
 * out; returns the units of W */
static long long typed_layout(as_eb_gpu_ctx *c, const int64_t *pos, int32_t T)
{
    long long st = 0;
    for (int t = 0; t < T; t++) {
        c->sdt[t] = c->dt ? c->dt[pos[t]] : (uint8_t)AS_EB_F16;
        c->sst[t] = st;
        st += (as_eb_opt_state(c->opt.kind, c->stab[t]->rows, c->stab[t]->dim) + 15) / 16 * 16;
    }
    c->sst[T] = st;
    return as_ebg_layout_typed(c->stab, T, c->sdt, c->rows, c->dims, c->w_off, c->d_off);
}

/* the shard's layout (c->rows, dims, w_off, d_off) and dimensions, within the GPU path's
 * limits; d->nitems is left to shard_items */
static int shard_dims(as_eb_gpu_ctx *c, const int64_t *pos, int32_t T, ShardDims *d, char *err, size_t errlen)
{
    d->T = T;
    d->B = c->stab[0]->batch;
    d->wtotal = c->typed ? typed_layout(c, pos, T) : as_ebg_layout(c->stab, T, c->rows, c->dims, c->w_off, c->d_off);
    d->sumD = c->d_off[T];
    d->n = 0;
    d->sumE = 0;
    d->maxD = 1;
    for (int t = 0; t < T; t++) {
        d->n += c->stab[t]->lookups;
        d->sumE += c->rows[t];
        if (c->dims[t] > d->maxD) d->maxD = c->dims[t];
    }
    const long long B = d->B, TB = (long long)T * B;
    if (B > INT_MAX || TB >= 4294967295LL || d->n >= (long long)INT_MAX) {
        as_errbuf(err, errlen, "shard too large for the GPU path (T*B=%lld, lookups=%lld; limits 2^32-1 and 2^31-1)",
               TB, d->n);
        return -1;
    }
    return 0;
}

/* forward work items: per table, cached (they depend on its offsets and lane groups);
 * their total in s->d.nitems */
static int shard_items(as_eb_gpu_ctx *c, const int64_t *pos, ShardSet *s, char *err, size_t errlen)
{
    const int T = s->d.T;
    const long long B = s->d.B;
    s->d.nitems = 0;
    for (int t = 0; t < T; t++) {
        TblDev tb;
        table_params(&s->hs, t, &tb);
        int gpw = 32 / tb.fG;
        long long p = pos[t];
        if (c->nitems[p] < 0 || c->items_gpw[p] != gpw) {
            free(c->items[p]);
            c->items[p] = NULL;
            long long cnt = build_items_table(c->stab[t]->offsets, B, gpw, 0, NULL);
            c->items[p] = (FwdItem *)malloc(sizeof(FwdItem) * (size_t)(cnt > 0 ? cnt : 1));
            if (!c->items[p]) { c->nitems[p] = -1; as_errbuf(err, errlen, "out of host memory"); return -1; }
            build_items_table(c->stab[t]->offsets, B, gpw, 0, c->items[p]);
            c->nitems[p] = cnt;
            c->items_gpw[p] = gpw;
        }
        s->d.nitems += c->nitems[p];
    }
    return 0;
}

/* the workspace (and, without a resident pool, room for the shard's table data); a
 * shard that does not fit beside the resident pool evicts it */
static int shard_reserve(as_eb_gpu_ctx *c, const ShardSet *s, char *err, size_t errlen)
{
    as_eb_gpu *g = &c->g;
    const int T = s->d.T;
    const long long B = s->d.B;
    size_t need_soff = 0, need_sind = 0;
    for (;;) {
        need_soff = need_sind = 0;
        if (!c->resident)
            for (int t = 0; t < T; t++) {
                need_soff += 8 * (size_t)(B + 1);
                need_sind += 4 * (size_t)rup4(c->stab[t]->lookups);
            }
        int r = ws_reserve(g, &s->z, 1, err, errlen);
        if (r == 0 && c->typed) r = typed_reserve(g, c->sst[T], s->d.n, s->d.maxD, err, errlen);
        if (r == 0 && !c->resident) r = src_reserve(c, need_soff + 8, need_sind + 16, err, errlen);
        if (r == 0) break;
        if (r == 1 && c->resident) {
            if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
            pool_free(c);
            continue;
        }
        return -1;
    }
    return 0;
}

/* the small tables' staging, one pinned buffer: [TblDev T][row base T+1][GenDev T][items],
 * and the device's descriptors; sets s's pointers into the buffer */
static int shard_meta(as_eb_gpu_ctx *c, ShardSet *s, char *err, size_t errlen)
{
    as_eb_gpu *g = &c->g;
    const int T = s->d.T;
    size_t o_rb = rup(sizeof(TblDev) * (size_t)T), o_gen = o_rb + rup(8 * ((size_t)T + 1));
    size_t o_it = o_gen + rup(sizeof(GenDev) * (size_t)T), total = o_it + sizeof(FwdItem) * (size_t)s->d.nitems + 16;
    if (c->meta_busy && CK(cudaEventSynchronize(c->meta_ev), "staging")) return -1;
    c->meta_busy = 0;
    if (total > c->cap_hmeta) {
        if (c->hmeta) cudaFreeHost(c->hmeta);
        c->hmeta = NULL;
        c->cap_hmeta = 0;
        size_t want = rup(total + total / 4);
        if (CK(cudaMallocHost((void **)&c->hmeta, want), "cudaMallocHost(staging)")) return -1;
        c->cap_hmeta = want;
    }
    if (sizeof(GenDev) * (size_t)T > c->cap_gen) {
        if (CK(cudaStreamSynchronize(g->st), "synchronize")) return -1;
        if (c->dgen) cudaFree(c->dgen);
        c->dgen = NULL;
        c->cap_gen = 0;
        size_t want = rup(sizeof(GenDev) * (size_t)T * 2);
        if (CK(cudaMalloc((void **)&c->dgen, want), "cudaMalloc(descriptors)")) return -1;
        c->cap_gen = want;
    }
    s->htbl = (TblDev *)c->hmeta;
    s->hrb = (long long *)(c->hmeta + o_rb);
    s->hgen = (GenDev *)(c->hmeta + o_gen);
    s->hit = (FwdItem *)(c->hmeta + o_it);
    return 0;
}

/* the staged tables: parameters, row bases, generation descriptors (keyed by seed) and
 * forward items, with the longest loops of the generation kernels */
static void shard_fill_meta(as_eb_gpu_ctx *c, const int64_t *pos, uint64_t seed, ShardSet *s)
{
    const int T = s->d.T;
    const long long B = s->d.B;
    TblDev *htbl = s->htbl;
    long long *hrb = s->hrb;
    GenDev *hgen = s->hgen;
    FwdItem *hit = s->hit;
    long long rb = 0, dst = 0, so = 0, si = 0, it = 0, maxw = 0, maxg = 0, maxc = 0;
    for (int t = 0; t < T; t++) {
        const as_eb_table *tb = c->stab[t];
        long long p = pos[t];
        if (c->typed) typed_params(&s->hs, t, c->sdt, c->sst, &htbl[t]);
        else table_params(&s->hs, t, &htbl[t]);
        htbl[t].row_base = rb;
        hrb[t] = rb;
        rb += c->rows[t];
        GenDev *gd = &hgen[t];
        memset(gd, 0, sizeof *gd);
        gd->dt = c->typed ? c->sdt[t] : AS_EB_F16;
        gd->wkey = as_ebg_key(seed, tb->id, AS_EBG_WEIGHTS);
        gd->gkey = as_ebg_key(seed, tb->id, AS_EBG_GRADS);
        gd->w_off = c->w_off[t];
        gd->w_end = c->w_off[t + 1];
        gd->nel = c->rows[t] * (long long)c->dims[t];
        gd->soff = c->resident ? c->pool_soff[p] : so;
        gd->sind = c->resident ? c->pool_sind[p] : si;
        so += B + 1;
        si += rup4(tb->lookups);
        gd->lookups = tb->lookups;
        gd->dst = dst;
        dst += tb->lookups;
        gd->D = c->dims[t];
        gd->d_off = c->d_off[t];
        for (long long k = 0; k < c->nitems[p]; k++) {
            hit[it + k] = c->items[p][k];
            hit[it + k].t = t;
        }
        it += c->nitems[p];
        long long lg = B > tb->lookups ? B : tb->lookups;
        if (lg > maxc) maxc = lg;
        if ((gd->w_end - gd->w_off) / 4 > maxw) maxw = (gd->w_end - gd->w_off) / 4;
        if (B * gd->D > maxg) maxg = B * gd->D;
    }
    hrb[T] = rb;
    s->maxw = maxw;
    s->maxg = maxg;
    s->maxc = maxc;
}

/* the set-up's start event, the staged tables' upload and, without a resident pool, the
 * shard's table data in shard order; *poff, *pind: where the gather reads the table data */
static int shard_upload(as_eb_gpu_ctx *c, const ShardSet *s, const long long **poff, const int **pind, char *err,
                        size_t errlen)
{
    as_eb_gpu *g = &c->g;
    const int T = s->d.T;
    const long long B = s->d.B;
    cudaStream_t st = g->st;
    g->set_pending = 0;
    if (CK(cudaEventRecord(g->s0, st), "cudaEventRecord")) return -1;
    if (CK(cudaMemcpyAsync(g->dtbl, s->htbl, sizeof(TblDev) * (size_t)T, cudaMemcpyHostToDevice, st),
           "upload tables") ||
        CK(cudaMemcpyAsync(g->drow_base, s->hrb, 8 * ((size_t)T + 1), cudaMemcpyHostToDevice, st), "upload row base") ||
        CK(cudaMemcpyAsync(c->dgen, s->hgen, sizeof(GenDev) * (size_t)T, cudaMemcpyHostToDevice, st),
           "upload descriptors") ||
        (s->d.nitems &&
         CK(cudaMemcpyAsync(g->ditems, s->hit, sizeof(FwdItem) * (size_t)s->d.nitems, cudaMemcpyHostToDevice, st),
            "upload items")) ||
        CK(cudaEventRecord(c->meta_ev, st), "cudaEventRecord"))
        return -1;
    c->meta_busy = 1;
    /* without a resident pool: the shard's tables, in shard order */
    *poff = c->dpoff;
    *pind = c->dpind;
    if (!c->resident) {
        for (int t = 0; t < T; t++) {
            const as_eb_table *tb = c->stab[t];
            if (stage_upload(c, c->dsoff + s->hgen[t].soff, tb->offsets, 8 * (size_t)(B + 1), err, errlen) ||
                (tb->lookups && stage_upload(c, c->dsind + s->hgen[t].sind, tb->indices, 4 * (size_t)tb->lookups, err,
                                             errlen)))
                return -1;
        }
        *poff = c->dsoff;
        *pind = c->dsind;
    }
    return 0;
}

/* the shard's data on the device: offsets and indices gathered from poff/pind, generated
 * weights and gradients, guard words, zeroed counters; then the set-up's end event */
static int shard_generate(as_eb_gpu_ctx *c, const ShardSet *s, const long long *poff, const int *pind, char *err,
                          size_t errlen)
{
    as_eb_gpu *g = &c->g;
    const int T = s->d.T;
    const long long B = s->d.B;
    cudaStream_t st = g->st;
    unsigned gy = (unsigned)(T < 65535 ? T : 65535);
    eb_gather_kernel<<<dim3(gx_for(g, s->maxc, T), gy), 256, 0, st>>>(g->doff, g->dind, poff, pind, c->dgen, T, B);
    if (CK(cudaGetLastError(), "launch gather")) return -1;
    if (c->typed) {
        eb_gen_weights_typed_kernel<<<dim3(gx_for(g, s->maxw, T), gy), 256, 0, st>>>((unsigned short *)g->dW, c->dgen, T);
        /* the optimizer's state from zero, as on the CPU */
        if (c->sst[T] && CK(cudaMemsetAsync(g->dS, 0, 4 * (size_t)c->sst[T], st), "cudaMemset(optimizer state)"))
            return -1;
    } else {
        eb_gen_weights_kernel<<<dim3(gx_for(g, s->maxw, T), gy), 256, 0, st>>>((unsigned short *)g->dW, c->dgen, T);
    }
    if (CK(cudaGetLastError(), "launch weights")) return -1;
    eb_fill_u16<<<4, 256, 0, st>>>((unsigned short *)g->dW_base, AS_GUARD, (unsigned short)AS_GUARD_F16);
    eb_fill_u16<<<4, 256, 0, st>>>((unsigned short *)(g->dW + g->wtotal), AS_GUARD, (unsigned short)AS_GUARD_F16);
    if (CK(cudaGetLastError(), "launch guards")) return -1;
    eb_gen_grad_kernel<<<dim3(gx_for(g, s->maxg, T), gy), 256, 0, st>>>(g->dgrad, c->dgen, T, B, s->d.sumD);
    if (CK(cudaGetLastError(), "launch gradients")) return -1;
    /* output: guard words everywhere; the forward must overwrite every element of [B, sumD] */
    eb_fill_f32<<<g->nsm * 4, 256, 0, st>>>(g->dout_base, (size_t)B * s->d.sumD + 2 * AS_GUARD, AS_GUARD_F32);
    if (CK(cudaGetLastError(), "launch fill")) return -1;
    if (CK(cudaMemsetAsync(g->dcnt, 0, s->z.cnt, st), "cudaMemset") ||
        CK(cudaMemsetAsync(g->dtruns, 0, s->z.truns, st), "cudaMemset") ||
        CK(cudaMemsetAsync(g->dtask, 0, s->z.task, st), "cudaMemset") ||
        CK(cudaEventRecord(g->s1, st), "cudaEventRecord"))
        return -1;
    return 0;
}

extern "C" int as_eb_gpu_ctx_shard(as_eb_gpu_ctx *c, const int64_t *pos, int32_t T, uint64_t seed, as_eb_gpu **gp,
                                   char *err, size_t errlen)
{
    if (gp) *gp = NULL;
    if (!c || !gp || !pos) { as_errbuf(err, errlen, "as_eb_gpu_ctx_shard: bad arguments"); return -1; }
    if (T < 1) { as_errbuf(err, errlen, "empty shard"); return -1; }
    as_eb_gpu *g = &c->g;
    if (CK(cudaSetDevice(g->dev), "cudaSetDevice")) return -1;
    if (shard_scratch(c, T, err, errlen) || shard_tables(c, pos, T, err, errlen)) return -1;
    ShardSet s;
    if (shard_dims(c, pos, T, &s.d, err, errlen)) return -1;
    const as_eb_shard hs = {T, s.d.B, c->rows, c->dims, c->w_off, c->d_off, NULL, NULL};
    s.hs = hs;
    if (shard_items(c, pos, &s, err, errlen)) return -1;
    sizes_for(&s.d, g->dev, 1, &s.z);
    if (shard_reserve(c, &s, err, errlen)) return -1;
    g_set_dims(g, &s.d, &s.z);
    if (shard_meta(c, &s, err, errlen)) return -1;
    shard_fill_meta(c, pos, seed, &s);
    const long long *poff;
    const int *pind;
    if (shard_upload(c, &s, &poff, &pind, err, errlen) || shard_generate(c, &s, poff, pind, err, errlen)) return -1;
    g->set_pending = 1;
    /* the typed op: the shard's optimizer from step 1 (as a CPU part starts) */
    g->typed = c->typed;
    g->opt = c->opt;
    g->opt.step = 1;
    g->nstate = c->typed ? c->sst[T] : 0;
    c->shards++;
    *gp = g;
    return 0;
}

extern "C" int as_eb_gpu_ctx_set_kind(as_eb_gpu_ctx *c, const uint8_t *dtype, const as_eb_opt *o, char *err,
                                      size_t errlen)
{
    if (!c || !o) { as_errbuf(err, errlen, "as_eb_gpu_ctx_set_kind: bad arguments"); return -1; }
    as_eb_opt chk = *o;
    chk.step = 1;
    if (as_eb_opt_prepare(&chk, err, errlen)) return -1;
    int typed = o->kind != AS_EB_SGD;
    for (long long i = 0; dtype && i < c->ntab; i++) {
        if (dtype[i] >= AS_EB_NDTYPE) {
            as_errbuf(err, errlen, "table %lld: unknown weight type %d", (long long)c->tabs[i].id, dtype[i]);
            return -1;
        }
        typed |= dtype[i] != AS_EB_F16;
    }
    free(c->dt);
    c->dt = NULL;
    if (dtype && c->ntab > 0) {
        c->dt = (unsigned char *)malloc((size_t)c->ntab);
        if (!c->dt) { as_errbuf(err, errlen, "out of host memory"); return -1; }
        memcpy(c->dt, dtype, (size_t)c->ntab);
    }
    c->opt = chk;
    c->typed = typed;
    return 0;
}
