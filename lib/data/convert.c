/* convert.c - MetaSyn / prototype / synthetic data to table records; --list and --dump.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables. See convert.h. */
#include "convert.h"
#include <errno.h>
#include "common.h"
#include "half.h"
#include "mcfgrec.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((int64_t)1 << 20)

int64_t as_table_dim(const as_convert_opts *o, int64_t id)
{
    if (o->ndims == 1) return o->dims[0];
    as_rng r;
    as_rng_seed(&r, o->seed, 0x64696d0000000000ULL ^ (uint64_t)id);   /* "dim" stream per table */
    return o->dims[as_rng_below(&r, o->ndims)];
}

/* ---- MetaSyn ------------------------------------------------------------------------ */

static int is_int_dtype(pt_dtype d)
{
    return d == PT_UINT8 || d == PT_INT8 || d == PT_INT16 || d == PT_INT32 || d == PT_INT64;
}

typedef struct {
    pt_file *f;
    char *err;
    size_t errlen;
    void *out;            /* the current table's indices, reused across tables */
    size_t outcap;        /* bytes */
} ctx;

/* A data tensor may not repeat stored values: stride 0 in a dimension longer than 1 (an
 * expanded tensor) would let a few stored bytes stand for any number of tables or lookups. */
static int refuse_stride0(ctx *c, const pt_tensor *t, const char *what)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1 && t->stride[d] == 0) {
            snprintf(c->err, c->errlen, "%s (%s) has stride 0 in dimension %d of size %" PRId64
                     ": an expanded tensor repeats stored values and is not lookup data", what,
                     t->path[0] ? t->path : ".", d, t->shape[d]);
            return -1;
        }
    return 0;
}

/* Tensors that neither overlap nor repeat hold at most the bytes of the storages under them.
 * More means overlapping strides, shared storages or a tensor referenced many times, which
 * would let the output outgrow the input without bound. free_elems: fewer elements than
 * this pass anyway (--dump's allowance for legitimately expanded tensors; 0 for data). */
static int check_no_repeats(ctx *c, const int *ti, int n, int64_t free_elems, const char *what)
{
    pt_file *f = c->f;
    uint8_t *seen = as_calloc((size_t)pt_nstorages(f) + 1, 1);
    uint64_t need = 0, have = 0;
    int64_t elems = 0;
    int over = 0;
    for (int i = 0; i < n; i++) {
        const pt_tensor *t = pt_get(f, ti[i]);
        uint64_t b;
        if (__builtin_mul_overflow((uint64_t)t->numel, (uint64_t)pt_dtype_size(t->dtype), &b) ||
            __builtin_add_overflow(need, b, &need) || __builtin_add_overflow(elems, t->numel, &elems))
            over = 1;
        if (!seen[t->storage]) {
            seen[t->storage] = 1;
            have += pt_storage_bytes(f, t->storage);
        }
    }
    free(seen);
    if (!over && (need <= have || elems <= free_elems)) return 0;
    char more[96] = "";
    if (free_elems > 0) snprintf(more, sizeof more, " (and more than the %" PRId64 " elements allowed any file)", free_elems);
    if (over)
        snprintf(c->err, c->errlen, "%s hold more than 2^63 elements or bytes but their storages only %" PRIu64
                 " bytes: overlapping, shared, expanded or repeated tensors would repeat stored data", what, have);
    else
        snprintf(c->err, c->errlen, "%s hold %" PRIu64 " bytes of data but their storages only %" PRIu64 "%s: "
                 "overlapping, shared, expanded or repeated tensors would repeat stored data", what, need, have, more);
    return -1;
}

static void *out_buf(ctx *c, size_t bytes)
{
    if (bytes > c->outcap) {
        free(c->out);
        c->outcap = bytes + bytes / 4;
        c->out = as_malloc(c->outcap);
    }
    return c->out;
}

/* the smallest (at most 0) and the largest (at least -1) of v[0..n) */
static void minmax_i32(const int32_t *v, int64_t n, int32_t *lo_out, int32_t *hi_out)
{
    int32_t lo = 0, hi = -1;
#pragma omp simd reduction(min : lo) reduction(max : hi)
    for (int64_t i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    *lo_out = lo;
    *hi_out = hi;
}

/* Read tensor ti's elements [start, start+n) as indices, check >= 0, into the reusable
 * buffer as int32 (or int64 when some index needs it). */
static void *read_indices(ctx *c, int ti, int64_t start, int64_t n, int64_t table, as_dtype *dt, int64_t *maxv)
{
    pt_dtype src = pt_get(c->f, ti)->dtype;
    int64_t mx = -1;
    if (src == PT_INT32) {
        /* the common case (MetaSyn): copy raw, then scan */
        int32_t *o = out_buf(c, (size_t)(n ? n : 1) * sizeof *o);
        for (int64_t s = 0; s < n; s += CHUNK) {
            int64_t m = n - s < CHUNK ? n - s : CHUNK;
            if (pt_read_raw(c->f, ti, start + s, m, o + s, c->err, c->errlen)) return NULL;
            int32_t lo, hi;
            minmax_i32(o + s, m, &lo, &hi);
            if (lo < 0) {
                for (int64_t i = 0; i < m; i++)
                    if (o[s + i] < 0) {
                        snprintf(c->err, c->errlen, "indices[%" PRId64 "] = %d is negative (table %" PRId64 ", lookup %" PRId64 ")",
                                 start + s + i, o[s + i], table, s + i);
                        return NULL;
                    }
            }
            if (hi > mx) mx = hi;
        }
        *dt = AS_DT_I32;
        *maxv = mx;
        return o;
    }
    /* other integer dtypes: through int64, narrowed to int32 when every index fits */
    int64_t *o64 = out_buf(c, (size_t)(n ? n : 1) * sizeof *o64);
    for (int64_t s = 0; s < n; s += CHUNK) {
        int64_t m = n - s < CHUNK ? n - s : CHUNK;
        if (pt_read_i64(c->f, ti, start + s, m, o64 + s, c->err, c->errlen)) return NULL;
        for (int64_t i = 0; i < m; i++) {
            int64_t v = o64[s + i];
            if (v < 0) {
                snprintf(c->err, c->errlen, "indices[%" PRId64 "] = %" PRId64 " is negative (table %" PRId64 ", lookup %" PRId64 ")",
                         start + s + i, v, table, s + i);
                return NULL;
            }
            if (v > mx) mx = v;
        }
    }
    *maxv = mx;
    if (mx <= INT32_MAX - 1) {
        int32_t *o32 = (int32_t *)o64;   /* narrowing in place, front to back, is safe */
        for (int64_t i = 0; i < n; i++) o32[i] = (int32_t)o64[i];
        *dt = AS_DT_I32;
        return o32;
    }
    *dt = AS_DT_I64;
    return o64;
}

/* write converted table t (largest index mx), as itself or as o->meta's table */
static int write_out(ctx *c, const as_convert_opts *o, as_writer *w, int64_t t, int64_t mx, int64_t B,
                     const int64_t *off, const void *idx, as_dtype dt)
{
    if (!o->meta) {
        as_write_table(w, t, mx + 1 > 1 ? mx + 1 : 1, B, as_table_dim(o, t), off, idx, dt, o->source);
        return 0;
    }
    if (mx >= o->out_rows) {
        snprintf(c->err, c->errlen, "table %" PRId64 " of the file has index %" PRId64 ", not below num_embeddings %" PRId64,
                 t, mx, o->out_rows);
        return -1;
    }
    as_write_table_meta(w, o->out_id, o->out_rows, B, o->out_dim, off, idx, dt, o->source, o->meta);
    return 0;
}

/* the tables to convert of the file's T: --tables' (each below T), or the first --first, or
 * all; -1 with c->err */
static int64_t selected(ctx *c, const as_convert_opts *o, int64_t T)
{
    int64_t n = o->select ? (int64_t)o->nselect : (o->first > 0 && o->first < T ? o->first : T);
    for (size_t i = 0; o->select && i < o->nselect; i++)
        if (o->select[i] >= T) {
            snprintf(c->err, c->errlen, "--tables: table %" PRId64 " does not exist (the file has %" PRId64 " tables)", o->select[i], T);
            return -1;
        }
    return n;
}

/* MetaSyn's tensors (indices ti, offsets to, lengths tl) checked as a whole: integer, 1-D
 * indices and offsets, lengths [T, B], no repeated data, offsets T*B+1 from 0 to the number
 * of indices (*nidx); 0 or -1 with c->err */
static int metasyn_check(ctx *c, int ti, int to, int tl, int64_t *T, int64_t *B, int64_t *nidx)
{
    pt_file *f = c->f;
    const pt_tensor *I = pt_get(f, ti), *O = pt_get(f, to), *L = pt_get(f, tl);
    if (!is_int_dtype(I->dtype) || !is_int_dtype(O->dtype) || !is_int_dtype(L->dtype)) {
        snprintf(c->err, c->errlen, "MetaSyn tensors must be integer (indices %s, offsets %s, lengths %s)",
                 pt_dtype_name(I->dtype), pt_dtype_name(O->dtype), pt_dtype_name(L->dtype));
        return -1;
    }
    if (I->ndim != 1 || O->ndim != 1) {
        snprintf(c->err, c->errlen, "MetaSyn indices and offsets must be 1-D (got %d-D and %d-D)", I->ndim, O->ndim);
        return -1;
    }
    if (refuse_stride0(c, I, "indices") || refuse_stride0(c, O, "offsets") || refuse_stride0(c, L, "lengths")) return -1;
    int all[3] = { ti, to, tl };
    if (check_no_repeats(c, all, 3, 0, "indices, offsets and lengths")) return -1;
    if (L->ndim == 2) { *T = L->shape[0]; *B = L->shape[1]; }
    else {
        snprintf(c->err, c->errlen, "MetaSyn lengths must be 2-D [tables, batch] (got %d-D)", L->ndim);
        return -1;
    }
    if (*B <= 0) { snprintf(c->err, c->errlen, "MetaSyn batch size is 0"); return -1; }
    if (O->numel != *T * *B + 1) {
        snprintf(c->err, c->errlen, "offsets has %" PRId64 " entries but lengths is [%" PRId64 ", %" PRId64 "]: expected T*B+1 = %" PRId64,
                 O->numel, *T, *B, *T * *B + 1);
        return -1;
    }
    *nidx = I->numel;
    int64_t first_last[2];
    if (pt_read_i64(f, to, 0, 1, &first_last[0], c->err, c->errlen)) return -1;
    if (pt_read_i64(f, to, *T * *B, 1, &first_last[1], c->err, c->errlen)) return -1;
    if (first_last[0] != 0) {
        snprintf(c->err, c->errlen, "offsets[0] = %" PRId64 ", expected 0", first_last[0]);
        return -1;
    }
    if (first_last[1] != *nidx) {
        snprintf(c->err, c->errlen, "offsets[%" PRId64 "] = %" PRId64 " (the last) differs from the number of indices %" PRId64,
                 *T * *B, first_last[1], *nidx);
        return -1;
    }
    return 0;
}

/* MetaSyn's table t (batch B of nidx indices in all): its offsets (off: B+1) and lengths
 * (len: B) checked against each other, rebased to 0, and the table written; 0 or -1 with
 * c->err */
static int metasyn_table(ctx *c, int ti, int to, int tl, const as_convert_opts *o, as_writer *w, int64_t t, int64_t B,
                         int64_t nidx, int64_t *off, int64_t *len)
{
    pt_file *f = c->f;
    if (pt_read_i64(f, to, t * B, B + 1, off, c->err, c->errlen)) return -1;
    if (pt_read_i64(f, tl, t * B, B, len, c->err, c->errlen)) return -1;
    for (int64_t b = 0; b < B; b++) {
        if (off[b + 1] < off[b]) {
            snprintf(c->err, c->errlen, "offsets[%" PRId64 "] = %" PRId64 " is less than offsets[%" PRId64 "] = %" PRId64
                     " (table %" PRId64 ", bag %" PRId64 "): offsets must be non-decreasing",
                     t * B + b + 1, off[b + 1], t * B + b, off[b], t, b);
            return -1;
        }
        if (off[b + 1] - off[b] != len[b]) {
            snprintf(c->err, c->errlen, "lengths[%" PRId64 "][%" PRId64 "] = %" PRId64 " but offsets give %" PRId64
                     " (offsets[%" PRId64 "] = %" PRId64 ", offsets[%" PRId64 "] = %" PRId64 ")",
                     t, b, len[b], off[b + 1] - off[b], t * B + b, off[b], t * B + b + 1, off[b + 1]);
            return -1;
        }
    }
    if (off[0] < 0 || off[B] > nidx) {
        snprintf(c->err, c->errlen, "table %" PRId64 ": offsets [%" PRId64 ", %" PRId64 "] fall outside the %" PRId64 " indices",
                 t, off[0], off[B], nidx);
        return -1;
    }
    int64_t base = off[0];
    for (int64_t b = 0; b <= B; b++) off[b] -= base;
    as_dtype dt;
    int64_t mx;
    void *idx = read_indices(c, ti, base, off[B], t, &dt, &mx);
    if (!idx) return -1;
    return write_out(c, o, w, t, mx, B, off, idx, dt);
}

static int convert_metasyn(ctx *c, int ti, int to, int tl, const as_convert_opts *o, as_writer *w,
                           as_progress *p, int64_t *written)
{
    int64_t T, B, nidx;
    if (metasyn_check(c, ti, to, tl, &T, &B, &nidx)) return -1;
    int64_t n = selected(c, o, T);
    if (n < 0) return -1;
    if (n == 0) return 0;   /* (with T = 0, B is bounded by nothing: allocate nothing) */
    int64_t *off = as_malloc((size_t)(B + 1) * sizeof *off);
    int64_t *len = as_malloc((size_t)B * sizeof *len);
    int rc = -1;
    p->total = (double)n;
    for (int64_t k = 0; k < n; k++) {
        if (metasyn_table(c, ti, to, tl, o, w, o->select ? o->select[k] : k, B, nidx, off, len)) goto out;
        (*written)++;
        as_progress_update(p, (double)(k + 1));
    }
    rc = 0;
out:
    free(off);
    free(len);
    return rc;
}

/* ---- the prototype's processed file ------------------------------------------------- */

/* the whole pool of T tables: no expanded tensors, none repeating stored data; 0 or -1 with
 * c->err */
static int prototype_check_pool(ctx *c, int64_t T)
{
    pt_file *f = c->f;
    char path[300];
    int *data = as_malloc((size_t)(2 * T + 1) * sizeof *data), nd = 0;
    for (int64_t t = 0; t < T; t++) {
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, k ? "['lS_offsets'][%" PRId64 "]" : "['lS_indices'][%" PRId64 "]", t);
            int i = pt_find(f, path);
            if (i < 0) continue;
            if (refuse_stride0(c, pt_get(f, i), k ? "lS_offsets" : "lS_indices")) { free(data); return -1; }
            data[nd++] = i;
        }
    }
    int bad = check_no_repeats(c, data, nd, 0, "lS_indices and lS_offsets");
    free(data);
    return bad ? -1 : 0;
}

/* Which offsets convention? The prototype slices MetaSyn's offsets per table into B+1
   entries ending at the table's total; DLRM's lS_o has B entries (the end implied). With
   B+1 entries every table ends at its total, so decide over the whole pool: 1 when all of
   its T tables have the total */
static int prototype_with_total(ctx *c, int64_t T)
{
    pt_file *f = c->f;
    char path[300];
    int with_total = T > 0;
    for (int64_t t = 0; t < T && with_total; t++) {
        snprintf(path, sizeof path, "['lS_offsets'][%" PRId64 "]", t);
        int to = pt_find(f, path);
        snprintf(path, sizeof path, "['lS_indices'][%" PRId64 "]", t);
        int ti = pt_find(f, path);
        if (to < 0 || ti < 0) { with_total = 0; break; }
        const pt_tensor *O = pt_get(f, to);
        int64_t last;
        if (O->numel < 2 || pt_read_i64(f, to, O->numel - 1, 1, &last, c->err, c->errlen) || last != pt_get(f, ti)->numel)
            with_total = 0;
    }
    return with_total;
}

/* the prototype's table t: its offsets checked (with_total: they end with the indices'
 * count) and the table written; 0 or -1 with c->err */
static int prototype_table(ctx *c, const as_convert_opts *o, as_writer *w, int64_t t, int with_total)
{
    pt_file *f = c->f;
    char path[300];
    snprintf(path, sizeof path, "['lS_indices'][%" PRId64 "]", t);
    int ti = pt_find(f, path);
    snprintf(path, sizeof path, "['lS_offsets'][%" PRId64 "]", t);
    int to = pt_find(f, path);
    if (to < 0) {
        snprintf(c->err, c->errlen, "table %" PRId64 " has indices but no offsets (%s)", t, path);
        return -1;
    }
    const pt_tensor *I = pt_get(f, ti), *O = pt_get(f, to);
    if (!is_int_dtype(I->dtype) || !is_int_dtype(O->dtype) || I->ndim != 1 || O->ndim != 1) {
        snprintf(c->err, c->errlen, "table %" PRId64 ": lS_indices and lS_offsets must be 1-D integer tensors", t);
        return -1;
    }
    int64_t nidx = I->numel, no = O->numel;
    int64_t *off = as_malloc((size_t)(no + 1) * sizeof *off);
    if (pt_read_i64(f, to, 0, no, off, c->err, c->errlen)) { free(off); return -1; }
    /* DLRM convention: B offsets, the first 0, the end implied by the indices count;
       a trailing total (B+1 entries ending at nidx) is accepted too */
    int64_t B = with_total ? no - 1 : no;
    off[B] = nidx;
    if (no == 0 || off[0] != 0) {
        snprintf(c->err, c->errlen, "table %" PRId64 ": lS_offsets[0] = %" PRId64 ", expected 0", t, no ? off[0] : -1);
        free(off);
        return -1;
    }
    for (int64_t b = 0; b < B; b++)
        if (off[b + 1] < off[b] || off[b + 1] > nidx) {
            snprintf(c->err, c->errlen, "table %" PRId64 ": lS_offsets[%" PRId64 "] = %" PRId64 " %s (previous %" PRId64 ", %" PRId64 " indices)",
                     t, b + 1, off[b + 1], off[b + 1] > nidx ? "exceeds the indices count" : "decreases", off[b], nidx);
            free(off);
            return -1;
        }
    as_dtype dt;
    int64_t mx;
    void *idx = read_indices(c, ti, 0, nidx, t, &dt, &mx);
    int rc = !idx || write_out(c, o, w, t, mx, B, off, idx, dt) ? -1 : 0;
    free(off);
    return rc;
}

static int convert_prototype(ctx *c, const as_convert_opts *o, as_writer *w, as_progress *p, int64_t *written)
{
    pt_file *f = c->f;
    int64_t T = 0;
    char path[300];
    for (;;) {
        snprintf(path, sizeof path, "['lS_indices'][%" PRId64 "]", T);
        if (pt_find(f, path) < 0) break;
        T++;
    }
    int64_t n = selected(c, o, T);
    if (n < 0) return -1;
    if (prototype_check_pool(c, T)) return -1;
    int with_total = prototype_with_total(c, T);
    p->total = (double)n;
    for (int64_t k = 0; k < n; k++) {
        if (prototype_table(c, o, w, o->select ? o->select[k] : k, with_total)) return -1;
        (*written)++;
        as_progress_update(p, (double)(k + 1));
    }
    return 0;
}

int64_t as_convert_torch(pt_file *f, const as_convert_opts *o, as_writer *w, as_progress *p, char *err, size_t errlen)
{
    ctx c = { f, err, errlen, NULL, 0 };
    int64_t written = 0;
    int rc;
    const char *kind = pt_root_kind(f);
    if (!strcmp(kind, "tuple") && pt_ntensors(f) == 3 && pt_find(f, "[0]") >= 0 && pt_find(f, "[1]") >= 0 && pt_find(f, "[2]") >= 0) {
        rc = convert_metasyn(&c, pt_find(f, "[0]"), pt_find(f, "[1]"), pt_find(f, "[2]"), o, w, p, &written);
    } else if (!strcmp(kind, "dict") && pt_find(f, "['lS_indices'][0]") >= 0) {
        rc = convert_prototype(&c, o, w, p, &written);
    } else {
        snprintf(err, errlen, "not a MetaSyn file (a tuple of indices, offsets, lengths) nor a prototype dict "
                 "('lS_indices', 'lS_offsets'): the root is a %s holding %d tensor(s)", kind, pt_ntensors(f));
        rc = -1;
    }
    free(c.out);
    return rc ? -1 : written;
}

/* ---- synthetic ---------------------------------------------------------------------- */

int64_t as_convert_synth(const as_synth_cfg *cfg, const as_convert_opts *o, as_writer *w, as_progress *p,
                         char *err, size_t errlen)
{
    int64_t T = cfg->tables;
    int64_t n = o->select ? (int64_t)o->nselect : (o->first > 0 && o->first < T ? o->first : T);
    for (size_t i = 0; o->select && i < o->nselect; i++)
        if (o->select[i] >= T) {
            snprintf(err, errlen, "--select: table %" PRId64 " does not exist (the pool has %" PRId64 " tables)", o->select[i], T);
            return -1;
        }
    p->total = (double)n;
    for (int64_t k = 0; k < n; k++) {
        int64_t t = o->select ? o->select[k] : k;
        as_synth_table tb;
        if (as_synth_table_gen(cfg, t, &tb)) {
            snprintf(err, errlen, "synthetic table %" PRId64 ": generation failed", t);
            return -1;
        }
        as_write_table(w, t, tb.rows, tb.batch, as_table_dim(o, t), tb.offsets, tb.indices, AS_DT_I32, "synth");
        as_synth_free(&tb);
        as_progress_update(p, (double)(k + 1));
    }
    return n;
}

/* ---- --config ---------------------------------------------------------------------- */

/* table i of a config, its lookups those of table t->lookups_table of t->lookups_file */
static int config_file_table(const as_mcfg_table *t, const as_table_meta *meta, int64_t i, as_writer *w, char *err,
                             size_t errlen)
{
    pt_limits lim;
    int code;
    char e2[768];
    if (pt_limits_init(&lim, e2, sizeof e2)) {
        snprintf(err, errlen, "table %" PRId64 " (\"%s\"): %s", i, t->name, e2);
        return -1;
    }
    pt_file *f = pt_open_code(t->lookups_file, &lim, &code, e2, sizeof e2);
    if (!f) {
        snprintf(err, errlen, "table %" PRId64 " (\"%s\"): lookups: %s: %s", i, t->name, t->lookups_file, e2);
        return code == AS_EXIT_ENV ? -2 : -1;   /* no temporary file, no memory: the environment */
    }
    const char *base = strrchr(t->lookups_file, '/');
    const int64_t sel = t->lookups_table;
    as_convert_opts o = { 0 };
    o.select = &sel;
    o.nselect = 1;
    o.source = base ? base + 1 : t->lookups_file;
    o.meta = meta;
    o.out_id = i;
    o.out_rows = t->rows;
    o.out_dim = t->dim;
    as_progress q = { 0 };
    const int64_t n = as_convert_torch(f, &o, w, &q, e2, sizeof e2);
    pt_close(f);
    if (n != 1) {
        const char *why = n < 0 ? e2 : "no such table in the file";
        if (!strncmp(why, "--tables: ", 10)) why += 10;     /* the select is the config's "table" */
        snprintf(err, errlen, "table %" PRId64 " (\"%s\"): lookups: %s: %s", i, t->name, t->lookups_file, why);
        return -1;
    }
    return 0;
}

int64_t as_convert_config(const as_mcfg *c, int64_t batch, uint64_t seed, const char *source, as_writer *w,
                          as_progress *p, char *err, size_t errlen)
{
    const int64_t B = batch > 0 ? batch : as_mcfg_batch(c);
    if (B <= 0) {
        snprintf(err, errlen, "the config's batch (batch_size_per_rank x world_size) is above %" PRId64, AS_MCFG_MAX_BATCH);
        return -1;
    }
    if (as_mcfg_check_lookups(c, batch, err, errlen)) return -1;
    const as_mcfgrec mr = {
        .name = { c->name, AS_F_SET }, .source = { c->source, AS_F_SET }, .module_path = { c->module_path, AS_F_SET },
        .world_size = { c->world_size, AS_F_SET }, .local_size = { c->local_size, AS_F_SET },
        .hbm_bytes = { (int64_t)llround(c->hbm_gib * 1073741824.0), AS_F_SET },
        .batch_size_per_rank = { c->batch_per_rank, AS_F_SET }, .optimizer = { c->optimizer, AS_F_SET },
        .pipeline = { c->pipeline, AS_F_SET }, .dense_bytes = { (int64_t)as_mcfg_dense_bytes(c), AS_F_SET },
        .tables = { c->n, AS_F_SET }, .batch = { B, AS_F_SET },
    };
    as_mcfgrec_pack(as_writer_pk(w), &mr);
    as_writer_end_record(w);
    p->total = (double)c->n;
    for (int64_t i = 0; i < c->n; i++) {
        const as_mcfg_table *t = &c->tables[i];
        const as_table_meta meta = { t->name, t->data_type, (const char (*)[128])t->features, t->nfeatures };
        if (t->lookups_file[0]) {
            const int rc = config_file_table(t, &meta, i, w, err, errlen);
            if (rc) return rc;
            as_progress_update(p, (double)(i + 1));
            continue;
        }
        /* a plain Zipf of exponent skew over all rows: no knee */
        const as_synth_params sp = { .hash = t->rows, .pooling = t->pooling, .zipf = t->skew, .zipf2 = t->skew,
                                     .knee = (double)t->rows };
        as_synth_table tb;
        const int rc = as_synth_gen(&sp, B, seed, 3 * (uint64_t)i, t->fixed, &tb);
        if (rc) {
            snprintf(err, errlen, "table %" PRId64 " (\"%s\"): %s", i, t->name,
                     rc == -ENOMEM ? "out of memory generating its lookups" : "its lookups cannot be generated");
            return rc == -ENOMEM ? -2 : -1;
        }
        as_write_table_meta(w, i, t->rows, B, t->dim, tb.offsets, tb.indices, AS_DT_I32, source, &meta);
        as_synth_free(&tb);
        as_progress_update(p, (double)(i + 1));
    }
    return c->n;
}

/* ---- --list / --dump ---------------------------------------------------------------- */

void as_format_value(char *buf, size_t len, double v, pt_dtype dt)
{
    switch (dt) {
    case PT_BOOL: snprintf(buf, len, "%s", v != 0 ? "true" : "false"); return;
    case PT_UINT8: case PT_INT8: case PT_INT16: case PT_INT32: case PT_INT64:
        snprintf(buf, len, "%.0f", v);
        return;
    default: break;
    }
    if (isnan(v)) { snprintf(buf, len, "nan"); return; }
    if (isinf(v)) { snprintf(buf, len, v > 0 ? "inf" : "-inf"); return; }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        int same;
        switch (dt) {
        case PT_FLOAT16: same = as_float_to_half((float)back) == as_float_to_half((float)v); break;
        case PT_BFLOAT16: same = as_float_to_bf16((float)back) == as_float_to_bf16((float)v); break;
        case PT_FLOAT32: same = (float)back == (float)v; break;
        default: same = back == v; break;
        }
        if (same) return;
    }
}

static void print_header(const pt_tensor *t, FILE *out)
{
    fprintf(out, "%s\t%s\t[", t->path[0] ? t->path : ".", pt_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) fprintf(out, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    fputc(']', out);
    int64_t expect = 1;
    int contiguous = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] > 1 && t->stride[d] != expect) contiguous = 0;
        expect *= t->shape[d];
    }
    if (!contiguous || t->storage_offset) {
        fprintf(out, "\tstride=(");
        for (int d = 0; d < t->ndim; d++) fprintf(out, "%s%" PRId64, d ? ", " : "", t->stride[d]);
        fprintf(out, ") offset=%" PRId64, t->storage_offset);
    }
}

int as_convert_list(pt_file *f, FILE *out, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    for (int i = 0; i < pt_ntensors(f); i++) {
        print_header(pt_get(f, i), out);
        fputc('\n', out);
    }
    return 0;
}

int as_convert_dump(pt_file *f, FILE *out, char *err, size_t errlen)
{
    /* expanded tensors are legitimate here, but the text may not grow without bound */
    ctx c = { f, err, errlen, NULL, 0 };
    int n = pt_ntensors(f);
    int *all = as_malloc((size_t)(n + 1) * sizeof *all);
    for (int i = 0; i < n; i++) all[i] = i;
    int bad = check_no_repeats(&c, all, n, AS_DUMP_FREE_ELEMENTS, "the tensors");
    free(all);
    if (bad) return -1;
    double *buf = as_malloc((size_t)CHUNK * sizeof *buf);
    char txt[64];
    for (int i = 0; i < pt_ntensors(f); i++) {
        const pt_tensor *t = pt_get(f, i);
        print_header(t, out);
        fputc('\t', out);
        for (int64_t s = 0; s < t->numel; s += CHUNK) {
            int64_t m = t->numel - s < CHUNK ? t->numel - s : CHUNK;
            if (t->dtype == PT_INT64) {
                /* exact for all int64 values */
                int64_t *ib = (int64_t *)buf;
                if (pt_read_i64(f, i, s, m, ib, err, errlen)) { free(buf); return -1; }
                for (int64_t k = 0; k < m; k++) fprintf(out, "%s%" PRId64, s + k ? " " : "", ib[k]);
                continue;
            }
            if (pt_read_f64(f, i, s, m, buf, err, errlen)) { free(buf); return -1; }
            for (int64_t k = 0; k < m; k++) {
                as_format_value(txt, sizeof txt, buf[k], t->dtype);
                fprintf(out, "%s%s", s + k ? " " : "", txt);
            }
        }
        fputc('\n', out);
    }
    free(buf);
    return 0;
}
