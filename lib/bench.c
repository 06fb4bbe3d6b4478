/* bench.c - the micro-benchmark; see bench.h.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. */
#include "bench.h"
#include "common.h"
#include "device.h"
#include "ebgen.h"
#include "embbag.h"
#include "featurize.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- the pool of table data ------------------------------------------------------- */

static void pool_add(as_bpool *p, const as_btable *t)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->t = as_realloc(p->t, (size_t)p->cap * sizeof *p->t);
    }
    p->t[p->n++] = *t;
}

int as_bpool_load(as_bpool *p, const char *file, const uint8_t *want, int64_t want_n, int ids_only,
                  char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    as_reader *r = as_reader_open(file);
    if (!r) { snprintf(err, errlen, "%s: cannot open", file); return -1; }
    as_record rec;
    int rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (!as_rec_is(&rec, "table")) continue;
        as_btable t;
        memset(&t, 0, sizeof t);
        as_array off, idx;
        char e2[512];
        if (as_table_parse(&rec.obj, &t.id, &t.rows, &t.batch, &t.dim, &off, &idx, NULL, 0, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", file, rec.index, e2);
            goto fail;
        }
        if (want && (t.id >= want_n || !want[t.id])) continue;
        t.lookups = idx.n;
        if (!ids_only) {
            t.offsets = as_malloc((size_t)(t.batch + 1) * sizeof *t.offsets);
            as_array_get_i64(&off, 0, t.batch + 1, t.offsets);
            for (int64_t b = 0; b < t.batch; b++)
                if (t.offsets[b + 1] < t.offsets[b]) {
                    snprintf(err, errlen, "%s: record %" PRIu64 ": table %" PRId64 ": offsets decrease at bag %" PRId64, file, rec.index, t.id, b);
                    free(t.offsets);
                    goto fail;
                }
            t.indices = as_malloc((size_t)(t.lookups ? t.lookups : 1) * sizeof *t.indices);
            if (idx.dtype == AS_DT_I32) {
                memcpy(t.indices, idx.data, (size_t)t.lookups * 4);
            } else {
                for (int64_t i = 0; i < t.lookups; i++) {
                    int64_t v;
                    as_array_get_i64(&idx, i, 1, &v);
                    if (v < 0 || v > INT32_MAX) {
                        snprintf(err, errlen, "%s: record %" PRIu64 ": table %" PRId64 ": index %" PRId64 " does not fit int32", file, rec.index, t.id, v);
                        free(t.offsets);
                        free(t.indices);
                        goto fail;
                    }
                    t.indices[i] = (int32_t)v;
                }
            }
        }
        pool_add(p, &t);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", as_reader_error(r));
        goto fail;
    }
    as_reader_close(r);
    r = NULL;
    /* ids are at most AS_MAX_TABLE_ID (as_table_parse): maxid + 1 cannot overflow */
    p->maxid = -1;
    for (int64_t i = 0; i < p->n; i++) if (p->t[i].id > p->maxid) p->maxid = p->t[i].id;
    p->index = as_calloc((size_t)(p->maxid + 1), sizeof *p->index);
    for (int64_t i = 0; i < p->n; i++) {
        if (p->index[p->t[i].id]) {
            snprintf(err, errlen, "%s: table %" PRId64 " appears twice", file, p->t[i].id);
            goto fail;
        }
        p->index[p->t[i].id] = i + 1;
    }
    return 0;
fail:
    as_reader_close(r);
    as_bpool_free(p);
    return -1;
}

const as_btable *as_bpool_get(const as_bpool *p, int64_t id)
{
    if (id < 0 || id > p->maxid || !p->index[id]) return NULL;
    return &p->t[p->index[id] - 1];
}

void as_bpool_free(as_bpool *p)
{
    for (int64_t i = 0; i < p->n; i++) { free(p->t[i].offsets); free(p->t[i].indices); }
    free(p->t);
    free(p->index);
    memset(p, 0, sizeof *p);
}

/* ---- statistics --------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void as_bench_stats(const double *v, int n, int trim, double *tmean, double *median, double *min, double *max, double *rel_std)
{
    double *s = as_malloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_d);
    if (2 * trim >= n) trim = (n - 1) / 2;
    double sum = 0;
    for (int i = trim; i < n - trim; i++) sum += s[i];
    *tmean = sum / (n - 2 * trim);
    *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *min = s[0];
    *max = s[n - 1];
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += s[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
    *rel_std = n > 1 && mean > 0 ? sqrt(var / (n - 1)) / mean : 0;
    free(s);
}

/* ---- CPU cache flush ---------------------------------------------------------------- */

static volatile double flush_sink;

static void cpu_flush(uint64_t want)
{
    static double *buf;
    static size_t n;
    if (!buf) {
        if (!want) {
            long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
            if (llc <= 0) llc = 32L << 20;
            want = 2 * (uint64_t)llc;
            if (want < ((uint64_t)64 << 20)) want = (uint64_t)64 << 20;
        }
        n = (size_t)(want / sizeof(double));
        if (n < 1024) n = 1024;
        buf = as_malloc(n * sizeof *buf);
        for (size_t i = 0; i < n; i++) buf[i] = (double)i;
    }
    double s = 0;
    for (size_t i = 0; i < n; i += 8) s += buf[i];
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

struct as_bench_session {
    as_bench_cfg c;
    const as_bpool *p;
    int threads;
    char cpu_name[128];
    as_eb_table *view;              /* [p->n] the pool's tables as embbag.h / ebgen.h see them */
    uint8_t *checked;               /* [p->n] passed as_ebg_check_table */
    /* per-shard scratch, grown */
    int64_t capT;
    const as_eb_table **tb;
    int64_t *pos, *tid, *rows, *w_off;
    int32_t *dims, *d_off;
    int capR;
    double *tot, *fw, *bw;
    /* CPU: the shard's data, grown (capacities in elements) */
    uint16_t *W;
    float *grad, *out;
    int64_t *offs;
    int32_t *idx;
    size_t capW, capG, capOut, capO, capI;
    as_eb_cpu_ws *ws;
    int64_t ws_n, ws_D;             /* lookups of one table and dim the workspace is sized for */
    int64_t grows, shards;
    /* the last shard measured (as_bench_session_last) */
    int32_t last_T;
    int64_t last_B;
    as_eb_gpu *last_g;
    /* CUDA */
    as_eb_gpu_ctx *ctx;
};

/* buf holding at least `need` elements of `elt` bytes: kept when large enough, else
 * replaced (contents lost) with 25 % headroom. Cache-line aligned, so that with
 * as_ebg_layout's table starts a row of D = 32 halves is one line, whatever malloc does. */
static void *grow(void *buf, size_t *cap, size_t need, size_t elt, int64_t *grows)
{
    if (buf && need <= *cap) return buf;
    free(buf);
    size_t n = need + need / 4;
    if (n < 16) n = 16;
    *cap = n;
    (*grows)++;
    void *p = NULL;
    if (posix_memalign(&p, 64, (n * elt + 63) & ~(size_t)63)) as_die(AS_EXIT_ENV, "out of memory (%zu bytes)", n * elt);
    return p;
}

as_bench_session *as_bench_session_new(const as_bench_cfg *c, const as_bpool *p, char *err, size_t errlen)
{
    as_bench_session *S = as_calloc(1, sizeof *S);
    S->c = *c;
    S->p = p;
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
    for (int64_t i = 0; i < p->n; i++) {
        const as_btable *t = &p->t[i];
        as_eb_table v = { t->id, t->rows, t->batch, t->dim, t->lookups, t->offsets, t->indices };
        S->view[i] = v;
    }
    if (c->cuda && as_eb_gpu_ctx_create(&S->ctx, c->device, S->view, p->n, !c->per_shard_upload, err, errlen)) {
        as_bench_session_free(S);
        return NULL;
    }
    return S;
}

void as_bench_session_free(as_bench_session *S)
{
    if (!S) return;
    as_eb_gpu_ctx_destroy(S->ctx);
    if (S->ws) as_eb_cpu_ws_free(S->ws);
    free(S->view); free(S->checked);
    free((void *)S->tb); free(S->pos); free(S->tid); free(S->rows); free(S->w_off); free(S->dims); free(S->d_off);
    free(S->tot); free(S->fw); free(S->bw);
    free(S->W); free(S->grad); free(S->out); free(S->offs); free(S->idx);
    free(S);
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
        info->bytes = S->capW * 2 + S->capG * 4 + S->capOut * 4 + S->capO * 8 + S->capI * 4 + (uint64_t)S->ws_n * 16;
    }
}

void as_bench_session_run(as_bench_session *S, const int64_t *ids, int64_t n, as_bench_result *res)
{
    const double wall0 = as_now();
    double busy = 0;
    const as_bench_cfg *c = &S->c;
    const as_bpool *p = S->p;
    memset(res, 0, sizeof *res);
    const int threads = S->threads;
    res->threads = c->cuda ? 0 : threads;
    if (!c->cuda) snprintf(res->device, sizeof res->device, "%s", S->cpu_name);
    S->shards++;
    S->last_T = 0;
    S->last_g = NULL;
    if (n <= 0) { snprintf(res->error, sizeof res->error, "empty shard"); goto done; }
    if (n > INT32_MAX) { snprintf(res->error, sizeof res->error, "too many tables (%" PRId64 ")", n); goto done; }
    const int32_t T = (int32_t)n;
    if (n > S->capT) {
        free((void *)S->tb); free(S->pos); free(S->tid); free(S->rows); free(S->w_off); free(S->dims); free(S->d_off);
        S->capT = n;
        S->tb = as_malloc((size_t)n * sizeof *S->tb);
        S->pos = as_malloc((size_t)n * sizeof *S->pos);
        S->tid = as_malloc((size_t)n * sizeof *S->tid);
        S->rows = as_malloc((size_t)n * sizeof *S->rows);
        S->w_off = as_malloc((size_t)(n + 1) * sizeof *S->w_off);
        S->dims = as_malloc((size_t)n * sizeof *S->dims);
        S->d_off = as_malloc((size_t)(n + 1) * sizeof *S->d_off);
    }
    for (int32_t t = 0; t < T; t++) {
        const as_btable *bt = as_bpool_get(p, ids[t]);
        if (!bt) { snprintf(res->error, sizeof res->error, "table %" PRId64 " is not in the table data", ids[t]); goto done; }
        S->pos[t] = bt - p->t;
        S->tb[t] = &S->view[S->pos[t]];
        S->tid[t] = ids[t];
        if (bt->batch != S->tb[0]->batch) {
            snprintf(res->error, sizeof res->error, "tables %" PRId64 " and %" PRId64 " have different batch sizes", ids[0], ids[t]);
            goto done;
        }
    }
    const int64_t B = S->tb[0]->batch;
    {
        /* the layout keeps dims and their sum in int32: refuse a shard whose dims do not fit
           (each table's rows and dim were range-checked when its record was read) */
        int64_t sd = 0;
        for (int32_t t = 0; t < T; t++) sd += S->tb[t]->dim;
        if (sd > INT32_MAX) {
            snprintf(res->error, sizeof res->error, "does not fit: the dims of its tables sum to %" PRId64 " (at most 2^31 - 1)", sd);
            goto done;
        }
    }
    const int64_t wtotal = as_ebg_layout(S->tb, T, S->rows, S->dims, S->w_off, S->d_off);
    int64_t nidx = 0, wpacked = 0, maxn = 0, maxD = 0;
    double fwd_bytes = 0;   /* a figure only: B x dim may pass 2^63 in a shard that will not fit */
    for (int32_t t = 0; t < T; t++) {
        const int64_t L = S->tb[t]->lookups;
        nidx += L;
        wpacked += S->rows[t] * S->dims[t];
        fwd_bytes += 4.0 * (double)B * S->dims[t] + 2.0 * S->dims[t] * (double)L;
        if (L > maxn) maxn = L;
        if (S->dims[t] > maxD) maxD = S->dims[t];
    }
    const int64_t sumD = S->d_off[T];
    res->lookups = nidx;
    res->batch = B;
    res->sum_dim = sumD;
    {
        /* weights, output + gradient, indices, offsets, the backward's sort buffers; checked
           products (B comes from a record, only the record cap bounds it) */
        uint64_t a, b, d, e, tot;
        int ovf = __builtin_mul_overflow((uint64_t)wpacked, 2, &a) | __builtin_mul_overflow((uint64_t)B, (uint64_t)sumD, &b) |
                  __builtin_mul_overflow(b, 8, &b) | __builtin_mul_overflow((uint64_t)nidx, 20, &d) |
                  __builtin_mul_overflow((uint64_t)T, (uint64_t)B, &e) | __builtin_add_overflow(e, 1, &e) |
                  __builtin_mul_overflow(e, 8, &e) | __builtin_add_overflow(a, b, &tot) | __builtin_add_overflow(tot, d, &tot) |
                  __builtin_add_overflow(tot, e, &tot);
        if (ovf || tot > (uint64_t)INT64_MAX) {
            res->bytes = UINT64_MAX;
            snprintf(res->error, sizeof res->error, "does not fit: needs more than 2^63 bytes");
            goto done;
        }
        res->bytes = tot;
    }
    if (!c->cuda && c->max_bytes && res->bytes > c->max_bytes) {
        snprintf(res->error, sizeof res->error, "does not fit: needs %.2f GiB, the budget is %.2f GiB",
                 res->bytes / 1073741824.0, c->max_bytes / 1073741824.0);
        goto done;
    }
    /* every table is checked once per session (bounds of its offsets and indices) */
    for (int32_t t = 0; t < T; t++)
        if (!S->checked[S->pos[t]]) {
            if (as_ebg_check_table(S->tb[t], res->error, sizeof res->error)) goto done;
            S->checked[S->pos[t]] = 1;
        }
    const int R = c->runs;
    if (R > S->capR) {
        free(S->tot); free(S->fw); free(S->bw);
        S->capR = R;
        S->tot = as_malloc((size_t)R * sizeof *S->tot);
        S->fw = as_malloc((size_t)R * sizeof *S->fw);
        S->bw = as_malloc((size_t)R * sizeof *S->bw);
    }
    double *tot = S->tot, *fw = S->fw, *bw = S->bw;
    if (c->cuda) {
        as_eb_gpu *g = NULL;
        if (as_eb_gpu_ctx_shard(S->ctx, S->pos, T, c->seed, &g, res->error, sizeof res->error)) goto done;
        as_eb_gpu_info(g, res->device, sizeof res->device, &res->sm_clock_mhz, NULL);
        if (as_eb_gpu_measure(g, c->warmup, R, c->lr, fw, bw, &busy, res->error, sizeof res->error)) {
            busy = 0;
            goto done;
        }
        for (int i = 0; i < R; i++) tot[i] = fw[i] + bw[i];
        S->last_g = g;
    } else {
        const size_t outn = (size_t)(B * sumD);
        S->offs = grow(S->offs, &S->capO, (size_t)(T * B + 1), sizeof *S->offs, &S->grows);
        S->idx = grow(S->idx, &S->capI, (size_t)(nidx ? nidx : 1), sizeof *S->idx, &S->grows);
        S->W = grow(S->W, &S->capW, (size_t)(wtotal ? wtotal : 1), sizeof *S->W, &S->grows);
        S->grad = grow(S->grad, &S->capG, outn ? outn : 1, sizeof *S->grad, &S->grows);
        S->out = grow(S->out, &S->capOut, outn ? outn : 1, sizeof *S->out, &S->grows);
        if (!S->ws || maxn > S->ws_n || maxD > S->ws_D) {
            /* the backward's sort buffers, sized for the largest table and dim seen so far */
            if (S->ws) as_eb_cpu_ws_free(S->ws);
            if (maxn > S->ws_n) S->ws_n = maxn;
            if (maxD > S->ws_D) S->ws_D = maxD;
            int32_t d1 = (int32_t)S->ws_D, doff[2] = { 0, d1 };
            int64_t r1 = 1, wo[2] = { 0, S->ws_D }, of[2] = { 0, S->ws_n };
            as_eb_shard big = { 1, 1, &r1, &d1, wo, doff, of, NULL };
            S->ws = as_eb_cpu_ws_new(&big);
            S->grows++;
            if (!S->ws) { S->ws_n = S->ws_D = 0; snprintf(res->error, sizeof res->error, "out of memory for the sort buffers"); goto done; }
        }
        as_ebg_gather(S->offs, S->idx, S->tb, T, B, threads);
        as_eb_shard s = { T, B, S->rows, S->dims, S->w_off, S->d_off, S->offs, S->idx };
        as_ebg_fill_weights(S->W, &s, S->tid, c->seed, threads);
        as_ebg_fill_grad(S->grad, &s, S->tid, c->seed, threads);
        for (int i = 0; i < c->warmup; i++) {
            double t0 = as_now();
            as_eb_forward_cpu(S->out, S->W, &s, threads);
            as_eb_backward_sgd_cpu(S->W, S->grad, &s, c->lr, S->ws, threads);
            busy += (as_now() - t0) * 1e3;
        }
        for (int i = 0; i < R; i++) {
            cpu_flush(c->flush_bytes);
            double t0 = as_now();
            as_eb_forward_cpu(S->out, S->W, &s, threads);
            double t1 = as_now();
            as_eb_backward_sgd_cpu(S->W, S->grad, &s, c->lr, S->ws, threads);
            double t2 = as_now();
            fw[i] = (t1 - t0) * 1e3;
            bw[i] = (t2 - t1) * 1e3;
            tot[i] = (t2 - t0) * 1e3;
            busy += tot[i];
        }
    }
    {
        double d1, d2, d3, d4;
        as_bench_stats(tot, R, c->trim, &res->cost_ms, &res->median_ms, &res->min_ms, &res->max_ms, &res->rel_std);
        as_bench_stats(fw, R, c->trim, &res->fwd_ms, &d1, &d2, &d3, &d4);
        as_bench_stats(bw, R, c->trim, &res->bwd_ms, &d1, &d2, &d3, &d4);
        res->gbps = res->cost_ms > 0 ? 3.0 * fwd_bytes / (res->cost_ms * 1e-3) / 1e9 : 0;
        res->ok = 1;
        S->last_T = T;
        S->last_B = B;
    }
done:
    res->busy_ms = busy;
    res->wall_ms = (as_now() - wall0) * 1e3;
}

int as_bench_session_last(as_bench_session *S, as_eb_shard *shard, const uint16_t **W, const float **grad,
                          const float **out, char *err, size_t errlen)
{
    if (!S->last_T) { snprintf(err, errlen, "no shard measured yet"); return -1; }
    const int32_t T = S->last_T;
    const int64_t B = S->last_B, sumD = S->d_off[T], wtotal = S->w_off[T];
    int64_t nidx = 0;
    for (int32_t t = 0; t < T; t++) nidx += S->tb[t]->lookups;
    if (S->ctx) {
        const size_t outn = (size_t)(B * sumD);
        S->offs = grow(S->offs, &S->capO, (size_t)(T * B + 1), sizeof *S->offs, &S->grows);
        S->idx = grow(S->idx, &S->capI, (size_t)(nidx ? nidx : 1), sizeof *S->idx, &S->grows);
        S->W = grow(S->W, &S->capW, (size_t)(wtotal ? wtotal : 1), sizeof *S->W, &S->grows);
        S->grad = grow(S->grad, &S->capG, outn ? outn : 1, sizeof *S->grad, &S->grows);
        S->out = grow(S->out, &S->capOut, outn ? outn : 1, sizeof *S->out, &S->grows);
        if (as_eb_gpu_download(S->last_g, S->out, S->W, err, errlen) ||
            as_eb_gpu_download_inputs(S->last_g, S->offs, S->idx, S->grad, err, errlen))
            return -1;
    }
    as_eb_shard s = { T, B, S->rows, S->dims, S->w_off, S->d_off, S->offs, S->idx };
    *shard = s;
    *W = S->W;
    *grad = S->grad;
    *out = S->out;
    return 0;
}

/* ---- one shard, on a kept session ------------------------------------------------------ */

static pthread_mutex_t shard_mu = PTHREAD_MUTEX_INITIALIZER;
static as_bench_session *shard_sess;
static const as_bpool *shard_pool;
static const as_btable *shard_pool_t;
static int64_t shard_pool_n;

void as_bench_shard(const as_bench_cfg *c, const as_bpool *p, const int64_t *ids, int64_t n, as_bench_result *r)
{
    pthread_mutex_lock(&shard_mu);
    as_bench_session *S = shard_sess;
    if (S && (shard_pool != p || shard_pool_t != p->t || shard_pool_n != p->n || S->c.cuda != c->cuda ||
              (c->cuda && (S->c.device != c->device || S->c.per_shard_upload != c->per_shard_upload)) ||
              S->c.threads != c->threads)) {
        as_bench_session_free(S);
        S = shard_sess = NULL;
    }
    if (!S) {
        char err[256];
        S = shard_sess = as_bench_session_new(c, p, err, sizeof err);
        if (!S) {
            memset(r, 0, sizeof *r);
            snprintf(r->error, sizeof r->error, "%s", err);
            pthread_mutex_unlock(&shard_mu);
            return;
        }
        shard_pool = p;
        shard_pool_t = p->t;
        shard_pool_n = p->n;
    }
    S->c = *c;   /* the protocol's values may differ between calls; the workspace does not care */
    as_bench_session_run(S, ids, n, r);
    pthread_mutex_unlock(&shard_mu);
}

void as_bench_shard_release(void)
{
    pthread_mutex_lock(&shard_mu);
    as_bench_session_free(shard_sess);
    shard_sess = NULL;
    shard_pool = NULL;
    shard_pool_t = NULL;
    shard_pool_n = 0;
    pthread_mutex_unlock(&shard_mu);
}

/* ---- the measuring loop's figures ------------------------------------------------------ */

void as_bench_tally_add(as_bench_tally *t, const as_bench_result *r)
{
    t->shards++;
    if (r->ok) t->ok++;
    t->busy_ms += r->busy_ms;
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
    if (k > 0 && (size_t)k < len && t->ok < t->shards)
        snprintf(buf + k, len - (size_t)k, "; %" PRId64 " not measured", t->shards - t->ok);
}

void as_bench_pack_result(msgpack_packer *pk, const as_bench_cfg *c, const as_bench_result *r)
{
#define PK_MS(k, v) do { as_pack_str(pk, k); if (r->ok) msgpack_pack_double(pk, v); else msgpack_pack_nil(pk); } while (0)
    PK_MS("cost_ms", r->cost_ms);
    PK_MS("fwd_ms", r->fwd_ms);
    PK_MS("bwd_ms", r->bwd_ms);
    PK_MS("median_ms", r->median_ms);
    PK_MS("min_ms", r->min_ms);
    PK_MS("max_ms", r->max_ms);
    PK_MS("rel_std", r->rel_std);
    PK_MS("gbps", r->gbps);
#undef PK_MS
    as_pack_kv_i64(pk, "lookups", r->lookups);
    as_pack_kv_i64(pk, "batch", r->batch);
    as_pack_kv_i64(pk, "sum_dim", r->sum_dim);
    as_pack_kv_i64(pk, "bytes", (int64_t)r->bytes);
    as_pack_kv_str(pk, "device", r->device);
    as_pack_kv_str(pk, "device_kind", c->cuda ? "cuda" : "cpu");
    as_pack_kv_i64(pk, "threads", r->threads);
    as_pack_kv_i64(pk, "sm_clock_mhz", r->sm_clock_mhz);
    as_pack_str(pk, "protocol");
    msgpack_pack_array(pk, 3);
    msgpack_pack_int(pk, c->warmup);
    msgpack_pack_int(pk, c->runs);
    msgpack_pack_int(pk, c->trim);
    as_pack_str(pk, "error");
    if (r->ok) msgpack_pack_nil(pk);
    else as_pack_str(pk, r->error);
}

int as_bench_device(const char *spec, as_bench_cfg *c, char *err, size_t errlen)
{
    if (!strcmp(spec, "cpu")) { c->cuda = 0; return 0; }
    if (!strcmp(spec, "auto")) { c->cuda = as_cuda_device_count() > 0; c->device = 0; return 0; }
    if (!strncmp(spec, "cuda", 4) && (spec[4] == 0 || spec[4] == ':')) {
        int64_t d = 0;
        if (spec[4] == ':' && as_parse_i64(spec + 5, 0, 1024, &d)) {
            snprintf(err, errlen, "--device: '%s' is not cuda:N", spec);
            return AS_EXIT_USAGE;
        }
        int n = as_cuda_device_count();
        if (n == 0) { snprintf(err, errlen, "--device %s: no working CUDA device (%s)", spec, as_device_build_info()); return AS_EXIT_ENV; }
        if (d >= n) { snprintf(err, errlen, "--device %s: only %d CUDA device(s)", spec, n); return AS_EXIT_ENV; }
        c->cuda = 1;
        c->device = (int)d;
        return 0;
    }
    snprintf(err, errlen, "--device: '%s' is not auto, cpu, cuda or cuda:N", spec);
    return AS_EXIT_USAGE;
}
