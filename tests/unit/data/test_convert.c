/* test_convert.c - unit tests for lib/data/convert.c on small hand-made torch.save files (a stored
 * zip: a pickle of tensors and their storages): a MetaSyn tuple and the prototype's dict of
 * the same two tables convert to the same table records; --tables and --first; the first
 * violation of offsets and lengths named; the synthetic pool as synth.h generates it; the
 * per-table dim; the shortest text of a value.
 */
#include "unit.h"

#include "common.h"
#include "convert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building a torch.save file -------------------------------------------------------- */

typedef struct { uint8_t *p; size_t n, cap; } bytes;

static void put(bytes *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put8(bytes *b, int v) { uint8_t x = (uint8_t)v; put(b, &x, 1); }
static void put16(bytes *b, uint32_t v) { put8(b, v & 255); put8(b, v >> 8 & 255); }
static void put32(bytes *b, uint32_t v) { put16(b, v & 0xffff); put16(b, v >> 16); }

/* pickle pieces: a string, a small int, a global, a contiguous tensor in storage `key` */
static void pk_str(bytes *b, const char *s) { put8(b, 'X'); put32(b, (uint32_t)strlen(s)); put(b, s, strlen(s)); }
static void pk_int(bytes *b, int32_t v) { put8(b, 'J'); put32(b, (uint32_t)v); }
static void pk_global(bytes *b, const char *m, const char *n)
{
    put8(b, 'c'); put(b, m, strlen(m)); put8(b, '\n'); put(b, n, strlen(n)); put8(b, '\n');
}
static void pk_tensor(bytes *b, const char *cls, const char *key, int nd, const int32_t *shape)
{
    int32_t numel = 1, stride[2];
    for (int i = nd - 1; i >= 0; i--) { stride[i] = numel; numel *= shape[i]; }
    pk_global(b, "torch._utils", "_rebuild_tensor_v2");
    put8(b, '(');
    put8(b, '(');   /* the persistent id: ('storage', class, key, location, numel) */
    pk_str(b, "storage");
    pk_global(b, "torch", cls);
    pk_str(b, key);
    pk_str(b, "cpu");
    pk_int(b, numel);
    put8(b, 't');
    put8(b, 'Q');
    pk_int(b, 0);   /* storage offset */
    put8(b, '(');
    for (int i = 0; i < nd; i++) pk_int(b, shape[i]);
    put8(b, 't');
    put8(b, '(');
    for (int i = 0; i < nd; i++) pk_int(b, stride[i]);
    put8(b, 't');
    put8(b, 0x89);   /* requires_grad False */
    pk_global(b, "collections", "OrderedDict");
    put8(b, ')');
    put8(b, 'R');
    put8(b, 't');
    put8(b, 'R');
}

/* a stored zip of n entries */
static void write_zip(const char *path, const char *const *names, const bytes *data, int n)
{
    bytes z = { 0 }, cd = { 0 };
    for (int i = 0; i < n; i++) {
        uint32_t nl = (uint32_t)strlen(names[i]), len = (uint32_t)data[i].n, lho = (uint32_t)z.n;
        put32(&z, 0x04034b50); put16(&z, 20); put16(&z, 0); put16(&z, 0); put32(&z, 0);
        put32(&z, 0); put32(&z, len); put32(&z, len); put16(&z, nl); put16(&z, 0);
        put(&z, names[i], nl);
        put(&z, data[i].p, data[i].n);
        put32(&cd, 0x02014b50); put16(&cd, 20); put16(&cd, 20); put16(&cd, 0); put16(&cd, 0); put32(&cd, 0);
        put32(&cd, 0); put32(&cd, len); put32(&cd, len); put16(&cd, nl); put16(&cd, 0); put16(&cd, 0);
        put16(&cd, 0); put16(&cd, 0); put32(&cd, 0); put32(&cd, lho);
        put(&cd, names[i], nl);
    }
    uint32_t cdoff = (uint32_t)z.n, cdsize = (uint32_t)cd.n;
    put(&z, cd.p, cd.n);
    put32(&z, 0x06054b50); put16(&z, 0); put16(&z, 0); put16(&z, (uint32_t)n); put16(&z, (uint32_t)n);
    put32(&z, cdsize); put32(&z, cdoff); put16(&z, 0);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(z.p, 1, z.n, f) != z.n) abort();
    fclose(f);
    free(z.p);
    free(cd.p);
}

/* a torch.save file: the pickle, then storages "0", "1", ... holding data[i] */
static void write_torch(const char *path, const bytes *pkl, const bytes *data, int ns)
{
    const char *names[8];
    char keys[6][32];
    bytes all[8];
    names[0] = "archive/data.pkl";
    all[0] = *pkl;
    names[1] = "archive/version";
    all[1] = (bytes){ (uint8_t *)"3\n", 2, 2 };
    for (int i = 0; i < ns; i++) {
        snprintf(keys[i], sizeof keys[i], "archive/data/%d", i);
        names[2 + i] = keys[i];
        all[2 + i] = data[i];
    }
    write_zip(path, names, all, 2 + ns);
}

static bytes i32s(const int32_t *v, int n) { bytes b = { 0 }; for (int i = 0; i < n; i++) put32(&b, (uint32_t)v[i]); return b; }
static bytes i64s(const int64_t *v, int n)
{
    bytes b = { 0 };
    for (int i = 0; i < n; i++) { put32(&b, (uint32_t)v[i]); put32(&b, (uint32_t)((uint64_t)v[i] >> 32)); }
    return b;
}

static char g_path[8][512];
static int g_k;
#define tmp(name) (snprintf(g_path[g_k % 8], 512, "%s/%s", ut_tmpdir(), (name)), g_path[g_k++ % 8])

/* Two tables of batch 3: table 0's bags [4], [], [0, 9]; table 1's [1, 1], [7], [] */
static const int32_t IDX0[] = { 4, 0, 9 }, IDX1[] = { 1, 1, 7 };

/* MetaSyn's tuple (indices int32 [6], offsets int64 [7], lengths int32 [2, 3]); len01: the
 * lengths[0][1] written */
static void write_metasyn(const char *path, int32_t len01)
{
    const int32_t idx[] = { 4, 0, 9, 1, 1, 7 }, len[] = { 1, len01, 2, 2, 1, 0 };
    const int64_t off[] = { 0, 1, 1, 3, 5, 6, 6 };
    bytes pkl = { 0 };
    put8(&pkl, 0x80); put8(&pkl, 2);
    put8(&pkl, '(');
    const int32_t s6[] = { 6 }, s7[] = { 7 }, s23[] = { 2, 3 };
    pk_tensor(&pkl, "IntStorage", "0", 1, s6);
    pk_tensor(&pkl, "LongStorage", "1", 1, s7);
    pk_tensor(&pkl, "IntStorage", "2", 2, s23);
    put8(&pkl, 't');
    put8(&pkl, '.');
    bytes data[3] = { i32s(idx, 6), i64s(off, 7), i32s(len, 6) };
    write_torch(path, &pkl, data, 3);
    free(pkl.p);
    for (int i = 0; i < 3; i++) free(data[i].p);
}

/* the prototype's dict {'lS_indices': [I0, I1], 'lS_offsets': [O0, O1]}, DLRM's offsets (B
 * of them, the end implied) */
static void write_prototype(const char *path)
{
    const int64_t o0[] = { 0, 1, 1 }, o1[] = { 0, 2, 3 };
    bytes pkl = { 0 };
    put8(&pkl, 0x80); put8(&pkl, 2);
    put8(&pkl, '}');
    put8(&pkl, '(');
    const int32_t s3[] = { 3 };
    pk_str(&pkl, "lS_indices");
    put8(&pkl, ']');
    put8(&pkl, '(');
    pk_tensor(&pkl, "IntStorage", "0", 1, s3);
    pk_tensor(&pkl, "IntStorage", "1", 1, s3);
    put8(&pkl, 'e');
    pk_str(&pkl, "lS_offsets");
    put8(&pkl, ']');
    put8(&pkl, '(');
    pk_tensor(&pkl, "LongStorage", "2", 1, s3);
    pk_tensor(&pkl, "LongStorage", "3", 1, s3);
    put8(&pkl, 'e');
    put8(&pkl, 'u');
    put8(&pkl, '.');
    bytes data[4] = { i32s(IDX0, 3), i32s(IDX1, 3), i64s(o0, 3), i64s(o1, 3) };
    write_torch(path, &pkl, data, 4);
    free(pkl.p);
    for (int i = 0; i < 4; i++) free(data[i].p);
}

/* as_convert_torch of path into out with o; its result, err the message */
static int64_t convert(const char *path, const char *out, const as_convert_opts *o, char *err, size_t errlen)
{
    pt_file *f = pt_open(path, err, errlen);
    if (!f) return -2;
    as_writer *w = as_writer_open(out, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_progress pr;
    as_progress_begin(&pr, 0, "tables", 0);
    int64_t n = as_convert_torch(f, o, w, &pr, err, errlen);
    as_progress_end(&pr);
    if (n < 0) as_writer_abort(w);
    else as_writer_close(w);
    pt_close(f);
    return n;
}

/* the table records of path: ids[], and each matches its expected bags */
static int check_tables(const char *path, const int64_t *ids, int n, int64_t dim)
{
    static const int64_t off0[] = { 0, 1, 1, 3 }, off1[] = { 0, 2, 3, 3 };
    as_reader *r = as_reader_open(path);
    as_record rec;
    int k = 0, rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (!as_rec_is(&rec, "table")) continue;
        int64_t id, rows, batch, d;
        as_array off, idx;
        char src[64], err[256];
        CHECK_EQ_I64(as_table_parse(&rec.obj, &id, &rows, &batch, &d, &off, &idx, src, sizeof src, err, sizeof err), 0);
        CHECK(k < n);
        if (k >= n) break;
        CHECK_EQ_I64(id, ids[k]);
        CHECK_EQ_I64(rows, id ? 8 : 10);   /* the largest index + 1 */
        CHECK_EQ_I64(batch, 3);
        CHECK_EQ_I64(d, dim);
        CHECK_STR(src, "t.pt");
        CHECK_EQ_I64(off.n, 4);
        CHECK_EQ_I64(idx.n, 3);
        for (int b = 0; b < 4 && off.n == 4; b++) CHECK_EQ_I64(as_table_at(&off, b), id ? off1[b] : off0[b]);
        for (int i = 0; i < 3 && idx.n == 3; i++) CHECK_EQ_I64(as_table_at(&idx, i), id ? IDX1[i] : IDX0[i]);
        k++;
    }
    CHECK_EQ_I64(rc, 0);
    as_reader_close(r);
    return k;
}

static const int64_t DIM16[] = { 16 };

TEST(convert_metasyn_and_prototype_agree)
{
    char err[1024] = "";
    const char *ms = tmp("cv-ms.pt"), *pr = tmp("cv-proto.pt"), *o1 = tmp("cv-ms.ast"), *o2 = tmp("cv-proto.ast");
    write_metasyn(ms, 0);
    write_prototype(pr);
    as_convert_opts o = { DIM16, 1, 0, NULL, 0, 0, "t.pt", NULL, 0, 0, 0 };
    const int64_t both[] = { 0, 1 };
    CHECK_EQ_I64(convert(ms, o1, &o, err, sizeof err), 2);
    CHECK_EQ_I64(check_tables(o1, both, 2, 16), 2);
    CHECK_EQ_I64(convert(pr, o2, &o, err, sizeof err), 2);
    CHECK_EQ_I64(check_tables(o2, both, 2, 16), 2);
    /* --tables in the order given, --first */
    const int64_t sel[] = { 1, 0 };
    o.select = sel;
    o.nselect = 2;
    CHECK_EQ_I64(convert(ms, o1, &o, err, sizeof err), 2);
    CHECK_EQ_I64(check_tables(o1, sel, 2, 16), 2);
    CHECK_EQ_I64(convert(pr, o2, &o, err, sizeof err), 2);
    CHECK_EQ_I64(check_tables(o2, sel, 2, 16), 2);
    o.select = NULL;
    o.nselect = 0;
    o.first = 1;
    CHECK_EQ_I64(convert(ms, o1, &o, err, sizeof err), 1);
    CHECK_EQ_I64(check_tables(o1, both, 1, 16), 1);
    CHECK_EQ_I64(convert(pr, o2, &o, err, sizeof err), 1);
    CHECK_EQ_I64(check_tables(o2, both, 1, 16), 1);
}

TEST(convert_names_the_first_violation)
{
    char err[1024] = "";
    const char *ms = tmp("cv-bad.pt"), *out = tmp("cv-bad.ast");
    as_convert_opts o = { DIM16, 1, 0, NULL, 0, 0, "t.pt", NULL, 0, 0, 0 };
    write_metasyn(ms, 1);
    CHECK_EQ_I64(convert(ms, out, &o, err, sizeof err), -1);
    CHECK_STR(err, "lengths[0][1] = 1 but offsets give 0 (offsets[1] = 1, offsets[2] = 1)");
    write_metasyn(ms, 0);
    const int64_t sel[] = { 5 };
    o.select = sel;
    o.nselect = 1;
    CHECK_EQ_I64(convert(ms, out, &o, err, sizeof err), -1);
    CHECK_STR(err, "--tables: table 5 does not exist (the file has 2 tables)");
    write_prototype(ms);
    CHECK_EQ_I64(convert(ms, out, &o, err, sizeof err), -1);
    CHECK_STR(err, "--tables: table 5 does not exist (the file has 2 tables)");
}

TEST(convert_synth_as_generated)
{
    as_synth_cfg cfg;
    as_synth_defaults(&cfg);
    cfg.tables = 3;
    cfg.batch = 16;
    cfg.seed = 4;
    cfg.row_scale = 0.001;
    const int64_t dims[] = { 8, 32 };
    as_convert_opts o = { dims, 2, 4, NULL, 0, 0, "synth", NULL, 0, 0, 0 };
    const char *out = tmp("cv-synth.ast");
    as_writer *w = as_writer_open(out, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_progress pr;
    as_progress_begin(&pr, 0, "tables", 0);
    char err[512] = "";
    CHECK_EQ_I64(as_convert_synth(&cfg, &o, w, &pr, err, sizeof err), 3);
    as_progress_end(&pr);
    as_writer_close(w);
    as_reader *r = as_reader_open(out);
    as_record rec;
    int64_t k = 0;
    while (as_reader_next(r, &rec) == 1) {
        if (!as_rec_is(&rec, "table")) continue;
        int64_t id, rows, batch, d;
        as_array off, idx;
        CHECK_EQ_I64(as_table_parse(&rec.obj, &id, &rows, &batch, &d, &off, &idx, NULL, 0, err, sizeof err), 0);
        as_synth_table tb;
        CHECK_EQ_I64(as_synth_table_gen(&cfg, k, &tb), 0);
        CHECK_EQ_I64(id, k);
        CHECK_EQ_I64(rows, tb.rows);
        CHECK_EQ_I64(batch, 16);
        CHECK_EQ_I64(d, as_table_dim(&o, k));
        CHECK_EQ_I64(idx.n, tb.lookups);
        int same = off.n == 17 && idx.n == tb.lookups;
        for (int64_t b = 0; same && b <= 16; b++) same = as_table_at(&off, b) == tb.offsets[b];
        for (int64_t i = 0; same && i < tb.lookups; i++) same = as_table_at(&idx, i) == tb.indices[i];
        CHECK(same);
        as_synth_free(&tb);
        k++;
    }
    as_reader_close(r);
    CHECK_EQ_I64(k, 3);
    /* a table the pool does not have */
    const int64_t sel[] = { 3 };
    o.select = sel;
    o.nselect = 1;
    w = as_writer_open(tmp("cv-synth2.ast"), 0, 0);
    CHECK_EQ_I64(as_convert_synth(&cfg, &o, w, &pr, err, sizeof err), -1);
    as_writer_abort(w);
    CHECK_STR(err, "--select: table 3 does not exist (the pool has 3 tables)");
}

TEST(convert_table_dim)
{
    const int64_t one[] = { 24 }, three[] = { 8, 16, 64 };
    as_convert_opts o = { one, 1, 9, NULL, 0, 0, "x", NULL, 0, 0, 0 };
    for (int64_t id = 0; id < 8; id++) CHECK_EQ_I64(as_table_dim(&o, id), 24);
    o.dims = three;
    o.ndims = 3;
    int seen[3] = { 0, 0, 0 };
    for (int64_t id = 0; id < 64; id++) {
        int64_t d = as_table_dim(&o, id);
        CHECK(d == 8 || d == 16 || d == 64);
        CHECK_EQ_I64(as_table_dim(&o, id), d);   /* from (seed, id) only */
        seen[d == 8 ? 0 : d == 16 ? 1 : 2] = 1;
    }
    CHECK(seen[0] && seen[1] && seen[2]);
}

TEST(convert_format_value)
{
    char b[64];
    as_format_value(b, sizeof b, 0.1f, PT_FLOAT32);
    CHECK_STR(b, "0.1");
    as_format_value(b, sizeof b, 0.1, PT_FLOAT64);
    CHECK_STR(b, "0.1");
    as_format_value(b, sizeof b, 1.0 / 3, PT_FLOAT64);
    CHECK_STR(b, "0.3333333333333333");
    as_format_value(b, sizeof b, (float)(1.0 / 3), PT_FLOAT32);
    CHECK_STR(b, "0.33333334");
    as_format_value(b, sizeof b, -42, PT_INT64);
    CHECK_STR(b, "-42");
    as_format_value(b, sizeof b, 1, PT_BOOL);
    CHECK_STR(b, "true");
    as_format_value(b, sizeof b, NAN, PT_FLOAT32);
    CHECK_STR(b, "nan");
    as_format_value(b, sizeof b, -INFINITY, PT_FLOAT64);
    CHECK_STR(b, "-inf");
    as_format_value(b, sizeof b, 0.0999755859375, PT_FLOAT16);   /* the half nearest 0.1 */
    CHECK_STR(b, "0.1");
}
