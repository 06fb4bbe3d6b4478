/* test_featrun.c - as-features' --model-task after the pass (lib/data/featrun.h
 * as_featrun_model_task): one test task of every table, ascending, onto --shards or the
 * model-config's world size; its cap --mem-cap, else the HBM less TorchRec's reservation
 * when the tables carry its memory model, else the HBM; the errors (no table, no shard
 * count, no room) write nothing. */
#include "unit.h"

#include "featrun.h"
#include "msgobj.h"
#include "trmem.h"

#include <stdio.h>
#include <string.h>

static const char *tmp_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", ut_tmpdir(), name);
    return buf;
}

/* the pool: tables 9, 2, 5 of 100, 200 and 300 bytes, no model config */
static void pool(as_featrun *st, int64_t *ids, int64_t *bytes)
{
    ids[0] = 9; ids[1] = 2; ids[2] = 5;
    bytes[0] = 100; bytes[1] = 200; bytes[2] = 300;
    memset(st, 0, sizeof *st);
    st->ids = ids;
    st->bytes = bytes;
    st->npool = 3;
}

/* as_featrun_model_task into a file; returns its result, the task record's fields read back
 * (*ntask: how many task records the file holds) */
static int run(const as_featrun *st, as_task_cfg *tc, int64_t *shards, int64_t *cap, int64_t *tables, int64_t *ntask,
               char *err, size_t errlen)
{
    const char *path = tmp_path("model-task.ast");
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    int rc = as_featrun_model_task(st, tc, w, err, errlen);
    as_writer_close(w);
    as_reader *r = as_reader_open(path);
    as_record rec;
    *ntask = 0;
    while (as_reader_next(r, &rec) == 1) {
        if (!as_rec_is(&rec, "task")) continue;
        (*ntask)++;
        char split[16] = "";
        as_obj_str(&rec.obj, "split", split, sizeof split);
        CHECK_STR(split, "test");
        as_obj_i64(&rec.obj, "shards", shards);
        as_obj_i64(&rec.obj, "mem_cap", cap);
        const msgpack_object *t = as_obj_get(&rec.obj, "tables");
        CHECK(t && t->type == MSGPACK_OBJECT_ARRAY && t->via.array.size == 3);
        for (uint32_t i = 0; t && i < t->via.array.size && i < 3; i++) tables[i] = t->via.array.ptr[i].via.i64;
    }
    as_reader_close(r);
    return rc;
}

TEST(featrun_model_task_shards_and_cap)
{
    as_featrun st;
    int64_t ids[3], bytes[3], shards = -1, cap = -1, tables[3] = { 0 }, n;
    char err[512];
    pool(&st, ids, bytes);
    /* --shards, no HBM: cap 0 (none) */
    as_task_cfg tc = { .ntasks = 0, .ntest = -1, .tables = 80, .shards = 4, .unseen_ratio = -1 };
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == 0);
    CHECK_EQ_I64(n, 1);
    CHECK_EQ_I64(shards, 4);
    CHECK_EQ_I64(cap, 0);
    CHECK(tables[0] == 2 && tables[1] == 5 && tables[2] == 9);   /* ascending */
    /* the model config's world size and HBM, tables without TorchRec's memory model: the HBM */
    st.world = 8;
    st.hbm = 1000000;
    tc = (as_task_cfg){ .ntest = -1, .tables = 80, .unseen_ratio = -1 };
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == 0);
    CHECK_EQ_I64(shards, 8);
    CHECK_EQ_I64(cap, 1000000);
    CHECK_EQ_I64(tc.mem_cap, 1000000);   /* set into the configuration */
    /* with the memory model: the HBM less the reservation */
    st.ids_per_rank = 100;
    st.dense = 1000;
    tc = (as_task_cfg){ .ntest = -1, .tables = 80, .unseen_ratio = -1 };
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == 0);
    CHECK_EQ_I64(cap, (int64_t)as_trmem_cap(1000000, 100, 1000));
    CHECK(cap > 0 && cap < 1000000);
    /* --mem-cap and --shards win over the model config */
    tc = (as_task_cfg){ .ntest = -1, .tables = 80, .shards = 2, .mem_cap = 12345, .unseen_ratio = -1 };
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == 0);
    CHECK_EQ_I64(shards, 2);
    CHECK_EQ_I64(cap, 12345);
}

TEST(featrun_model_task_errors)
{
    as_featrun st;
    int64_t ids[3], bytes[3], shards, cap, tables[3], n;
    char err[512];
    pool(&st, ids, bytes);
    /* no shard count: no --shards and no model-config record */
    as_task_cfg tc = { .ntest = -1, .tables = 80, .unseen_ratio = -1 };
    err[0] = 0;
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == -1);
    CHECK_EQ_I64(n, 0);
    CHECK_STR(err, "--model-task: no model-config record in the input (as-convert --config writes one): give --shards");
    /* no table */
    st.npool = 0;
    tc.shards = 2;
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == -1);
    CHECK_EQ_I64(n, 0);
    CHECK_STR(err, "--model-task: the input holds no table");
    /* a reservation that leaves nothing of the HBM */
    st.npool = 3;
    st.hbm = 1000;
    st.ids_per_rank = 1e6;
    st.dense = 0;
    CHECK(run(&st, &tc, &shards, &cap, tables, &n, err, sizeof err) == -1);
    CHECK_EQ_I64(n, 0);
    CHECK_STR(err, "--model-task: TorchRec's reservation (15 % of 1000 bytes of HBM, 0 bytes for the dense part and 20 "
                   "copies of 1000000 ids per rank) leaves nothing for the tables");
}
