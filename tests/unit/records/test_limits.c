/* test_limits.c - hostile record fields (issue 11): the range-checked getters and limits of
 * lib/records/reclimits.h, and the parsers that use them refusing overflows, huge allocations and
 * non-finite numbers at parse time. */
#include "unit.h"

#include "common.h"
#include "costmodel.h"
#include "featurize.h"
#include "plan.h"
#include "planrec.h"
#include "policy.h"
#include "reclimits.h"
#include "stream.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- building records --------------------------------------------------------------- */

typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked up;
} rec_buf;

static msgpack_packer *rb_begin(rec_buf *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
    msgpack_unpacked_init(&b->up);
    return &b->pk;
}

static const msgpack_object *rb_obj(rec_buf *b)
{
    size_t off = 0;
    msgpack_unpack_next(&b->up, b->sb.data, b->sb.size, &off);
    return &b->up.data;
}

static void rb_end(rec_buf *b)
{
    msgpack_unpacked_destroy(&b->up);
    msgpack_sbuffer_destroy(&b->sb);
}

static void pack_ints(msgpack_packer *pk, const char *k, const int64_t *v, int n)
{
    as_pack_str(pk, k);
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, v[i]);
}

/* ---- the getters -------------------------------------------------------------------- */

TEST(limits_field_getters)
{
    rec_buf b;
    msgpack_packer *pk = rb_begin(&b);
    msgpack_pack_map(pk, 9);
    as_pack_kv_i64(pk, "a", 5);
    as_pack_kv_i64(pk, "neg", -3);
    as_pack_str(pk, "huge");
    msgpack_pack_uint64(pk, UINT64_MAX);
    as_pack_kv_f64(pk, "nan", NAN);
    as_pack_kv_f64(pk, "inf", INFINITY);
    as_pack_kv_f64(pk, "x", 0.5);
    as_pack_kv_str(pk, "s", "str");
    int64_t ids[3] = { 0, 7, 1048575 };
    pack_ints(pk, "ids", ids, 3);
    int64_t asg[3] = { 1, -1, 0 };
    pack_ints(pk, "assign", asg, 3);
    const msgpack_object *o = rb_obj(&b);
    char err[256];
    int64_t v = 42;
    double d = 0;
    CHECK(as_field_i64(o, "a", 0, 10, &v, err, sizeof err) == 0 && v == 5);
    CHECK(as_field_i64(o, "a", 6, 10, &v, err, sizeof err) == -1 && strstr(err, "'a' = 5 is outside 6..10"));
    CHECK(as_field_i64(o, "neg", 0, 10, &v, err, sizeof err) == -1);
    CHECK(as_field_i64(o, "huge", 0, INT64_MAX, &v, err, sizeof err) == -1 && strstr(err, "18446744073709551615"));
    CHECK(as_field_i64(o, "s", 0, 10, &v, err, sizeof err) == -1 && strstr(err, "not an integer"));
    CHECK(as_field_i64(o, "absent", 0, 10, &v, err, sizeof err) == -1 && strstr(err, "missing field 'absent'"));
    v = 42;
    CHECK(as_field_i64_opt(o, "absent", 0, 10, &v, err, sizeof err) == 0 && v == 42);
    CHECK(as_field_i64_opt(o, "a", 0, 4, &v, err, sizeof err) == -1);
    CHECK(as_field_f64(o, "x", 0, 1, &d, err, sizeof err) == 0 && d == 0.5);
    CHECK(as_field_f64(o, "a", 0, 10, &d, err, sizeof err) == 0 && d == 5);
    CHECK(as_field_f64(o, "nan", -INFINITY, INFINITY, &d, err, sizeof err) == -1 && strstr(err, "not finite"));
    CHECK(as_field_f64(o, "inf", -INFINITY, INFINITY, &d, err, sizeof err) == -1 && strstr(err, "not finite"));
    CHECK(as_field_f64(o, "x", 1, 2, &d, err, sizeof err) == -1);
    int64_t *l = NULL, n = 0, unplaced = 0;
    CHECK(as_field_table_ids(o, "ids", &l, &n, err, sizeof err) == 0 && n == 3 && l[2] == 1048575);
    free(l);
    CHECK(as_field_table_ids(o, "assign", &l, &n, err, sizeof err) == -1 && l == NULL && strstr(err, "assign[1]"));
    CHECK(as_field_assign(o, "assign", 3, 2, &l, &unplaced, err, sizeof err) == 0 && unplaced == 1 && l[0] == 1 && l[1] == -1);
    free(l);
    CHECK(as_field_assign(o, "assign", 3, 1, &l, &unplaced, err, sizeof err) == -1 && strstr(err, "assign[0] = 1 is not a shard of 0..0"));
    CHECK(as_field_assign(o, "assign", 2, 2, &l, &unplaced, err, sizeof err) == -1 && strstr(err, "has 3 entries"));
    CHECK(as_field_assign(o, "ids", 3, 8, &l, &unplaced, err, sizeof err) == -1);   /* 1048575 is no shard of 8 */
    rb_end(&b);
}

TEST(limits_table_bytes_and_pairs)
{
    char err[256];
    int64_t b;
    CHECK(as_table_bytes(1000, 64, 2, &b, err, sizeof err) == 0 && b == 128000);
    CHECK(as_table_bytes((int64_t)1 << 36, 16, 4, &b, err, sizeof err) == 0 && b == (int64_t)1 << 42);
    CHECK(as_table_bytes(1000, (int64_t)1 << 62, 2, &b, err, sizeof err) == -1 && strstr(err, "dim"));
    CHECK(as_table_bytes(1000, ((int64_t)1 << 32) + 4, 2, &b, err, sizeof err) == -1);
    CHECK(as_table_bytes((int64_t)1000000000000, 4, 2, &b, err, sizeof err) == -1 && strstr(err, "AS_MAX_ROWS"));
    CHECK(as_table_bytes((int64_t)1 << 30, 4096, 2, &b, err, sizeof err) == -1 && strstr(err, "2^40"));
    CHECK(as_table_bytes(0, 4, 2, &b, err, sizeof err) == -1);
    CHECK(as_check_pairs(800, 80, err, sizeof err) == 0);
    CHECK(as_check_pairs(65536, 65536, err, sizeof err) == -1 && strstr(err, "AS_MAX_PAIRS"));
    CHECK(as_check_pairs(INT64_MAX, 2, err, sizeof err) == -1);
}

TEST(limits_environment_overrides)
{
    CHECK_EQ_I64(as_limit(AS_LIM_SHARDS), 65536);
    setenv("AS_MAX_SHARDS", "1M", 1);
    as_limit_reset();
    CHECK_EQ_I64(as_limit(AS_LIM_SHARDS), 1048576);
    unsetenv("AS_MAX_SHARDS");
    as_limit_reset();
    CHECK_EQ_I64(as_limit(AS_LIM_SHARDS), as_limit_default(AS_LIM_SHARDS));
    /* a value past the hard maximum (or not a count) is refused by as_limits_check (the
       command line turns it into a usage error); as_limit keeps the default, never exits */
    char err[256] = "";
    CHECK_EQ_I64(as_limits_check(err, sizeof err), 0);
    setenv("AS_MAX_SHARDS", "2M", 1);
    as_limit_reset();
    CHECK_EQ_I64(as_limits_check(err, sizeof err), -1);
    CHECK_STR(err, "AS_MAX_SHARDS: '2M' is not a count in 1..1048576 (the limit on shards per task or plan)");
    CHECK_EQ_I64(as_limit(AS_LIM_SHARDS), as_limit_default(AS_LIM_SHARDS));
    setenv("AS_MAX_SHARDS", "lots", 1);
    as_limit_reset();
    CHECK_EQ_I64(as_limits_check(err, sizeof err), -1);
    CHECK(strstr(err, "'lots' is not a count") != NULL);
    setenv("AS_MAX_SHARDS", "", 1);   /* empty: unset */
    as_limit_reset();
    CHECK_EQ_I64(as_limits_check(err, sizeof err), 0);
    unsetenv("AS_MAX_SHARDS");
    as_limit_reset();
}

/* ---- tables and features ------------------------------------------------------------ */

static int parse_table(int64_t rows, int64_t dim, int64_t id, char *err, size_t errlen)
{
    rec_buf b;
    msgpack_packer *pk = rb_begin(&b);
    int32_t off[3] = { 0, 1, 3 }, idx[3] = { 0, 1, 1 };
    int64_t s3[1] = { 3 };
    msgpack_pack_map(pk, 8);
    as_pack_kv_str(pk, "kind", "table");
    as_pack_kv_i64(pk, "id", id);
    as_pack_kv_i64(pk, "rows", rows);
    as_pack_kv_i64(pk, "batch", 2);
    as_pack_kv_i64(pk, "lookups", 3);
    as_pack_kv_i64(pk, "dim", dim);
    as_pack_kv_array(pk, "offsets", AS_DT_I32, off, 1, s3);
    as_pack_kv_array(pk, "indices", AS_DT_I32, idx, 1, s3);
    int64_t i, r, bt, d;
    as_array o, x;
    int rc = as_table_parse(rb_obj(&b), &i, &r, &bt, &d, &o, &x, NULL, 0, err, errlen);
    rb_end(&b);
    return rc;
}

TEST(limits_table_record_fields)
{
    char err[512];
    CHECK(parse_table(10, 16, 3, err, sizeof err) == 0);
    CHECK(parse_table(10, (int64_t)1 << 62, 3, err, sizeof err) == -1 && strstr(err, "table 3: 'dim' = 4611686018427387904 exceeds"));
    CHECK(parse_table(10, ((int64_t)1 << 32) + 4, 3, err, sizeof err) == -1 && strstr(err, "'dim' = 4294967300"));
    CHECK(parse_table((int64_t)1000000000000, 16, 3, err, sizeof err) == -1 && strstr(err, "'rows' = 1000000000000"));
    CHECK(parse_table(10, 16, (int64_t)1000000000000, err, sizeof err) == -1 && strstr(err, "table: 'id' = 1000000000000"));
    CHECK(parse_table(10, 16, -1, err, sizeof err) == -1);
}

/* features of the same lookups through the count per row and through the sorted copy */
TEST(limits_features_sorted_equals_dense)
{
    enum { B = 64, NL = 3000 };
    int64_t rows = 5000;
    int32_t off[B + 1], *idx = malloc(NL * sizeof *idx);
    as_rng r;
    as_rng_seed(&r, 11, 0);
    for (int b = 0; b <= B; b++) off[b] = (int32_t)((int64_t)b * NL / B);
    for (int i = 0; i < NL; i++) {
        /* skewed: a few hot rows, many cold ones */
        uint64_t u = as_rng_below(&r, 100);
        idx[i] = (int32_t)(u < 50 ? as_rng_below(&r, 8) : as_rng_below(&r, (uint64_t)rows));
    }
    as_array o = { .dtype = AS_DT_I32, .ndim = 1, .shape = { B + 1 }, .n = B + 1, .data = off, .nbytes = sizeof off };
    as_array x = { .dtype = AS_DT_I32, .ndim = 1, .shape = { NL }, .n = NL, .data = idx, .nbytes = NL * 4 };
    as_feat_scratch dense = { .mode = 1 }, sorted = { .mode = 2 };
    as_features f1, f2;
    char err[256];
    CHECK(as_features_compute(&f1, &dense, 1, rows, 16, &o, &x, err, sizeof err) == 0);
    CHECK(as_features_compute(&f2, &sorted, 1, rows, 16, &o, &x, err, sizeof err) == 0);
    CHECK(sorted.count == NULL);
    CHECK_EQ_I64(f1.distinct, f2.distinct);
    CHECK(f1.distinct > 8 && f1.distinct < NL);
    for (int k = 0; k < AS_NBINS; k++) {
        CHECK(f1.bins[k] == f2.bins[k]);
        CHECK(f1.lookup_bins[k] == f2.lookup_bins[k]);
    }
    CHECK(f1.bins[0] > 0 && f1.bins[AS_NBINS - 1] == 0);
    /* an index out of range is found by both, at the same position */
    idx[1234] = (int32_t)rows;
    CHECK(as_features_compute(&f1, &dense, 1, rows, 16, &o, &x, err, sizeof err) == -1 && strstr(err, "indices[1234]"));
    CHECK(as_features_compute(&f2, &sorted, 1, rows, 16, &o, &x, err, sizeof err) == -1 && strstr(err, "indices[1234]"));
    /* and the dense scratch is still all zero afterwards: the same table gives the same */
    idx[1234] = 3;
    as_features f3;
    CHECK(as_features_compute(&f3, &dense, 1, rows, 16, &o, &x, err, sizeof err) == 0);
    CHECK(as_features_compute(&f2, &sorted, 1, rows, 16, &o, &x, err, sizeof err) == 0);
    CHECK_EQ_I64(f3.distinct, f2.distinct);
    as_feat_scratch_free(&dense);
    free(idx);
}

TEST(limits_features_many_rows_few_lookups)
{
    /* 2^36 rows, 3 lookups: no count per row (that would be 256 GiB) */
    int32_t off[3] = { 0, 1, 3 }, idx[3] = { 0, 1, 1 };
    as_array o = { .dtype = AS_DT_I32, .ndim = 1, .shape = { 3 }, .n = 3, .data = off, .nbytes = sizeof off };
    as_array x = { .dtype = AS_DT_I32, .ndim = 1, .shape = { 3 }, .n = 3, .data = idx, .nbytes = sizeof idx };
    as_feat_scratch s = { 0 };
    as_features f;
    char err[256];
    CHECK(as_features_compute(&f, &s, 0, (int64_t)1 << 36, 16, &o, &x, err, sizeof err) == 0);
    CHECK(s.count == NULL);
    CHECK_EQ_I64(f.distinct, 2);
    CHECK_NEAR(f.bins[0], 0.5, 0);
    CHECK_NEAR(f.bins[1], 0.5, 0);
    CHECK_EQ_I64(f.bytes_fp16, (int64_t)1 << 41);
    /* a dim whose size would overflow is refused, never a size of 0 */
    CHECK(as_features_compute(&f, &s, 0, 1000, (int64_t)1 << 62, &o, &x, err, sizeof err) == -1 && strstr(err, "dim"));
}

static int read_features(double pooling, double size, double bin0, char *err, size_t errlen)
{
    rec_buf b;
    msgpack_packer *pk = rb_begin(&b);
    msgpack_pack_map(pk, 7);
    as_pack_kv_str(pk, "kind", "features");
    as_pack_kv_i64(pk, "id", 4);
    as_pack_kv_i64(pk, "dim", 8);
    as_pack_kv_i64(pk, "rows", 100);
    as_pack_kv_f64(pk, "pooling", pooling);
    as_pack_kv_f64(pk, "size", size);
    double bins[AS_NBINS] = { bin0 };
    as_pack_kv_f64_list(pk, "bins", bins, AS_NBINS);
    as_features f;
    int rc = as_features_read(rb_obj(&b), &f, err, errlen);
    if (rc == 0 && f.bytes_fp16 != 1600) rc = -2;
    rb_end(&b);
    return rc;
}

TEST(limits_features_record_non_finite)
{
    char err[256];
    CHECK(read_features(2, 0.5, 1, err, sizeof err) == 0);
    CHECK(read_features(NAN, 0.5, 1, err, sizeof err) == -1 && strstr(err, "features of table 4: 'pooling' is not finite"));
    CHECK(read_features(INFINITY, 0.5, 1, err, sizeof err) == -1 && strstr(err, "'pooling'"));
    CHECK(read_features(2, NAN, 1, err, sizeof err) == -1 && strstr(err, "'size'"));
    CHECK(read_features(2, -INFINITY, 1, err, sizeof err) == -1 && strstr(err, "'size'"));
    CHECK(read_features(-1, 0.5, 1, err, sizeof err) == -1);
    CHECK(read_features(2, 0.5, NAN, err, sizeof err) == -1 && strstr(err, "'bins[0]'"));
    CHECK(read_features(2, 0.5, 1.5, err, sizeof err) == -1 && strstr(err, "'bins[0]'"));
}

/* ---- tasks and plans ---------------------------------------------------------------- */

TEST(limits_tasks_cap_times_shards_does_not_wrap)
{
    int64_t ids[32], bytes[32];
    for (int i = 0; i < 32; i++) { ids[i] = i; bytes[i] = 1000; }
    /* 16 shards x 2^60 bytes is 2^64: once wrapped to 0 ("16 shards x the cap hold 0 bytes") */
    as_task_cfg c = { 2, 1, 16, 16, 0, (uint64_t)1 << 60, -1 };
    as_task *t = NULL;
    char err[256] = "";
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 32, &t, err, sizeof err), 0);
    if (t) CHECK_EQ_I64(t[0].bytes, 16000);
    as_tasks_free(t, 2);
    /* a cap that really is too small is still refused */
    c.mem_cap = 1000;
    c.shards = 8;
    CHECK_EQ_I64(as_tasks_make(&c, ids, bytes, 32, &t, err, sizeof err), -1);
    CHECK(strstr(err, "8 shards x the cap hold") != NULL);
}

static int read_plan(int64_t K, const int64_t *tables, const int64_t *assign, int n, as_planrec *p, char *err, size_t errlen)
{
    rec_buf b;
    msgpack_packer *pk = rb_begin(&b);
    msgpack_pack_map(pk, 5);
    as_pack_kv_str(pk, "kind", "plan");
    as_pack_kv_i64(pk, "task", 9);
    as_pack_kv_i64(pk, "shards", K);
    pack_ints(pk, "tables", tables, n);
    pack_ints(pk, "assign", assign, n);
    int rc = as_planrec_read(rb_obj(&b), p, 0, err, errlen);
    rb_end(&b);
    return rc;
}

TEST(limits_plan_records)
{
    as_planrec p;
    char err[512];
    int64_t t[4] = { 10, 11, 12, 13 }, a[4] = { 1, -1, 0, 1 };
    CHECK(read_plan(3, t, a, 4, &p, err, sizeof err) == 0);
    CHECK_EQ_I64(p.task, 9);
    CHECK_EQ_I64(p.unplaced, 1);
    int64_t start[4], order[4];
    as_planrec_group(&p, start, order);
    CHECK(start[0] == 0 && start[1] == 1 && start[2] == 3 && start[3] == 3);
    CHECK(order[0] == 2 && order[1] == 0 && order[2] == 3);
    as_planrec_free(&p);
    CHECK(read_plan(100000000, t, a, 4, &p, err, sizeof err) == -1 && strstr(err, "plan of task 9: 'shards' = 100000000 exceeds the limit"));
    CHECK(read_plan((int64_t)1000000000000, t, a, 4, &p, err, sizeof err) == -1);
    CHECK(read_plan(0, t, a, 4, &p, err, sizeof err) == -1);
    int64_t bad[4] = { 1, -3, 0, 1 };
    CHECK(read_plan(3, t, bad, 4, &p, err, sizeof err) == -1 && strstr(err, "assign[1] = -3"));
    int64_t dp[4] = { 1, -2, 0, 1 };   /* -2: data parallel, on every shard */
    CHECK(read_plan(3, t, dp, 4, &p, err, sizeof err) == 0 && p.ndp == 1 && p.unplaced == 0);
    as_planrec_free(&p);
    int64_t big[4] = { 10, (int64_t)1000000000000, 12, INT64_MAX };
    CHECK(read_plan(3, big, a, 4, &p, err, sizeof err) == -1 && strstr(err, "tables[1] = 1000000000000 exceeds the largest table id"));
}

/* ---- model files -------------------------------------------------------------------- */

/* run fn in a child whose address space is limited to what it uses now plus 96 MiB: an
 * allocation sized by a hostile field fails there (exit 3), a parse-time check returns */
static int in_small_child(int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1) _exit(9);
        fclose(f);
        rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)96 << 20);
        struct rlimit rl = { lim, lim };
#ifndef __SANITIZE_ADDRESS__   /* AddressSanitizer reserves terabytes of address space */
        if (setrlimit(RLIMIT_AS, &rl)) _exit(9);
#else
        (void)rl;
#endif
        freopen("/dev/null", "w", stderr);
        _exit(fn());
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void pack_model(msgpack_packer *pk, int h, int64_t nparams, int64_t nstored)
{
    msgpack_pack_map(pk, 11);
    as_pack_kv_str(pk, "kind", "model");
    as_pack_kv_str(pk, "model", "costmodel");
    as_pack_kv_i64(pk, "format_version", 1);
    as_pack_str(pk, "features");
    msgpack_pack_array(pk, AS_NFEATURES);
    for (int i = 0; i < AS_NFEATURES; i++) as_pack_str(pk, as_costmodel_feature_name(i));
    double z[3] = { 0, 0, 0 }, o[3] = { 1, 1, 1 };
    as_pack_kv_f64_list(pk, "norm_mean", z, 3);
    as_pack_kv_f64_list(pk, "norm_std", o, 3);
    as_pack_kv_f64(pk, "y_scale", 1);
    as_pack_str(pk, "layers");
    msgpack_pack_array(pk, 5);
    msgpack_pack_int(pk, 21);
    for (int i = 0; i < 3; i++) msgpack_pack_int(pk, h);
    msgpack_pack_int(pk, 1);
    as_pack_kv_i64(pk, "nparams", nparams);
    float *p = calloc((size_t)nstored, sizeof *p);
    int64_t shape[1] = { nstored };
    as_pack_kv_array(pk, "params", AS_DT_F32, p, 1, shape);
    free(p);
    as_pack_kv_str(pk, "cost_device", "test");
}

static int huge_model(void)
{
    rec_buf b;
    char err[256];
    as_costmodel *m = NULL;
    /* 65536^3 layers need 8591572993 parameters (34 GB): refused before allocating */
    pack_model(rb_begin(&b), 65536, 9121, 4);
    int rc = as_costmodel_read(&m, rb_obj(&b), err, sizeof err);
    int ok = rc == -1 && m == NULL && strstr(err, "8591572993 parameters");
    rb_end(&b);
    pack_model(rb_begin(&b), 65536, 8591572993LL, 4);
    rc = as_costmodel_read(&m, rb_obj(&b), err, sizeof err);
    ok = ok && rc == -1 && strstr(err, "params must be float32 [8591572993]");
    rb_end(&b);
    return ok ? 0 : 1;
}

TEST(limits_model_layers_checked_before_allocating)
{
    CHECK_EQ_I64(in_small_child(huge_model), 0);
    /* a consistent small model still loads */
    rec_buf b;
    char err[256];
    as_costmodel *m = NULL;
    int64_t np = 21 * 4 + 4 + 4 * 4 + 4 + 4 * 4 + 4 + 4 + 1;
    pack_model(rb_begin(&b), 4, np, np);
    CHECK(as_costmodel_read(&m, rb_obj(&b), err, sizeof err) == 0 && m);
    as_costmodel_free(m);
    rb_end(&b);
}

TEST(limits_second_model_record_refused)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/two-models.ast", ut_tmpdir());
    as_costmodel *m = as_costmodel_new(4, 4, 4, 1), *l = NULL;
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costmodel_write(m, w);
    as_writer_close(w);
    CHECK(as_costmodel_load(&l, path, err, sizeof err) == 0 && l);
    as_costmodel_free(l);
    l = NULL;
    w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_costmodel_write(m, w);
    as_costmodel_write(m, w);
    as_writer_close(w);
    CHECK(as_costmodel_load(&l, path, err, sizeof err) == -1 && l == NULL);
    CHECK(strstr(err, "record 3: a second `model` record") != NULL);
    as_costmodel_free(m);
}

static int huge_policy(void)
{
    /* dims at their per-entry maximum: a policy of ~35M parameters, nparams saying 10 */
    rec_buf b;
    msgpack_packer *pk = rb_begin(&b);
    msgpack_pack_map(pk, 11);
    as_pack_kv_str(pk, "kind", "policy");
    as_pack_kv_str(pk, "policy", "autoshard-lstm");
    as_pack_kv_i64(pk, "format_version", AS_POLICY_VERSION);
    as_pack_str(pk, "features");
    msgpack_pack_array(pk, AS_NFEATURES);
    for (int i = 0; i < AS_NFEATURES; i++) as_pack_str(pk, as_costmodel_feature_name(i));
    as_pack_kv_i64(pk, "cost_features", AS_POLICY_NCF);
    as_pack_str(pk, "dims");
    int dv[10] = { 21, 4096, 128, 4096, 256, 128, 4096, 4096, 4096, 4096 };
    msgpack_pack_array(pk, 10);
    for (int i = 0; i < 10; i++) msgpack_pack_int(pk, dv[i]);
    as_pack_kv_str(pk, "transform", "none");
    double z[3] = { 0, 0, 0 }, o[3] = { 1, 1, 1 };
    as_pack_kv_f64_list(pk, "norm_mean", z, 3);
    as_pack_kv_f64_list(pk, "norm_std", o, 3);
    as_pack_kv_i64(pk, "nparams", 10);
    float p[10] = { 0 };
    int64_t shape[1] = { 10 };
    as_pack_kv_array(pk, "params", AS_DT_F32, p, 1, shape);
    as_policy *q = NULL;
    char err[256];
    int rc = as_policy_read(&q, rb_obj(&b), err, sizeof err);
    rb_end(&b);
    return rc == -1 && q == NULL && strstr(err, "nparams 10 but dims need") ? 0 : 1;
}

TEST(limits_policy_dims_checked_before_allocating)
{
    CHECK_EQ_I64(in_small_child(huge_policy), 0);
}

TEST(limits_table_id_lists)
{
    /* the command line's table-id lists: as_parse_i64_list's syntax, ids within the limit
       of the ids of records */
    int64_t *v;
    size_t n;
    CHECK_EQ_I64(as_parse_table_ids("3,0-2,9", &v, &n), 0);
    CHECK_EQ_I64(n, 5);
    CHECK(v[0] == 3 && v[1] == 0 && v[3] == 2 && v[4] == 9);
    free(v);
    CHECK_EQ_I64(as_parse_table_ids("1048575", &v, &n), 0);
    free(v);
    CHECK_EQ_I64(as_parse_table_ids("1048576", &v, &n), -1);
    CHECK_EQ_I64(as_parse_table_ids("0-1048576", &v, &n), -1);
    CHECK_EQ_I64(as_parse_table_ids("-1", &v, &n), -1);
    CHECK_EQ_I64(as_parse_table_ids("1,,2", &v, &n), -1);
    CHECK_EQ_I64(as_parse_table_ids("", &v, &n), -1);
    /* a set of tables: an id named twice, by a list or by overlapping ranges, is found */
    int64_t dup = -7;
    const int64_t once[4] = { 5, 1, 9, 0 }, twice[5] = { 5, 9, 1, 9, 5 };
    CHECK_EQ_I64(as_table_ids_duplicate(once, 4, &dup), 0);
    CHECK_EQ_I64(dup, -7);
    CHECK_EQ_I64(as_table_ids_duplicate(twice, 5, &dup), 1);
    CHECK_EQ_I64(dup, 5);
    CHECK_EQ_I64(as_table_ids_duplicate(twice, 1, &dup), 0);
    CHECK_EQ_I64(as_parse_table_ids("0-3,2", &v, &n), 0);
    CHECK_EQ_I64(as_table_ids_duplicate(v, n, &dup), 1);
    CHECK_EQ_I64(dup, 2);
    free(v);
    setenv("AS_MAX_TABLE_ID", "2000000", 1);
    as_limit_reset();
    CHECK_EQ_I64(as_parse_table_ids("1048576", &v, &n), 0);
    free(v);
    unsetenv("AS_MAX_TABLE_ID");
    as_limit_reset();
}
