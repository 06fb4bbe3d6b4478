/* bench.c - the micro-benchmark; see bench.h.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. */
#include "bench.h"
#include "common.h"
#include "device.h"
#include "embbag.h"
#include "featurize.h"

#include <inttypes.h>
#include <math.h>
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
            as_reader_close(r);
            return -1;
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
                    as_reader_close(r);
                    return -1;
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
                        as_reader_close(r);
                        return -1;
                    }
                    t.indices[i] = (int32_t)v;
                }
            }
        }
        pool_add(p, &t);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", as_reader_error(r));
        as_reader_close(r);
        return -1;
    }
    as_reader_close(r);
    p->maxid = -1;
    for (int64_t i = 0; i < p->n; i++) if (p->t[i].id > p->maxid) p->maxid = p->t[i].id;
    p->index = as_calloc((size_t)(p->maxid + 1), sizeof *p->index);
    for (int64_t i = 0; i < p->n; i++) {
        if (p->index[p->t[i].id]) {
            snprintf(err, errlen, "%s: table %" PRId64 " appears twice", file, p->t[i].id);
            return -1;
        }
        p->index[p->t[i].id] = i + 1;
    }
    return 0;
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

/* ---- one shard ---------------------------------------------------------------------- */

static void fill_weights(uint16_t *w, int64_t n, uint64_t seed)
{
    /* small random fp16 values, |w| in [2^-8, 2^-4): sign, exponent 7..10, mantissa */
    as_rng r;
    as_rng_seed(&r, seed, 0x77);
    int64_t i = 0;
    while (i < n) {
        uint64_t x = as_rng_next(&r);
        for (int k = 0; k < 4 && i < n; k++, i++) {
            uint16_t h = (uint16_t)(x >> (16 * k));
            w[i] = (uint16_t)((h & 0x83ff) | ((7 + ((h >> 10) & 3)) << 10));
        }
    }
}

void as_bench_shard(const as_bench_cfg *c, const as_bpool *p, const int64_t *ids, int64_t n, as_bench_result *res)
{
    memset(res, 0, sizeof *res);
    int threads = c->threads;
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    res->threads = c->cuda ? 0 : threads;
    if (!c->cuda) as_cpu_name(res->device, sizeof res->device, threads);
    if (n <= 0) { snprintf(res->error, sizeof res->error, "empty shard"); return; }
    int32_t T = (int32_t)n;
    const as_btable **tb = as_malloc((size_t)T * sizeof *tb);
    for (int32_t t = 0; t < T; t++) {
        tb[t] = as_bpool_get(p, ids[t]);
        if (!tb[t]) { snprintf(res->error, sizeof res->error, "table %" PRId64 " is not in the table data", ids[t]); free(tb); return; }
        if (tb[t]->batch != tb[0]->batch) {
            snprintf(res->error, sizeof res->error, "tables %" PRId64 " and %" PRId64 " have different batch sizes", ids[0], ids[t]);
            free(tb);
            return;
        }
    }
    int64_t B = tb[0]->batch;
    int64_t *rows = as_malloc((size_t)T * sizeof *rows), *w_off = as_malloc((size_t)(T + 1) * sizeof *w_off);
    int32_t *dims = as_malloc((size_t)T * sizeof *dims), *d_off = as_malloc((size_t)(T + 1) * sizeof *d_off);
    int64_t nidx = 0, fwd_bytes = 0;
    w_off[0] = 0;
    d_off[0] = 0;
    for (int32_t t = 0; t < T; t++) {
        rows[t] = tb[t]->rows;
        dims[t] = (int32_t)tb[t]->dim;
        w_off[t + 1] = w_off[t] + rows[t] * dims[t];
        d_off[t + 1] = d_off[t] + dims[t];
        nidx += tb[t]->lookups;
        fwd_bytes += 4 * B * dims[t] + 2 * (int64_t)dims[t] * tb[t]->lookups;
    }
    int64_t sumD = d_off[T];
    res->lookups = nidx;
    res->batch = B;
    res->sum_dim = sumD;
    uint64_t bytes = (uint64_t)w_off[T] * 2 + (uint64_t)B * (uint64_t)sumD * 8 + (uint64_t)nidx * 4 +
                     (uint64_t)(T * B + 1) * 8 + (uint64_t)nidx * 16;
    res->bytes = bytes;
    int64_t *offs = NULL;
    int32_t *idx = NULL;
    uint16_t *W = NULL;
    float *out = NULL, *grad = NULL;
    as_eb_cpu_ws *ws = NULL;
    if (!c->cuda && c->max_bytes && bytes > c->max_bytes) {
        snprintf(res->error, sizeof res->error, "does not fit: needs %.2f GiB, the budget is %.2f GiB",
                 bytes / 1073741824.0, c->max_bytes / 1073741824.0);
        goto out;
    }
    offs = as_malloc((size_t)(T * B + 1) * sizeof *offs);
    idx = as_malloc((size_t)(nidx ? nidx : 1) * sizeof *idx);
    int64_t base = 0;
    for (int32_t t = 0; t < T; t++) {
        for (int64_t b = 0; b < B; b++) offs[t * B + b] = base + tb[t]->offsets[b];
        memcpy(idx + base, tb[t]->indices, (size_t)tb[t]->lookups * sizeof *idx);
        base += tb[t]->lookups;
    }
    offs[T * B] = base;
    as_eb_shard s = { T, B, rows, dims, w_off, d_off, offs, idx };
    if (as_eb_validate(&s, res->error, sizeof res->error)) goto out;
    W = as_malloc((size_t)(w_off[T] ? w_off[T] : 1) * sizeof *W);
    fill_weights(W, w_off[T], c->seed);
    grad = as_malloc((size_t)(B * sumD > 0 ? B * sumD : 1) * sizeof *grad);
    {
        as_rng r;
        as_rng_seed(&r, c->seed, 0x67);
        for (int64_t i = 0; i < B * sumD; i++) grad[i] = (float)(as_rng_uniform(&r) - 0.5) * 0.01f;
    }
    int R = c->runs;
    double *tot = as_malloc((size_t)R * sizeof *tot), *fw = as_malloc((size_t)R * sizeof *fw), *bw = as_malloc((size_t)R * sizeof *bw);
    if (c->cuda) {
        as_eb_gpu *g = NULL;
        if (as_eb_gpu_create(&g, &s, W, grad, c->device, res->error, sizeof res->error)) goto out_t;
        double copy_gbps = 0;
        as_eb_gpu_info(g, res->device, sizeof res->device, &res->sm_clock_mhz, &copy_gbps);
        float ms;
        for (int i = 0; i < c->warmup; i++)
            if (as_eb_gpu_forward(g, &ms, res->error, sizeof res->error) ||
                as_eb_gpu_backward_sgd(g, c->lr, &ms, res->error, sizeof res->error)) { as_eb_gpu_destroy(g); goto out_t; }
        for (int i = 0; i < R; i++) {
            float f1, b1;
            if (as_eb_gpu_flush_cache(g, res->error, sizeof res->error) ||
                as_eb_gpu_forward(g, &f1, res->error, sizeof res->error) ||
                as_eb_gpu_backward_sgd(g, c->lr, &b1, res->error, sizeof res->error)) { as_eb_gpu_destroy(g); goto out_t; }
            fw[i] = f1;
            bw[i] = b1;
            tot[i] = (double)f1 + (double)b1;
        }
        as_eb_gpu_destroy(g);
    } else {
        out = as_malloc((size_t)(B * sumD > 0 ? B * sumD : 1) * sizeof *out);
        ws = as_eb_cpu_ws_new(&s);
        for (int i = 0; i < c->warmup; i++) {
            as_eb_forward_cpu(out, W, &s, threads);
            as_eb_backward_sgd_cpu(W, grad, &s, c->lr, ws, threads);
        }
        for (int i = 0; i < R; i++) {
            cpu_flush(c->flush_bytes);
            double t0 = as_now();
            as_eb_forward_cpu(out, W, &s, threads);
            double t1 = as_now();
            as_eb_backward_sgd_cpu(W, grad, &s, c->lr, ws, threads);
            double t2 = as_now();
            fw[i] = (t1 - t0) * 1e3;
            bw[i] = (t2 - t1) * 1e3;
            tot[i] = (t2 - t0) * 1e3;
        }
    }
    {
        double d1, d2, d3, d4;
        as_bench_stats(tot, R, c->trim, &res->cost_ms, &res->median_ms, &res->min_ms, &res->max_ms, &res->rel_std);
        as_bench_stats(fw, R, c->trim, &res->fwd_ms, &d1, &d2, &d3, &d4);
        as_bench_stats(bw, R, c->trim, &res->bwd_ms, &d1, &d2, &d3, &d4);
        res->gbps = res->cost_ms > 0 ? 3.0 * (double)fwd_bytes / (res->cost_ms * 1e-3) / 1e9 : 0;
        res->ok = 1;
    }
out_t:
    free(tot);
    free(fw);
    free(bw);
out:
    if (ws) as_eb_cpu_ws_free(ws);
    free(out);
    free(grad);
    free(W);
    free(idx);
    free(offs);
    free(rows);
    free(w_off);
    free(dims);
    free(d_off);
    free(tb);
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
