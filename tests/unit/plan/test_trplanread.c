/* test_trplanread.c - as-plan --import (lib/plan/trplanread.h) on hand-made TorchRec JSON: a
 * column_wise table and two table_wise ones become the plan's entries in task and piece
 * order, with memory, counts and the cost model's predictions worked out by hand; the
 * document's label written as it is; errors naming the line, table and field.
 * tests/as-plan-import.bats covers round trips through as-plan --export. */
#include "unit.h"

#include "common.h"
#include "msgobj.h"
#include "tasks.h"
#include "trplanread.h"
#include "fixtures.h"
#include "planrec.h"

#include <stdlib.h>
#include <string.h>


/* features of tables 1 (dim 4), 2 (dim 8), 3 (dim 2), 100 rows, pooling 1, and task 5 of
 * all three on 2 shards, read back into in */
static void toy_input(as_plan_input *in)
{
    char path[512], err[512];
    as_features f[3];
    const int64_t dims[3] = { 4, 8, 2 };
    for (int i = 0; i < 3; i++) {
        f[i] = tsup_features(i + 1, dims[i], 100, 1, 8, 8);
        f[i].bins[0] = 1;
    }
    CHECK_EQ_I64(tsup_plan_input(in, ut_tmppath(path, sizeof path, "trplanread-toy.ast"), f, 3, 2, err, sizeof err), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* t1 column_wise in two pieces of 2 columns on ranks 1 and 0, t2 table_wise on 1, t3 on 0 */
#define DOC_REST "\"task\":5,\"world_size\":2,\"local_size\":8,\"module\":\"\",\"plan\":{\"\":{"
#define DOC_HEAD "{" DOC_REST
#define T1 "\"t1\":{\"sharding_type\":\"column_wise\",\"compute_kernel\":\"fused\",\"ranks\":[1,0],\"shards\":[" \
    "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,2],\"placement\":\"rank:1/cuda:1\"}," \
    "{\"shard_offsets\":[0,2],\"shard_sizes\":[100,2],\"placement\":\"rank:0/cuda:0\"}]}"
#define T2 "\"t2\":{\"sharding_type\":\"table_wise\",\"ranks\":[1],\"shards\":[" \
    "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,8],\"placement\":\"rank:1/cuda:1\"}]}"
#define T3 "\"t3\":{\"sharding_type\":\"table_wise\",\"ranks\":[0],\"shards\":[" \
    "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,2],\"placement\":\"rank:0/cuda:0\"}]}"

/* the one plan record of path */
typedef struct { as_planrec pr; char alg[64]; int64_t mem[2], count[2]; double pred[2]; int n; } one_plan;
static int on_plan(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    (void)r;
    one_plan *x = ctx;
    if (!as_rec_is(rec, "plan")) return 0;
    if (x->n++) return 0;
    if (as_planrec_read(&rec->obj, &x->pr, 0, err, errlen)) return -1;
    as_obj_str(&rec->obj, "alg", x->alg, sizeof x->alg);
    const msgpack_object *m = as_obj_get(&rec->obj, "mem_bytes"), *c = as_obj_get(&rec->obj, "counts");
    for (int k = 0; k < 2 && m && c; k++) {
        x->mem[k] = (int64_t)m->via.array.ptr[k].via.u64;
        x->count[k] = (int64_t)c->via.array.ptr[k].via.u64;
    }
    as_obj_f64_list(&rec->obj, "pred_ms", x->pred, 2);
    return 0;
}

TEST(trplanread_plan)
{
    as_plan_input in;
    toy_input(&in);
    char jpath[512], opath[512], err[1024];
    write_text(ut_tmppath(jpath, sizeof jpath, "trplanread.json"), "\n" DOC_HEAD T3 "," T1 "," T2 "}}}\n");
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_STREAM;
    c.model = &tsup_toy_model;
    c.w = as_writer_open(ut_tmppath(opath, sizeof opath, "trplanread.ast"), 0, 0);
    as_writer_header(c.w, "test", 0, NULL);
    as_plan_run_stats st;
    int64_t imported = -1;
    CHECK_EQ_I64(as_plan_import_run(&st, &c, &in, jpath, &imported, err, sizeof err), 0);
    CHECK_EQ_I64(imported, 1);
    CHECK_EQ_I64(st.nplans, 1);
    as_writer_close(c.w);

    one_plan x;
    memset(&x, 0, sizeof x);
    char *files[] = { opath };
    CHECK_EQ_I64(as_read_records(files, 1, on_plan, &x, err, sizeof err), 0);
    CHECK_EQ_I64(x.n, 1);
    CHECK_STR(x.alg, AS_TRIMPORT_DEFAULT_ALG);
    /* task order, a table's pieces in piece order: t1[c 0:2] on 1, t1[c 2:4] on 0, t2, t3 */
    CHECK_EQ_I64(x.pr.task, 5);
    CHECK_EQ_I64(x.pr.shards, 2);
    CHECK_EQ_I64(x.pr.n, 4);
    static const int64_t tables[4] = { 1, 1, 2, 3 }, assign[4] = { 1, 0, 1, 0 };
    for (int i = 0; i < 4 && i < x.pr.n; i++) {
        CHECK_EQ_I64(x.pr.tables[i], tables[i]);
        CHECK_EQ_I64(x.pr.assign[i], assign[i]);
    }
    CHECK(x.pr.pieces != NULL);
    if (x.pr.pieces && x.pr.n == 4) {
        CHECK(as_piece_eq(&x.pr.pieces[0], &(as_piece){ 0, 2, 0, 100 }));
        CHECK(as_piece_eq(&x.pr.pieces[1], &(as_piece){ 2, 4, 0, 100 }));
        CHECK(as_piece_whole(&x.pr.pieces[2]) && as_piece_whole(&x.pr.pieces[3]));
    }
    /* fp16 bytes: shard 0 holds t1[c 2:4] and t3 (400 + 400), shard 1 t1[c 0:2] and t2
       (400 + 1600); the toy model's cost is the shard's sum of dim x pooling */
    CHECK_EQ_I64(x.mem[0], 800);
    CHECK_EQ_I64(x.mem[1], 2000);
    CHECK_EQ_I64(x.count[0], 2);
    CHECK_EQ_I64(x.count[1], 2);
    CHECK_NEAR(x.pred[0], 4, 1e-9);
    CHECK_NEAR(x.pred[1], 10, 1e-9);
    as_planrec_free(&x.pr);

    /* the document's label as it is, in the TorchRec rendering too (escaped) */
    write_text(jpath, "{\"alg\":\"torchrec \\\"own\\\"\"," DOC_REST T1 "," T2 "," T3 "}}}\n");
    c.out = AS_PLAN_OUT_TORCHREC;
    c.w = NULL;
    c.text = tmpfile();
    as_torchrec_opts tro = { "", 8 };
    c.tro = &tro;
    CHECK_EQ_I64(as_plan_import_run(&st, &c, &in, jpath, &imported, err, sizeof err), 0);
    char line[4096] = "";
    rewind(c.text);
    CHECK(fgets(line, sizeof line, c.text) != NULL);
    CHECK(strstr(line, "{\"task\":5,\"alg\":\"torchrec \\\"own\\\"\",\"feasible\":true,\"world_size\":2,") == line);
    fclose(c.text);
    as_plan_input_free(&in);
}

/* the error importing text gives, with c's options */
static void import_err(const as_plan_input *in, const as_plan_run_cfg *c, const char *text, char *err, size_t errlen)
{
    char jpath[512];
    write_text(ut_tmppath(jpath, sizeof jpath, "trplanread-bad.json"), text);
    as_plan_run_stats st;
    int64_t imported = -1;
    CHECK_EQ_I64(as_plan_import_run(&st, c, in, jpath, &imported, err, errlen), -1);
    const char *p = strstr(err, "trplanread-bad.json: ");
    CHECK(p != NULL);
    if (p) memmove(err, p, strlen(p) + 1);   /* the message without the scratch directory */
}

TEST(trplanread_errors)
{
    as_plan_input in;
    toy_input(&in);
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_TEXT;
    c.text = tmpfile();
    char err[1024];
    import_err(&in, &c, DOC_HEAD T1 "," T2 "}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't3' of task 5 is missing from the plan");
    /* truncated: the column after its last byte */
    const char *cut = DOC_HEAD T1 "," T2 "," T3 "}}";
    char want[256];
    snprintf(want, sizeof want, "trplanread-bad.json: line 2: bad JSON: column %zu: unexpected end of input, expected ',' "
             "or '}' after a member", strlen(cut) + 1);
    import_err(&in, &c, "\n" DOC_HEAD T1 "," T2 "," T3 "}}\n", err, sizeof err);
    CHECK_STR(err, want);
    import_err(&in, &c, DOC_HEAD T1 "," T2 "," T3 ",\"t4\":{}}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't4': unknown: no features record of the "
                   "input names it (a model config's table name, else t<id>)");
    import_err(&in, &c, DOC_HEAD T1 "," T2 ",\"t3\":{\"sharding_type\":\"data_parallel\",\"ranks\":[0],\"shards\":[]}}}}\n",
               err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't3': data_parallel: 'ranks' is not an "
                   "array of all 2 ranks");
    /* --shards 4: the document's world_size 2 is not the plan's */
    c.shards = 4;
    import_err(&in, &c, DOC_HEAD T1 "," T2 "," T3 "}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): 'world_size' = 2 but the task has 4 shards (--shards)");
    c.shards = 0;
    /* the cap of the task or --mem-cap */
    c.cap_given = 1;
    c.mem_cap = 1000;
    import_err(&in, &c, DOC_HEAD T1 "," T2 "," T3 "}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: plan of task 5 (torchrec-import): shard 1 holds 2000 bytes, over the "
                   "1000-byte cap of --mem-cap");
    fclose(c.text);
    as_plan_input_free(&in);
}

/* placements and local_size as pipelines/torchrec_plan.py --check takes them: with local_size
 * L, shard placement rank:R/cuda:(R % L); without it, any device; local_size in
 * 1..AS_MAX_SHARDS; a line with no end (/dev/zero) is an error after the cap, not a read
 * without bound */
TEST(trplanread_placements)
{
    as_plan_input in;
    toy_input(&in);
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_TEXT;
    c.text = tmpfile();
    char err[1024], jpath[512];
    /* t3 on rank 0, placed on cuda:1 */
#define T3_DEV1 "\"t3\":{\"sharding_type\":\"table_wise\",\"ranks\":[0],\"shards\":[" \
    "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,2],\"placement\":\"rank:0/cuda:1\"}]}"
    import_err(&in, &c, DOC_HEAD T1 "," T2 "," T3_DEV1 "}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't3': shards[0]: placement 'rank:0/cuda:1' "
                   "is not rank:0/cuda:0: TorchRec places rank 0 on its host's GPU 0 (rank % local_size 8)");
    /* local_size 1: rank 1 is cuda:0 on its host, so t1's shard on rank:1/cuda:1 is wrong */
    import_err(&in, &c, "{\"task\":5,\"world_size\":2,\"local_size\":1,\"plan\":{\"\":{" T1 "," T2 "," T3 "}}}\n", err,
               sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't1': shards[0]: placement 'rank:1/cuda:1' "
                   "is not rank:1/cuda:0: TorchRec places rank 1 on its host's GPU 0 (rank % local_size 1)");
    /* without local_size, any device of the shard's rank */
    write_text(ut_tmppath(jpath, sizeof jpath, "trplanread-nolocal.json"),
               "{\"task\":5,\"world_size\":2,\"plan\":{\"\":{" T1 "," T2 "," T3_DEV1 "}}}\n");
    as_plan_run_stats st;
    int64_t imported = -1;
    CHECK_EQ_I64(as_plan_import_run(&st, &c, &in, jpath, &imported, err, sizeof err), 0);
    CHECK_EQ_I64(imported, 1);
    /* local_size out of range: 2^62, 0, 65537 */
    static const char *const ls[] = { "4611686018427387904", "0", "65537" };
    for (size_t j = 0; j < sizeof ls / sizeof *ls; j++) {
        char doc[2048], want[256];
        snprintf(doc, sizeof doc, "{\"task\":5,\"world_size\":2,\"local_size\":%s,\"plan\":{\"\":{" T1 "," T2 "," T3 "}}}\n",
                 ls[j]);
        import_err(&in, &c, doc, err, sizeof err);
        snprintf(want, sizeof want, "trplanread-bad.json: line 1: task 5 (torchrec-import): 'local_size' = %s is not an "
                 "integer in 1..65536", ls[j]);
        CHECK_STR(err, want);
    }
    /* /dev/zero: 64 MiB read, then the error */
    CHECK_EQ_I64(as_plan_import_run(&st, &c, &in, "/dev/zero", &imported, err, sizeof err), -1);
    CHECK_STR(err, "/dev/zero: line 1: longer than 64 MiB (one TorchRec plan a line, as as-plan --format torchrec writes "
                   "them)");
    fclose(c.text);
    as_plan_input_free(&in);
}

/* a table whose every shard is empty (0 rows or columns) is refused: skipping its empty
 * shards left it out of the plan (found by tests/fuzz/fuzz_trplanread.c) */
TEST(trplanread_empty_table)
{
    as_plan_input in;
    toy_input(&in);
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_TEXT;
    c.text = tmpfile();
    char err[1024];
#define T3_EMPTY "\"t3\":{\"sharding_type\":\"table_wise\",\"ranks\":[0],\"shards\":[" \
    "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,0],\"placement\":\"rank:0/cuda:0\"}]}"
    import_err(&in, &c, DOC_HEAD T1 "," T2 "," T3_EMPTY "}}}\n", err, sizeof err);
    CHECK_STR(err, "trplanread-bad.json: line 1: task 5 (torchrec-import): table 't3': every shard is empty (0 rows or "
                   "columns): none holds its 100 rows x 2 columns");
    fclose(c.text);
    as_plan_input_free(&in);
}
