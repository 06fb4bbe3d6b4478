/* bench.c - the micro-benchmark; see bench.h.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. */
#include "bench.h"
#include "stats.h"
#include "common.h"
#include "device.h"
#include "ebgen.h"
#include "ebopt.h"
#include "embbag.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- CPU cache flush ---------------------------------------------------------------- */

static volatile double flush_sink;

/* doubles the sweep reads: want bytes, or (0) twice the last-level cache, at least 64 MiB */
static size_t flush_doubles(uint64_t want)
{
    if (!want) {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0) llc = 32L << 20;
        want = 2 * (uint64_t)llc;
        if (want < ((uint64_t)64 << 20)) want = (uint64_t)64 << 20;
    }
    size_t n = (size_t)(want / sizeof(double));
    return n < 1024 ? 1024 : n;
}

uint64_t as_bench_flush_bytes(const as_bench_cfg *c)
{
    return c->cuda ? 0 : (uint64_t)flush_doubles(c->flush_bytes) * sizeof(double);
}

/* the sweep: a cache line of every 64 bytes of the buffer read, by the measuring threads
 * together (each core's own caches swept too, and the sweep no longer than its share) */
static void cpu_flush(uint64_t want, int nthreads)
{
    static double *buf;
    static size_t n;
    if (!buf) {
        n = flush_doubles(want);
        buf = as_malloc(n * sizeof *buf);
        for (size_t i = 0; i < n; i++) buf[i] = (double)i;
    }
    double s = 0;
    const int64_t lines = (int64_t)(n / 8);
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(nthreads > 0 ? nthreads : omp_get_max_threads())
    for (int64_t i = 0; i < lines; i++) s += buf[i * 8];
    flush_sink = s;
}

void as_cpu_name(char *buf, size_t len, int threads)
{
    char model[160] = "unknown cpu";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ') c++;
                    c[strcspn(c, "\n")] = 0;
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        fclose(f);
    }
    snprintf(buf, len, "cpu: %s (%d thread%s)", model, threads, threads == 1 ? "" : "s");
}

/* ---- the session ------------------------------------------------------------------- */

/* one shard set up for measurement: its layout (arrays grown, capacities in elements, and
 * kept for the next shard laid out in the same slot) and, while its part is set up, where
 * its data lie: on the CPU in the session's arena, the weights of its tables shared with the
 * other shards of its part (part_setup); on CUDA the host copies of as_bench_session_last */
typedef struct {
    int64_t capT;
    const as_eb_table **tb;
    int64_t *pos, *tid, *rows, *w_off, *gw_off;
    int32_t *dims, *d_off;
    int capR;
    double *tot, *fw, *bw;
    /* the shard now in the slot (shard_layout); w_off: its own packed layout
       (as_ebg_layout), gw_off: where its tables' weights lie in its part's arena */
    int32_t T;
    int64_t B, nidx, wtotal, maxn, maxD;
    double fwd_bytes;
    uint8_t *dt;            /* [capT] each table's weight type (ebopt.h) */
    int64_t *st_off;        /* [capT + 1] its tables' optimizer state in the part's state */
    /* its data, valid while held */
    uint16_t *W;
    float *St;              /* the part's optimizer state (NULL: SGD) */
    float *grad, *out;
    int64_t *offs;
    int32_t *idx;
    as_eb_shard s;
    int held;               /* the data above are the shard's (its part is the last set up) */
    int measured;           /* the shard in the slot was measured (ok) */
} bslot;

struct as_bench_session {
    as_bench_cfg c;
    const as_bpool *p;
    int threads;
    char cpu_name[128];
    as_eb_table *view;              /* [p->n] the pool's tables as embbag.h / ebgen.h see them */
    uint8_t *checked;               /* [p->n] passed as_ebg_check_table */
    bslot *slot;                    /* [nslot] one per shard of a group measured together */
    int nslot;
    /* the data of the shards set up together (a part): one buffer, the arena, for their
       tables' weights (each table once) and each shard's output, gradient and bags */
    uint8_t *arena;
    size_t arena_cap;
    as_eb_cpu_ws *ws;               /* CPU: the backward's sort buffers, shared by the slots */
    int64_t ws_n, ws_D;             /* lookups of one table and dim the workspace is sized for */
    /* per pool position: the weights a part holds of the table (tstamp: the stamp of the
       count or part that last counted it, tcopies: its copies, tbase: the first copy's
       element offset) and how often the shard being counted names it (sstamp, socc) */
    uint64_t *tstamp, *sstamp;
    int32_t *tcopies, *socc;
    int64_t *tbase;
    int64_t *dpos;                  /* [p->n] a part's distinct tables, first seen first */
    /* what the shards train (ebopt.h): each pool table's weight type, its optimizer state
       per copy (floats, rounded to a cache line) and where a part holds it; typed: any
       table not fp16 or an optimizer other than SGD (the typed kernels) */
    uint8_t *dt;
    int64_t *sbase;
    int typed;
    as_eb_opt opt;
    uint64_t stamp, serial;
    uint64_t pool_bytes;            /* as_bpool_bytes(p): held beside the shard data */
    int64_t grows, shards;
    /* the last shard measured (as_bench_session_last): its slot (-1: none); the last
       group's shards sit in slots 0..glast-1 (as_bench_session_group_data) */
    int last, glast;
    as_eb_gpu *last_g;
    /* CUDA */
    as_eb_gpu_ctx *ctx;
    as_bench_timer timer;           /* the timer hook (benchfake.h; NULL functions: none) */
    int calibrating;                /* the runs are the quiet-machine check's (for the hook) */
    int64_t group;                  /* as_bench_session_run_group calls so far, this one
                                       included (the hook's group: the fake timer's drift) */
};

/* "1.50 GiB", "12.0 MiB", "3.0 KiB", "100 B" */
static void human_bytes(char *buf, size_t len, uint64_t b)
{
    if (b >= (1ULL << 30)) snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ULL << 30));
    else if (b >= (1ULL << 20)) snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ULL << 20));
    else if (b >= (1ULL << 10)) snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, len, "%" PRIu64 " B", b);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* x rounded up to a cache line (64 bytes): every buffer of a part starts on one */
static uint64_t line_up(uint64_t x)
{
    return x > UINT64_MAX - 63 ? UINT64_MAX : (x + 63) & ~(uint64_t)63;
}

/* 2-byte units one copy of pool table x's weights takes in an arena: rows x dim x its
 * type's units (ebopt.h), rounded up to AS_EBG_W_ALIGN (so that the next table starts on a
 * cache line, as in as_ebg_layout) */
static int64_t weight_stride(const as_bench_session *S, int64_t x)
{
    const as_btable *t = &S->p->t[x];
    const int64_t n = as_bt_mrows(t) * t->dim * as_eb_dtype_units((as_eb_dtype)S->dt[x]);   /* at most 2^41 */
    return (n + AS_EBG_W_ALIGN - 1) / AS_EBG_W_ALIGN * AS_EBG_W_ALIGN;
}

/* floats one copy of pool table x's optimizer state takes: as_eb_opt_state, rounded up to a
 * cache line (16 floats) */
static int64_t state_stride(const as_bench_session *S, int64_t x)
{
    const as_btable *t = &S->p->t[x];
    const int64_t n = as_eb_opt_state(S->opt.kind, as_bt_mrows(t), t->dim);
    return (n + 15) / 16 * 16;
}

/* bytes of a shard's own data in an arena: output and gradient [B, sumD] fp32, offsets
 * [T*B + 1], indices [lookups] */
static uint64_t shard_data_bytes(int64_t T, int64_t B, int64_t sumD, int64_t nidx)
{
    const uint64_t bd = line_up(sat_mul(sat_mul((uint64_t)B, (uint64_t)sumD), 4));
    const uint64_t off = line_up(sat_mul(sat_add(sat_mul((uint64_t)T, (uint64_t)B), 1), 8));
    const uint64_t idx = line_up(sat_mul((uint64_t)(nidx > 0 ? nidx : 1), 4));
    return sat_add(sat_add(sat_mul(bd, 2), off), idx);
}

/* The memory of shards held together, counted as part_setup lays them out: each table's
 * weights once (a table a shard names twice: two copies), each shard's own data, and the
 * sort buffers for the largest table and dim. */
typedef struct {
    uint64_t stamp;
    uint64_t weights, data;     /* bytes */
    int64_t ws_n, ws_D;
    int64_t shards;
} mem_count;

static void count_begin(as_bench_session *S, mem_count *a)
{
    memset(a, 0, sizeof *a);
    a->stamp = ++S->stamp;
}

static uint64_t count_total(const mem_count *a)
{
    return a->shards ? sat_add(sat_add(a->weights, a->data), as_eb_cpu_ws_size(a->ws_n, a->ws_D)) : 0;
}

/* the total of a with the shard ids[0..n) added; commit: add it. A shard that cannot be
 * laid out (empty, a table not in the pool, mixed batch sizes) adds nothing. */
static uint64_t count_add(as_bench_session *S, mem_count *a, const int64_t *ids, int64_t n, int commit)
{
    const as_bpool *p = S->p;
    const as_btable *t0 = n > 0 ? as_bpool_get(p, ids[0]) : NULL;
    if (!t0) return count_total(a);
    const int64_t B = t0->batch;
    int64_t sumD = 0, nidx = 0, maxn = 0, maxD = 0;
    uint64_t w = 0;
    const uint64_t serial = ++S->serial;
    for (int64_t i = 0; i < n; i++) {
        const as_btable *t = as_bpool_get(p, ids[i]);
        if (!t || t->batch != B) return count_total(a);
        const int64_t q = t - p->t;
        if (S->sstamp[q] != serial) { S->sstamp[q] = serial; S->socc[q] = 0; }
        else S->socc[q]++;
        const int32_t have = S->tstamp[q] == a->stamp ? S->tcopies[q] : 0;
        if (S->socc[q] >= have)
            w = sat_add(w, sat_add(sat_mul((uint64_t)weight_stride(S, q), 2), sat_mul((uint64_t)state_stride(S, q), 4)));
        sumD += t->dim;
        nidx += t->lookups;
        if (t->lookups > maxn) maxn = t->lookups;
        if (t->dim > maxD) maxD = t->dim;
    }
    mem_count b = *a;
    b.weights = sat_add(b.weights, w);
    b.data = sat_add(b.data, shard_data_bytes(n, B, sumD, nidx));
    if (maxn > b.ws_n) b.ws_n = maxn;
    if (maxD > b.ws_D) b.ws_D = maxD;
    b.shards++;
    if (commit) {
        *a = b;
        const uint64_t s2 = ++S->serial;
        for (int64_t i = 0; i < n; i++) {
            const int64_t q = as_bpool_get(p, ids[i]) - p->t;
            if (S->sstamp[q] != s2) { S->sstamp[q] = s2; S->socc[q] = 0; }
            else S->socc[q]++;
            if (S->tstamp[q] != a->stamp) { S->tstamp[q] = a->stamp; S->tcopies[q] = 0; }
            if (S->socc[q] + 1 > S->tcopies[q]) S->tcopies[q] = S->socc[q] + 1;
        }
    }
    return count_total(&b);
}

uint64_t as_bench_session_need(as_bench_session *S, const as_bench_shardref *sh, int k)
{
    mem_count a;
    count_begin(S, &a);
    for (int j = 0; j < k; j++) count_add(S, &a, sh[j].ids, sh[j].n, 1);
    return count_total(&a);
}

uint64_t as_bench_session_budget(const as_bench_session *S)
{
    return S->c.cuda ? 0 : S->c.max_bytes;
}

/* what the budget leaves for shard data beside the process, the table data and the
 * cache-flush sweep (0 when they take it all); only meaningful with a budget */
static uint64_t data_room(const as_bench_session *S)
{
    const uint64_t fixed = sat_add(sat_add(AS_BENCH_PROCESS_BYTES, S->pool_bytes), as_bench_flush_bytes(&S->c));
    return S->c.max_bytes > fixed ? S->c.max_bytes - fixed : 0;
}

/* the room of a part of more than one shard: data_room, or group_bytes when less */
static uint64_t group_room(const as_bench_session *S)
{
    const uint64_t d = data_room(S);
    return S->c.group_bytes && S->c.group_bytes < d ? S->c.group_bytes : d;
}

/* bytes of one shard's data pass the budget */
static int over_budget(const as_bench_session *S, uint64_t bytes)
{
    return as_bench_session_budget(S) && bytes > data_room(S);
}

/* bytes of a part of several shards pass it */
static int over_group(const as_bench_session *S, uint64_t bytes)
{
    return as_bench_session_budget(S) && bytes > group_room(S);
}

int as_bench_session_fits(as_bench_session *S, const as_bench_shardref *sh, int k)
{
    if (!as_bench_session_budget(S)) return 1;
    const uint64_t need = as_bench_session_need(S, sh, k);
    return k > 1 ? !over_group(S, need) : !over_budget(S, need);
}

uint64_t as_bench_session_room(const as_bench_session *S)
{
    return as_bench_session_budget(S) ? data_room(S) : 0;
}

uint64_t as_bench_session_group_room(const as_bench_session *S)
{
    return as_bench_session_budget(S) ? group_room(S) : 0;
}

/* the arena, holding at least `need` bytes (contents lost when it is replaced). With a
 * budget it is kept, or made, no larger than the budget less `beside` (what is held next to
 * it), unless need itself is more; else with 25 % headroom. Cache-line aligned. */
static uint8_t *arena_reserve(as_bench_session *S, uint64_t need, uint64_t beside)
{
    const uint64_t budget = as_bench_session_budget(S), data = budget ? data_room(S) : 0;
    const uint64_t room = data > beside ? data - beside : 0;
    if (need < 64) need = 64;
    if (S->arena && need <= S->arena_cap && (!budget || S->arena_cap <= room || S->arena_cap <= need)) return S->arena;
    free(S->arena);     /* before the new one: the two are never held at once */
    S->arena = NULL;
    S->arena_cap = 0;
    need = line_up(need);
    uint64_t cap = line_up(sat_add(need, need / 4));
    if (budget && cap > room) cap = (room & ~(uint64_t)63) > need ? room & ~(uint64_t)63 : need;
    if (cap > (uint64_t)SIZE_MAX) as_oom("%" PRIu64 " bytes of shard data", cap);
    /* huge pages: the weights' random rows are read through the TLB (as_huge_alloc) */
    void *a = as_huge_alloc((size_t)cap);
    if (!a) as_oom("%" PRIu64 " bytes of shard data", cap);
    S->arena = a;
    S->arena_cap = (size_t)cap;
    S->grows++;
    return S->arena;
}

/* the sort buffers for tables of up to n lookups and dim D (kept when they are already
 * this size); 0, or -1 when they cannot be had */
static int ws_reserve(as_bench_session *S, int64_t n, int64_t D)
{
    if (S->ws && S->ws_n == n && S->ws_D == D) return 0;
    if (S->ws) as_eb_cpu_ws_free(S->ws);
    S->ws = NULL;
    S->ws_n = S->ws_D = 0;
    int32_t d1 = (int32_t)(D > 0 ? D : 1), doff[2] = { 0, d1 };
    int64_t r1 = 1, wo[2] = { 0, d1 }, of[2] = { 0, n };
    as_eb_shard big = { 1, 1, &r1, &d1, wo, doff, of, NULL };
    S->ws = as_eb_cpu_ws_new(&big);
    S->grows++;
    if (!S->ws) return -1;
    S->ws_n = n;
    S->ws_D = D;
    return 0;
}

static void slot_free(bslot *b)
{
    free((void *)b->tb); free(b->pos); free(b->tid); free(b->rows); free(b->w_off); free(b->gw_off); free(b->dims);
    free(b->d_off); free(b->dt); free(b->st_off);
    free(b->tot); free(b->fw); free(b->bw);
    memset(b, 0, sizeof *b);
}

/* slots 0..k-1 exist */
static void slots_reserve(as_bench_session *S, int k)
{
    if (k <= S->nslot) return;
    S->slot = as_realloc(S->slot, (size_t)k * sizeof *S->slot);
    memset(S->slot + S->nslot, 0, (size_t)(k - S->nslot) * sizeof *S->slot);
    S->nslot = k;
}

/* pool table t's weight type under c->wtype: the one given, or (AS_BENCH_WTYPE_TABLES) its
 * record's data_type (fp16 without one); 0, or -1 with err naming a type the kernels lack */
static int session_dtype(const as_bench_cfg *c, const as_btable *t, uint8_t *dt, char *err, size_t errlen)
{
    as_eb_dtype d = AS_EB_F16;
    if (c->wtype != AS_BENCH_WTYPE_TABLES) d = (as_eb_dtype)c->wtype;
    else if (t->data_type[0] && as_eb_dtype_parse(t->data_type, &d)) {
        snprintf(err, errlen, "table %" PRId64 ": its weights are %s; the kernels measure fp32, fp16 and bf16 (give "
                              "--weights-type fp16|fp32|bf16 for all)", t->id, t->data_type);
        return -1;
    }
    *dt = (uint8_t)d;
    return 0;
}

int as_bench_check_types(const as_bench_cfg *c, const as_bpool *p, char *err, size_t errlen)
{
    uint8_t d;
    for (int64_t i = 0; i < p->n; i++)
        if (session_dtype(c, &p->t[i], &d, err, errlen)) return -1;
    return 0;
}

as_bench_session *as_bench_session_new(const as_bench_cfg *c, const as_bpool *p, char *err, size_t errlen)
{
    as_bench_session *S = as_calloc(1, sizeof *S);
    S->c = *c;
    S->p = p;
    S->last = -1;
    as_bench_fake_timer(c->fake, &S->timer);
    int threads = c->threads;
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    S->threads = threads;
    as_cpu_name(S->cpu_name, sizeof S->cpu_name, threads);
    size_t np = (size_t)(p->n > 0 ? p->n : 1);
    S->view = as_calloc(np, sizeof *S->view);
    S->checked = as_calloc(np, 1);
    S->tstamp = as_calloc(np, sizeof *S->tstamp);
    S->sstamp = as_calloc(np, sizeof *S->sstamp);
    S->tcopies = as_calloc(np, sizeof *S->tcopies);
    S->socc = as_calloc(np, sizeof *S->socc);
    S->tbase = as_calloc(np, sizeof *S->tbase);
    S->dpos = as_calloc(np, sizeof *S->dpos);
    S->sbase = as_calloc(np, sizeof *S->sbase);
    S->dt = as_calloc(np, 1);
    S->opt = (as_eb_opt){ c->optim, c->lr, AS_BENCH_EPS, AS_BENCH_BETA1, AS_BENCH_BETA2, 1, 1, 1 };
    S->typed = c->optim != AS_EB_SGD;
    for (int64_t i = 0; i < p->n; i++) {
        if (session_dtype(c, &p->t[i], &S->dt[i], err, errlen)) {
            as_bench_session_free(S);
            return NULL;
        }
        S->typed |= S->dt[i] != AS_EB_F16;
    }
    S->pool_bytes = as_bpool_bytes(p);
    for (int64_t i = 0; i < p->n; i++) {
        const as_btable *t = &p->t[i];
        /* a capped table (as_bpool_cap_rows) is measured over its capped rows */
        as_eb_table v = { t->id, as_bt_mrows(t), t->batch, t->dim, t->lookups, t->offsets, as_bt_mindices(t) };
        S->view[i] = v;
    }
    slots_reserve(S, 1);
    if (c->cuda && (as_eb_gpu_ctx_create(&S->ctx, c->device, S->view, p->n, !c->per_shard_upload, err, errlen) ||
                    (S->typed && as_eb_gpu_ctx_set_kind(S->ctx, S->dt, &S->opt, err, errlen)))) {
        as_bench_session_free(S);
        return NULL;
    }
    return S;
}

void as_bench_session_refresh(as_bench_session *S)
{
    if (!S || S->c.cuda) return;
    if (S->ws) as_eb_cpu_ws_free(S->ws);
    S->ws = NULL;
    S->ws_n = S->ws_D = 0;
    free(S->arena);
    S->arena = NULL;
    S->arena_cap = 0;
    S->last = -1;       /* the last shard's data went with the arena */
    S->glast = 0;
}

void as_bench_session_free(as_bench_session *S)
{
    if (!S) return;
    as_eb_gpu_ctx_destroy(S->ctx);
    if (S->ws) as_eb_cpu_ws_free(S->ws);
    free(S->arena);
    free(S->view); free(S->checked);
    free(S->tstamp); free(S->sstamp); free(S->tcopies); free(S->socc); free(S->tbase); free(S->dpos);
    free(S->sbase); free(S->dt);
    for (int j = 0; j < S->nslot; j++) slot_free(&S->slot[j]);
    free(S->slot);
    free(S);
}

const as_bpool *as_bench_session_pool(const as_bench_session *S)
{
    return S->p;
}

void as_bench_session_info_get(const as_bench_session *S, as_bench_session_info *info)
{
    memset(info, 0, sizeof *info);
    info->shards = S->shards;
    if (S->ctx) {
        size_t b = 0;
        int64_t g = 0;
        as_eb_gpu_ctx_stats(S->ctx, &b, &g, NULL);
        info->grows = g;
        info->bytes = b;
        info->resident = as_eb_gpu_ctx_resident(S->ctx);
    } else {
        info->grows = S->grows;
        info->bytes = S->arena_cap + (S->ws ? as_eb_cpu_ws_size(S->ws_n, S->ws_D) : 0);
    }
}

const as_bench_cfg *as_bench_session_cfg(const as_bench_session *S) { return &S->c; }

int as_bench_session_threads(const as_bench_session *S) { return S->threads; }

const as_bench_timer *as_bench_session_timer(const as_bench_session *S) { return &S->timer; }

void as_bench_session_run_check(as_bench_session *S, const int64_t *ids, int64_t n, int warmup, int runs, int trim,
                                as_bench_result *r)
{
    as_bench_cfg keep = S->c;
    S->c.warmup = warmup;
    S->c.runs = runs;
    S->c.trim = trim;
    S->calibrating = 1;
    as_bench_session_run(S, ids, n, r);
    S->calibrating = 0;
    S->c = keep;
    S->shards--;            /* not one of the shards measured */
}

/* slot b's per-table arrays for a shard of n tables (kept when large enough) */
static void slot_grow(bslot *b, int64_t n)
{
    if (n > b->capT) {
        free((void *)b->tb); free(b->pos); free(b->tid); free(b->rows); free(b->w_off); free(b->gw_off); free(b->dims);
        free(b->d_off); free(b->dt); free(b->st_off);
        b->capT = n;
        b->dt = as_malloc((size_t)n * sizeof *b->dt);
        b->st_off = as_malloc((size_t)(n + 1) * sizeof *b->st_off);
        b->tb = as_malloc((size_t)n * sizeof *b->tb);
        b->pos = as_malloc((size_t)n * sizeof *b->pos);
        b->tid = as_malloc((size_t)n * sizeof *b->tid);
        b->rows = as_malloc((size_t)n * sizeof *b->rows);
        b->w_off = as_malloc((size_t)(n + 1) * sizeof *b->w_off);
        b->gw_off = as_malloc((size_t)(n + 1) * sizeof *b->gw_off);
        b->dims = as_malloc((size_t)n * sizeof *b->dims);
        b->d_off = as_malloc((size_t)(n + 1) * sizeof *b->d_off);
    }
}

/* slot b's timings for R runs (kept when large enough) */
static void slot_runs(bslot *b, int R)
{
    if (R > b->capR) {
        free(b->tot); free(b->fw); free(b->bw);
        b->capR = R;
        b->tot = as_malloc((size_t)R * sizeof *b->tot);
        b->fw = as_malloc((size_t)R * sizeof *b->fw);
        b->bw = as_malloc((size_t)R * sizeof *b->bw);
    }
}

/* the shard's tables ids[0..T) into slot b (pool positions, views, ids): they exist and
 * share a batch size, and the layout can keep their dims and the dims' sum in int32 (each
 * table's rows and dim were range-checked when its record was read). 0, or -1 with
 * res->error */
static int slot_tables(as_bench_session *S, bslot *b, const int64_t *ids, int32_t T, as_bench_result *res)
{
    const as_bpool *p = S->p;
    for (int32_t t = 0; t < T; t++) {
        const as_btable *bt = as_bpool_get(p, ids[t]);
        if (!bt) { snprintf(res->error, sizeof res->error, "table %" PRId64 " is not in the table data", ids[t]); return -1; }
        b->pos[t] = bt - p->t;
        b->tb[t] = &S->view[b->pos[t]];
        b->tid[t] = ids[t];
        if (bt->batch != b->tb[0]->batch) {
            snprintf(res->error, sizeof res->error, "tables %" PRId64 " and %" PRId64 " have different batch sizes", ids[0], ids[t]);
            return -1;
        }
    }
    int64_t sd = 0;
    for (int32_t t = 0; t < T; t++) sd += b->tb[t]->dim;
    if (sd > INT32_MAX) {
        snprintf(res->error, sizeof res->error, "does not fit: the dims of its tables sum to %" PRId64 " (at most 2^31 - 1)", sd);
        return -1;
    }
    return 0;
}

/* res->bytes: the memory the shard ids[0..n) needs alone, counted as a part holds it
 * (weights, output + gradient, bags, the backward's sort buffers; saturating sums), within
 * the memory budget. 0, or -1 with res->error */
static int shard_fits(as_bench_session *S, const int64_t *ids, int64_t n, as_bench_result *res)
{
    mem_count a;
    count_begin(S, &a);
    res->bytes = count_add(S, &a, ids, n, 1);
    if (res->bytes > (uint64_t)INT64_MAX) {
        res->bytes = UINT64_MAX;
        snprintf(res->error, sizeof res->error, "does not fit: needs more than 2^63 bytes");
        return -1;
    }
    if (over_budget(S, res->bytes)) {
        char need[32], max[32], room[32];
        human_bytes(need, sizeof need, res->bytes);
        human_bytes(max, sizeof max, S->c.max_bytes);
        human_bytes(room, sizeof room, data_room(S));
        snprintf(res->error, sizeof res->error, "does not fit: needs %s, the budget of %s leaves %s beside the process, "
                 "the table data and the cache-flush sweep", need, max, room);
        return -1;
    }
    return 0;
}

/* every table of slot b is checked once per session (bounds of its offsets and indices) */
static int slot_check(as_bench_session *S, bslot *b, int32_t T, as_bench_result *res)
{
    for (int32_t t = 0; t < T; t++)
        if (!S->checked[b->pos[t]]) {
            if (as_ebg_check_table(b->tb[t], res->error, sizeof res->error)) return -1;
            S->checked[b->pos[t]] = 1;
        }
    return 0;
}

/* Lay out the shard ids[0..n) in slot b and check it: its tables exist, share a batch
 * size, pass as_ebg_check_table (once per session) and fit the memory budget alone. Fills
 * res's shape fields (lookups, batch, sum_dim, bytes). 0, or -1 with res->error. */
static int shard_layout(as_bench_session *S, bslot *b, const int64_t *ids, int64_t n, as_bench_result *res)
{
    b->T = 0;
    b->measured = 0;
    b->held = 0;
    if (n <= 0) { snprintf(res->error, sizeof res->error, "empty shard"); return -1; }
    if (n > INT32_MAX) { snprintf(res->error, sizeof res->error, "too many tables (%" PRId64 ")", n); return -1; }
    const int32_t T = (int32_t)n;
    slot_grow(b, n);
    if (slot_tables(S, b, ids, T, res)) return -1;
    const int64_t B = b->tb[0]->batch;
    /* CUDA with types: the device's typed layout (as_eb_gpu_ctx_set_kind), which the host
       copies follow */
    int64_t wtotal;
    if (S->typed && S->c.cuda) {
        for (int32_t t = 0; t < T; t++) b->dt[t] = S->dt[b->pos[t]];
        wtotal = as_ebg_layout_typed(b->tb, T, b->dt, b->rows, b->dims, b->w_off, b->d_off);
    } else wtotal = as_ebg_layout(b->tb, T, b->rows, b->dims, b->w_off, b->d_off);
    int64_t nidx = 0, maxn = 0, maxD = 0;
    double fwd_bytes = 0;   /* a figure only: B x dim may pass 2^63 in a shard that will not fit */
    for (int32_t t = 0; t < T; t++) {
        const int64_t L = b->tb[t]->lookups;
        nidx += L;
        fwd_bytes += 4.0 * (double)B * b->dims[t] + 2.0 * b->dims[t] * (double)L;
        if (L > maxn) maxn = L;
        if (b->dims[t] > maxD) maxD = b->dims[t];
    }
    const int64_t sumD = b->d_off[T];
    res->lookups = nidx;
    res->capped = 0;
    for (int32_t t = 0; t < T; t++) res->capped += S->p->t[b->pos[t]].cap_rows > 0;
    res->batch = B;
    res->sum_dim = sumD;
    /* what it trains: its tables' weight type (mixed when they differ) */
    snprintf(res->wtype, sizeof res->wtype, "%s", as_eb_dtype_name((as_eb_dtype)S->dt[b->pos[0]]));
    for (int32_t t = 1; t < T; t++)
        if (S->dt[b->pos[t]] != S->dt[b->pos[0]]) snprintf(res->wtype, sizeof res->wtype, "mixed");
    if (shard_fits(S, ids, n, res) || slot_check(S, b, T, res)) return -1;
    slot_runs(b, S->c.runs);
    b->T = T;
    b->B = B;
    b->nidx = nidx;
    b->wtotal = wtotal;
    b->maxn = maxn;
    b->maxD = maxD;
    b->fwd_bytes = fwd_bytes;
    return 0;
}

/* CUDA (as_bench_session_last): host buffers in the arena for slot b's shard in its own
 * packed layout (w_off), for the data downloaded from the device */
static void slot_host(as_bench_session *S, bslot *b)
{
    const int32_t T = b->T;
    const uint64_t nw = line_up((uint64_t)(b->wtotal ? b->wtotal : 1) * 2);
    const uint64_t bd = line_up((uint64_t)(b->B * b->d_off[T]) * 4);
    const uint64_t no = line_up((uint64_t)(T * b->B + 1) * 8), ni = line_up((uint64_t)(b->nidx ? b->nidx : 1) * 4);
    uint8_t *a = arena_reserve(S, nw + 2 * bd + no + ni, 0);
    for (int i = 0; i < S->nslot; i++) S->slot[i].held = 0;
    b->W = (uint16_t *)a;
    b->out = (float *)(a + nw);
    b->grad = (float *)(a + nw + bd);
    b->offs = (int64_t *)(a + nw + 2 * bd);
    b->idx = (int32_t *)(a + nw + 2 * bd + no);
    as_eb_shard s = { T, b->B, b->rows, b->dims, b->w_off, b->d_off, b->offs, b->idx };
    b->s = s;
    b->held = 1;
}

/* what part_setup's steps share */
typedef struct {
    int64_t nd;             /* the part's distinct tables (S->dpos[0..nd)) */
    int64_t maxn, maxD;     /* the largest table's lookups and dim */
    uint64_t data;          /* the shards' own data (output, gradient, bags) */
    int64_t welts, nreg;    /* weight units (2 bytes), and table copies, of the part */
    int64_t sfl;            /* optimizer state floats of the part */
} part_plan;

/* the part's tables and their copies, in first-seen order (S->dpos, tcopies), and its sizes */
static void part_count(as_bench_session *S, const int *pos, int m, part_plan *pl)
{
    const uint64_t stamp = ++S->stamp;
    int64_t nd = 0, maxn = 0, maxD = 0;
    uint64_t data = 0;
    for (int q = 0; q < m; q++) {
        const bslot *b = &S->slot[pos[q]];
        const uint64_t serial = ++S->serial;
        for (int32_t t = 0; t < b->T; t++) {
            const int64_t x = b->pos[t];
            if (S->sstamp[x] != serial) { S->sstamp[x] = serial; S->socc[x] = 0; }
            else S->socc[x]++;
            if (S->tstamp[x] != stamp) { S->tstamp[x] = stamp; S->tcopies[x] = 0; S->dpos[nd++] = x; }
            if (S->socc[x] + 1 > S->tcopies[x]) S->tcopies[x] = S->socc[x] + 1;
        }
        if (b->maxn > maxn) maxn = b->maxn;
        if (b->maxD > maxD) maxD = b->maxD;
        data += shard_data_bytes(b->T, b->B, b->d_off[b->T], b->nidx);
    }
    int64_t welts = 0, nreg = 0, sfl = 0;
    for (int64_t d = 0; d < nd; d++) {
        const int64_t x = S->dpos[d];
        S->tbase[x] = welts;
        S->sbase[x] = sfl;
        welts += S->tcopies[x] * weight_stride(S, x);
        sfl += S->tcopies[x] * state_stride(S, x);
        nreg += S->tcopies[x];
    }
    pl->sfl = sfl;
    pl->nd = nd;
    pl->maxn = maxn;
    pl->maxD = maxD;
    pl->data = data;
    pl->welts = welts;
    pl->nreg = nreg;
}

/* the arena of `need` bytes and the sort buffers: these kept at the largest size seen,
 * unless that and the part would pass the budget; freed before the arena is made, so the
 * two old ones and the new ones are never held together. The arena, or NULL when the sort
 * buffers cannot be had */
static uint8_t *part_memory(as_bench_session *S, uint64_t need, int64_t maxn, int64_t maxD)
{
    int64_t wn = S->ws_n > maxn ? S->ws_n : maxn, wD = S->ws_D > maxD ? S->ws_D : maxD;
    if (over_budget(S, sat_add(need, as_eb_cpu_ws_size(wn, wD)))) { wn = maxn; wD = maxD; }
    if (S->ws && (S->ws_n != wn || S->ws_D != wD)) {
        as_eb_cpu_ws_free(S->ws);
        S->ws = NULL;
        S->ws_n = S->ws_D = 0;
    }
    uint8_t *a = arena_reserve(S, need, as_eb_cpu_ws_size(wn, wD));
    if (ws_reserve(S, wn, wD)) return NULL;
    return a;
}

/* the weights: every copy of every table in its type, filled as one layout of nreg tables */
static void part_weights(as_bench_session *S, uint16_t *W, const part_plan *pl)
{
    const as_bpool *p = S->p;
    const int64_t nd = pl->nd, nreg = pl->nreg;
    const size_t nr = (size_t)(nreg ? nreg : 1);
    int64_t *rows = as_malloc(nr * sizeof *rows);
    int64_t *woff = as_malloc((size_t)(nreg + 1) * sizeof *woff);
    int64_t *ids = as_malloc(nr * sizeof *ids);
    int32_t *dims = as_malloc(nr * sizeof *dims);
    uint8_t *dts = as_malloc(nr);
    int64_t r = 0;
    for (int64_t d = 0; d < nd; d++) {
        const as_btable *t = &p->t[S->dpos[d]];
        for (int32_t k = 0; k < S->tcopies[S->dpos[d]]; k++, r++) {
            rows[r] = as_bt_mrows(t);
            dims[r] = (int32_t)t->dim;
            ids[r] = t->id;
            dts[r] = S->dt[S->dpos[d]];
            woff[r] = S->tbase[S->dpos[d]] + k * weight_stride(S, S->dpos[d]);
        }
    }
    woff[nreg] = pl->welts;
    int32_t doff[1] = { 0 };
    as_eb_shard all = { (int32_t)nreg, 0, rows, dims, woff, doff, NULL, NULL };
    as_ebg_fill_weights_typed(W, &all, dts, ids, S->c.seed, S->threads);
    free(rows); free(woff); free(ids); free(dims); free(dts);
}

/* slot b's shard in the part: where its tables' copies lie in W (gw_off), its own data at
 * a + *off (moved past them), its bags gathered and its gradient filled */
static void part_shard(as_bench_session *S, bslot *b, uint8_t *a, uint64_t *off, uint16_t *W, float *St, int64_t welts)
{
    const int32_t T = b->T;
    const int64_t B = b->B;
    const uint64_t serial = ++S->serial;
    for (int32_t t = 0; t < T; t++) {
        const int64_t x = b->pos[t];
        if (S->sstamp[x] != serial) { S->sstamp[x] = serial; S->socc[x] = 0; }
        else S->socc[x]++;
        b->gw_off[t] = S->tbase[x] + S->socc[x] * weight_stride(S, x);
        b->st_off[t] = S->sbase[x] + S->socc[x] * state_stride(S, x);
        b->dt[t] = S->dt[x];
    }
    b->gw_off[T] = welts;
    b->st_off[T] = 0;
    const uint64_t bd = line_up((uint64_t)(B * b->d_off[T]) * 4);
    b->W = W;
    b->St = St;
    b->out = (float *)(a + *off);
    b->grad = (float *)(a + *off + bd);
    b->offs = (int64_t *)(a + *off + 2 * bd);
    b->idx = (int32_t *)(a + *off + 2 * bd + line_up((uint64_t)(T * B + 1) * 8));
    *off += shard_data_bytes(T, B, b->d_off[T], b->nidx);
    as_ebg_gather(b->offs, b->idx, b->tb, T, B, S->threads);
    as_eb_shard own = { T, B, b->rows, b->dims, b->w_off, b->d_off, b->offs, b->idx };
    as_ebg_fill_grad(b->grad, &own, b->tid, S->c.seed, S->threads);
    as_eb_shard s = { T, B, b->rows, b->dims, b->gw_off, b->d_off, b->offs, b->idx };
    b->s = s;
    b->held = 1;
}

/* CPU: set up the laid-out shards sh[pos[0..m)] (shard j in slot j) together: their data
 * laid out in the arena (every table's weights once, a copy more for a table a shard names
 * again; then each shard's output, gradient and bags), the sort buffers, then the data
 * filled (weights and gradients from the hash, bags gathered from the pool). The previous
 * part's data go. live[] gets the shards set up, in order; returns their count (0 when the
 * sort buffers cannot be had: each shard's res says so). */
static int part_setup(as_bench_session *S, const int *pos, int m, as_bench_result *res, int *live)
{
    for (int i = 0; i < S->nslot; i++) S->slot[i].held = 0;
    part_plan pl;
    part_count(S, pos, m, &pl);
    if (pl.nreg > INT32_MAX) {
        for (int q = 0; q < m; q++)
            snprintf(res[pos[q]].error, sizeof res[pos[q]].error, "does not fit: its group names %" PRId64 " tables", pl.nreg);
        return 0;
    }
    const uint64_t wbytes = (uint64_t)pl.welts * 2, sbytes = (uint64_t)pl.sfl * 4;
    const uint64_t need = sat_add(sat_add(line_up(wbytes), line_up(sbytes)), pl.data);
    uint8_t *a = part_memory(S, need, pl.maxn, pl.maxD);
    if (!a) {
        for (int q = 0; q < m; q++) snprintf(res[pos[q]].error, sizeof res[pos[q]].error, "out of memory for the sort buffers");
        return 0;
    }
    uint16_t *W = (uint16_t *)a;
    part_weights(S, W, &pl);
    /* the optimizer's state after the weights, from zero (Adagrad's sums, Adam's moments) */
    float *St = pl.sfl ? (float *)(a + line_up(wbytes)) : NULL;
    if (St) memset(St, 0, sbytes);
    S->opt.step = 0;
    /* each shard: where its tables' copies lie, its own data after the weights and state */
    uint64_t off = sat_add(line_up(wbytes), line_up(sbytes));
    for (int q = 0; q < m; q++) {
        part_shard(S, &S->slot[pos[q]], a, &off, W, St, pl.welts);
        live[q] = pos[q];
    }
    return m;
}

/* CPU: one iteration of slot b's shard (forward, backward + optimizer: fp16 + SGD, or the
 * typed op of ebopt.h, Adam's step counting the iterations of the part); timed: after a
 * cache flush, into run i of its timings. Returns the kernel milliseconds. */
static double shard_iter(as_bench_session *S, bslot *b, int timed, int i)
{
    if (S->typed) {
        char err[128];
        S->opt.step++;
        /* the constants are ours and the rate checked: Adam's bias corrections cannot fail */
        if (S->opt.kind == AS_EB_ADAM) (void)as_eb_opt_prepare(&S->opt, err, sizeof err);
    }
    if (timed) cpu_flush(S->c.flush_bytes, S->threads);
    double t0 = as_now();
    if (S->typed) as_eb_forward_typed_cpu(b->out, b->W, &b->s, b->dt, S->threads);
    else as_eb_forward_cpu(b->out, b->W, &b->s, S->threads);
    double t1 = as_now();
    if (!S->typed) as_eb_backward_sgd_cpu(b->W, b->grad, &b->s, S->c.lr, S->ws, S->threads);
    else if (as_eb_backward_typed_cpu(b->W, b->St, b->grad, &b->s, b->dt, b->st_off, &S->opt, S->ws, S->threads))
        as_oom("the backward's sort buffers");
    double t2 = as_now();
    if (timed) {
        b->fw[i] = (t1 - t0) * 1e3;
        b->bw[i] = (t2 - t1) * 1e3;
        b->tot[i] = (t2 - t0) * 1e3;
    }
    return (t2 - t0) * 1e3;
}

/* the statistics of slot b's R timed runs into res (ok = 1); a timer hook (the fake timer)
 * may replace the runs' times first */
static void shard_finish(as_bench_session *S, bslot *b, const int64_t *ids, int64_t n, int attempt, int last,
                         as_bench_result *res)
{
    const as_bench_cfg *c = &S->c;
    const int R = c->runs;
    double *tot = b->tot, *fw = b->fw, *bw = b->bw;
    if (S->timer.runs) {
        /* a timer hook (the fake timer) may replace the runs' times */
        const as_bench_timed tm = { ids, n, attempt, b->nidx, S->group - 1, S->calibrating, last };
        S->timer.runs(S->timer.ctx, &tm, fw, bw, tot, R);
    }
    double d1, d2, d3, d4;
    res->spread = as_stats_trimmed_spread(tot, R, c->trim);
    as_stats_trimmed(tot, R, c->trim, &res->cost_ms, &res->median_ms, &res->min_ms, &res->max_ms, &res->rel_std);
    as_stats_trimmed(fw, R, c->trim, &res->fwd_ms, &d1, &d2, &d3, &d4);
    as_stats_trimmed(bw, R, c->trim, &res->bwd_ms, &d1, &d2, &d3, &d4);
    res->gbps = res->cost_ms > 0 ? 3.0 * b->fwd_bytes / (res->cost_ms * 1e-3) / 1e9 : 0;
    res->ok = 1;
    b->measured = 1;
}

static void result_init(as_bench_session *S, as_bench_result *res)
{
    memset(res, 0, sizeof *res);
    res->spread = NAN;
    res->ref_ms = NAN;
    res->drift = NAN;
    res->attempts = 1;
    res->together = 1;
    res->threads = S->c.cuda ? 0 : S->threads;
    if (!S->c.cuda) snprintf(res->device, sizeof res->device, "%s", S->cpu_name);
}

/* CUDA: shard sh laid out in slot b and its set-up queued on the device (behind whatever
 * the context's stream holds); 0 ok, -1 with res's error */
static int cuda_prepare(as_bench_session *S, const as_bench_shardref *sh, bslot *b, as_bench_result *res,
                        as_eb_gpu **g)
{
    *g = NULL;
    if (shard_layout(S, b, sh->ids, sh->n, res)) return -1;
    if (as_eb_gpu_ctx_shard(S->ctx, b->pos, b->T, S->c.seed, g, res->error, sizeof res->error)) return -1;
    as_eb_gpu_info(*g, res->device, sizeof res->device, &res->sm_clock_mhz, NULL);
    return 0;
}

/* CUDA: the shards sh[0..k), the whole protocol on the device, pipelined: while the device
 * measures shard j, the host lays out shard j+1 and queues its set-up and its measurement
 * behind shard j's (slots 0 and 1 alternate), then reads shard j's times; so the device
 * goes from one shard to the next without waiting for the host. A shard's wall time runs
 * from the end of the previous shard's reading (the group's start for the first) to the
 * end of its own, so the group's wall time is shared out without gaps or overlaps. Only
 * the last shard's data stay on the device (as_bench_session_last). */
static void run_cuda_group(as_bench_session *S, const as_bench_shardref *sh, int k, as_bench_result *res)
{
    slots_reserve(S, 2);
    S->last = -1;
    S->glast = k;
    S->last_g = NULL;
    double t_prev = as_now();
    for (int j = 0; j < k; j++) result_init(S, &res[j]);
    as_eb_gpu *g = NULL, *gn = NULL;
    S->shards++;
    int started = cuda_prepare(S, &sh[0], &S->slot[0], &res[0], &g) == 0 &&
                  as_eb_gpu_measure_start(g, S->c.warmup, S->c.runs, S->c.lr, res[0].error, sizeof res[0].error) == 0;
    for (int j = 0; j < k; j++) {
        bslot *b = &S->slot[j & 1];
        as_bench_result *r = &res[j];
        int ok = started;
        /* the next shard set up and started behind this one while the device measures it */
        started = 0;
        if (j + 1 < k) {
            S->shards++;
            as_bench_result *rn = &res[j + 1];
            started = cuda_prepare(S, &sh[j + 1], &S->slot[(j + 1) & 1], rn, &gn) == 0 &&
                      as_eb_gpu_measure_start(gn, S->c.warmup, S->c.runs, S->c.lr, rn->error, sizeof rn->error) == 0;
        }
        double busy = 0;
        if (ok && as_eb_gpu_measure_end(g, b->fw, b->bw, &busy, r->error, sizeof r->error)) {
            busy = 0;
            ok = 0;
        }
        if (ok) {
            as_eb_gpu_overhead(g, &r->setup_ms, &r->flush_ms);
            for (int i = 0; i < S->c.runs; i++) b->tot[i] = b->fw[i] + b->bw[i];
            shard_finish(S, b, sh[j].ids, sh[j].n, sh[j].attempt, j == k - 1, r);
            if (j == k - 1) {
                S->last = j & 1;
                S->last_g = g;
            }
        }
        r->busy_ms = busy;
        const double now = as_now();
        r->wall_ms = (now - t_prev) * 1e3;
        t_prev = now;
        if (gn) g = gn;
        gn = NULL;
    }
}

/* CPU: the laid-out shards sh[pos[0..m)] (shard j sits in slot j; its results ok so far)
 * set up together (part_setup) and measured in rounds; wall time shared out evenly */
static void run_cpu_rounds(as_bench_session *S, const as_bench_shardref *sh, as_bench_result *res, const int *pos, int m)
{
    const double wall0 = as_now();
    int *live = as_malloc((size_t)m * sizeof *live);
    for (int q = 0; q < m; q++) res[pos[q]].busy_ms = 0;
    const int nl = part_setup(S, pos, m, res, live);
    for (int q = 0; q < nl; q++)
        for (int i = 0; i < S->c.warmup; i++) res[live[q]].busy_ms += shard_iter(S, &S->slot[live[q]], 0, 0);
    /* round i runs every shard once, starting one further along each round */
    for (int i = 0; i < S->c.runs; i++)
        for (int q = 0; q < nl; q++) {
            const int j = live[(i + q) % nl];
            res[j].busy_ms += shard_iter(S, &S->slot[j], 1, i);
        }
    for (int q = 0; q < nl; q++) {
        const int j = live[q];
        shard_finish(S, &S->slot[j], sh[j].ids, sh[j].n, sh[j].attempt, j == S->glast - 1, &res[j]);
        res[j].together = nl;
        S->last = j;
    }
    const double wall = (as_now() - wall0) * 1e3;
    for (int q = 0; q < m; q++) res[pos[q]].wall_ms = wall / m;
    free(live);
}

void as_bench_session_run_group(as_bench_session *S, const as_bench_shardref *sh, int k, as_bench_result *res)
{
    if (k <= 0) return;
    S->group++;
    if (S->c.cuda) {
        run_cuda_group(S, sh, k, res);
        return;
    }
    slots_reserve(S, k);
    S->last = -1;
    S->glast = k;
    S->last_g = NULL;
    /* lay every shard out (shard j in slot j); then measure them in parts: runs of
       consecutive laid-out shards whose data fit the budget held together, each table's
       weights once (a shard alone always may: shard_layout checked it). One part's data
       are held at a time. */
    int *ok = as_malloc((size_t)k * 2 * sizeof *ok), *pos = ok + k;
    for (int j = 0; j < k; j++) {
        result_init(S, &res[j]);
        S->shards++;
        ok[j] = shard_layout(S, &S->slot[j], sh[j].ids, sh[j].n, &res[j]) == 0;
    }
    mem_count a;
    count_begin(S, &a);
    int m = 0;
    for (int j = 0; j < k; j++) {
        if (!ok[j]) continue;
        if (m && over_group(S, count_add(S, &a, sh[j].ids, sh[j].n, 0))) {
            run_cpu_rounds(S, sh, res, pos, m);
            m = 0;
            count_begin(S, &a);
        }
        count_add(S, &a, sh[j].ids, sh[j].n, 1);
        pos[m++] = j;
    }
    if (m) run_cpu_rounds(S, sh, res, pos, m);
    free(ok);
}

void as_bench_session_run(as_bench_session *S, const int64_t *ids, int64_t n, as_bench_result *res)
{
    as_bench_session_run_attempt(S, ids, n, 0, res);
}

void as_bench_session_run_attempt(as_bench_session *S, const int64_t *ids, int64_t n, int attempt, as_bench_result *res)
{
    as_bench_shardref sh = { ids, n, attempt };
    as_bench_session_run_group(S, &sh, 1, res);
}

static int slot_data(as_bench_session *S, int j, as_eb_shard *shard, const uint16_t **W, const float **grad,
                     const float **out, char *err, size_t errlen);

int as_bench_session_last(as_bench_session *S, as_eb_shard *shard, const uint16_t **W, const float **grad,
                          const float **out, char *err, size_t errlen)
{
    if (S->last < 0) { snprintf(err, errlen, "no shard measured yet"); return -1; }
    return slot_data(S, S->last, shard, W, grad, out, err, errlen);
}

int as_bench_session_group_data(as_bench_session *S, int j, as_eb_shard *shard, const uint16_t **W, const float **grad,
                                const float **out, char *err, size_t errlen)
{
    if (S->ctx) {
        if (j == S->glast - 1) return as_bench_session_last(S, shard, W, grad, out, err, errlen);
        snprintf(err, errlen, "CUDA: only the last shard's data are kept");
        return -1;
    }
    if (j < 0 || j >= S->glast || !S->slot[j].measured || !S->slot[j].held) {
        snprintf(err, errlen, "shard %d of the last group was not measured, or its data went with its part", j);
        return -1;
    }
    return slot_data(S, j, shard, W, grad, out, err, errlen);
}

static int slot_data(as_bench_session *S, int j, as_eb_shard *shard, const uint16_t **W, const float **grad,
                     const float **out, char *err, size_t errlen)
{
    bslot *b = &S->slot[j];
    if (S->ctx) {
        slot_host(S, b);
        if (as_eb_gpu_download(S->last_g, b->out, b->W, err, errlen) ||
            as_eb_gpu_download_inputs(S->last_g, b->offs, b->idx, b->grad, err, errlen))
            return -1;
    } else if (!b->held) {
        snprintf(err, errlen, "the data of shard %d went with its part", j);
        return -1;
    }
    *shard = b->s;
    *W = b->W;
    *grad = b->grad;
    *out = b->out;
    return 0;
}

/* ---- the measuring loop's figures ------------------------------------------------------ */

void as_bench_tally_add(as_bench_tally *t, const as_bench_result *r)
{
    t->shards++;
    if (r->ok) t->ok++;
    t->busy_ms += r->busy_ms;
    t->setup_ms += r->setup_ms;
    t->flush_ms += r->flush_ms;
    t->refdev_ms += r->refdev_ms;
    const int first = r->passes > 1 ? r->passes : 1;  /* one first attempt per pass */
    if (r->attempts > first) { t->remeasured++; t->extra += r->attempts - first; }
    if (r->ok && r->noisy) t->noisy++;
    if (r->ok && isfinite(r->spread)) {
        if (t->nspread == t->capspread) {
            t->capspread = t->capspread ? 2 * t->capspread : 256;
            t->spreads = as_realloc(t->spreads, (size_t)t->capspread * sizeof *t->spreads);
        }
        t->spreads[t->nspread++] = r->spread;
    }
}

void as_bench_tally_free(as_bench_tally *t)
{
    if (!t) return;
    free(t->spreads);
    t->spreads = NULL;
    t->nspread = t->capspread = 0;
}

double as_bench_busy_fraction(const as_bench_tally *t, double wall_s)
{
    return wall_s > 0 ? t->busy_ms / (wall_s * 1e3) : 0;
}

double as_bench_shards_per_s(const as_bench_tally *t, double wall_s)
{
    return wall_s > 0 ? (double)t->shards / wall_s : 0;
}

void as_bench_summary(char *buf, size_t len, const as_bench_tally *t, double wall_s)
{
    int k = snprintf(buf, len, "%" PRId64 " shard%s in %.2f s: %.2f shards/s; device busy %.1f %% of the measuring loop "
                     "(warm-up + timed kernels %.2f s)", t->shards, t->shards == 1 ? "" : "s", wall_s,
                     as_bench_shards_per_s(t, wall_s), 100.0 * as_bench_busy_fraction(t, wall_s), t->busy_ms / 1e3);
    if (k > 0 && (size_t)k < len && t->ok < t->shards) {
        const int q = snprintf(buf + k, len - (size_t)k, "; %" PRId64 " not measured", t->shards - t->ok);
        if (q > 0) k += q;
    }
    const double other = t->setup_ms + t->flush_ms + t->refdev_ms;
    /* the split is the CUDA path's (device set-up and flushes timed by events) */
    if (k > 0 && (size_t)k < len && t->setup_ms + t->flush_ms > 0 && wall_s > 0) {
        const double w = wall_s * 1e3, rest = w - t->busy_ms - other;
        snprintf(buf + k, len - (size_t)k,
                 "; the rest of the wall time: set-up kernels %.1f %%, cache flushes %.1f %%, reference shards "
                 "%.1f %%, host and gaps %.1f %%", 100 * t->setup_ms / w, 100 * t->flush_ms / w,
                 100 * t->refdev_ms / w, 100 * rest / w);
    }
}

void as_bench_costrec(as_costrec *rec, const as_bench_cfg *c, const as_bench_result *r)
{
    const as_fhas ok = r->ok ? AS_F_SET : AS_F_NIL;
#define CR_NUM(f) rec->f = (as_fnum){ r->f, ok }
    CR_NUM(cost_ms);
    CR_NUM(fwd_ms);
    CR_NUM(bwd_ms);
    CR_NUM(median_ms);
    CR_NUM(min_ms);
    CR_NUM(max_ms);
    CR_NUM(rel_std);
    CR_NUM(gbps);
#undef CR_NUM
    rec->spread = (as_fnum){ r->spread, r->ok && isfinite(r->spread) ? AS_F_SET : AS_F_NIL };
    rec->attempts = (as_fint){ r->attempts, AS_F_SET };
    rec->passes = (as_fint){ r->passes > 1 ? r->passes : 1, AS_F_SET };
    rec->together = (as_fint){ r->together, AS_F_SET };
    rec->drift = (as_fnum){ r->drift, r->ok && isfinite(r->drift) ? AS_F_SET : AS_F_NIL };
    rec->noisy = (as_fint){ r->ok && r->noisy, AS_F_SET };
    rec->drift_refused = (as_fint){ r->ok && r->ref_bad, AS_F_SET };
    rec->pass_ms = (double *)r->pass_ms;
    rec->npass = r->npass > 1 ? r->npass : 0;
    rec->pass_has = r->npass > 1 ? AS_F_SET : AS_F_NIL;
    const double ps = as_bench_pass_spread(r->pass_ms, r->npass > 1 ? r->npass : 0);
    rec->pass_spread = (as_fnum){ ps, isfinite(ps) ? AS_F_SET : AS_F_NIL };
    rec->lookups = (as_fint){ r->lookups, AS_F_SET };
    rec->row_cap = (as_fint){ c->row_cap, c->row_cap > 0 ? AS_F_SET : AS_F_NIL };
    rec->capped = (as_fint){ r->capped, AS_F_SET };
    rec->batch = (as_fint){ r->batch, AS_F_SET };
    rec->sum_dim = (as_fint){ r->sum_dim, AS_F_SET };
    rec->bytes = (as_fint){ (int64_t)r->bytes, AS_F_SET };
    rec->device = (as_fstr){ r->device, AS_F_SET };
    rec->device_kind = (as_fstr){ c->cuda ? "cuda" : "cpu", AS_F_SET };
    rec->threads = (as_fint){ r->threads, AS_F_SET };
    rec->sm_clock_mhz = (as_fint){ r->sm_clock_mhz, AS_F_SET };
    rec->protocol[0] = c->warmup;
    rec->protocol[1] = c->runs;
    rec->protocol[2] = c->trim;
    rec->protocol_has = AS_F_SET;
    rec->error = (as_fstr){ r->ok ? NULL : r->error, r->ok ? AS_F_NIL : AS_F_SET };
    /* the kind trained, when not fp16 weights with SGD */
    const int trained = c->wtype != AS_EB_F16 || c->optim != AS_EB_SGD;
    rec->weights_type = (as_fstr){ trained ? (r->wtype[0] ? r->wtype : "fp16") : NULL, trained ? AS_F_SET : AS_F_ABSENT };
    rec->optimizer = (as_fstr){ trained ? as_eb_optim_name(c->optim) : NULL, trained ? AS_F_SET : AS_F_ABSENT };
}

double as_bench_pass_spread(const double *v, int n)
{
    double s = 0, ss = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > 0) { s += v[i]; m++; }
    if (m < 2) return NAN;
    const double mean = s / m;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > 0) ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / m) / mean;
}

void as_bench_result_scale(as_bench_result *r, double f)
{
    if (!r->ok || !(f > 0) || !isfinite(f)) return;
    r->cost_ms /= f;
    r->fwd_ms /= f;
    r->bwd_ms /= f;
    r->median_ms /= f;
    r->min_ms /= f;
    r->max_ms /= f;
    r->gbps *= f;
    r->drift = f;
}

uint64_t as_bench_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (uint64_t)kb * 1024;
            }
        fclose(f);
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

int as_bench_device(const char *spec, as_bench_cfg *c, char *err, size_t errlen)
{
    int dev, code = as_device_parse(spec, &dev, err, errlen);
    if (code) return code;
    c->cuda = dev >= 0;
    c->device = dev >= 0 ? dev : 0;
    return 0;
}
