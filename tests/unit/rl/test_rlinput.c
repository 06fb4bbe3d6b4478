/* test_rlinput.c - unit tests for lib/rl/rlinput.c (as-rl's input) on hand-made streams: the
 * training tasks joined to their tables' features (test tasks left out), the cost records
 * as measured shards of feature positions (skipped and counted: an error, no cost_ms, no
 * tables, a table without features), several inputs read in turn; cost records of pieces
 * (row blocks, column pieces, a column piece of a row block, a piece that is its whole
 * table) joined to the pieces' own features, a piece without features skipped and
 * counted; and the messages for no training task, a task's table without features, a cost
 * that is not positive, bad pieces, a bad task record and a missing file.
 */
#include "unit.h"

#include "common.h"
#include "rlinput.h"
#include "fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static as_features feat(int64_t id, int64_t dim)
{
    as_features f = tsup_features(id, dim, 500, 2, 8, 16);
    f.bins[2] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}

static char g_path[8][512];
static int g_k;
#define tmp(name) (snprintf(g_path[g_k % 8], 512, "%s/%s", ut_tmpdir(), (name)), g_path[g_k++ % 8])

static void put_task(as_writer *w, int64_t id, const int64_t *ids, int n, int64_t shards, const char *split)
{
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 4 + (split != NULL));
    as_pack_kv_str(pk, "kind", "task");
    as_pack_kv_i64(pk, "id", id);
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, ids[i]);
    as_pack_kv_i64(pk, "shards", shards);
    if (split) as_pack_kv_str(pk, "split", split);
    as_writer_end_record(w);
}

/* a cost record: tables ids[0..n), cost_ms (NAN: nil), error (NULL: none) */
static void put_cost(as_writer *w, const int64_t *ids, int n, double cost, const char *error)
{
    tsup_put_cost(w, &(tsup_cost){ .ids = ids, .n = n, .has_cost = 1, .cost = cost, .has_error = error != NULL, .error = error });
}

/* a cost record of pieces: tables ids[0..n), pieces p (c1 == 0: nil, the whole table) */
static void put_cost_pieces(as_writer *w, const int64_t *ids, const as_piece *p, int n, double cost)
{
    tsup_put_cost(w, &(tsup_cost){ .ids = ids, .pieces = p, .n = n, .has_cost = 1, .cost = cost });
}

/* input one: the features of tables 5, 1, 3 and 8 (out of order), the costs;
 * input two: the tasks */
static void write_inputs(const char *p1, const char *p2)
{
    as_writer *w = as_writer_open(p1, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t fid[] = { 5, 1, 3, 8 };
    for (int i = 0; i < 4; i++) {
        as_features f = feat(fid[i], 4 * (i + 1));
        as_features_write(w, &f);
    }
    const int64_t c1[] = { 3, 1 }, c2[] = { 8 }, c3[] = { 1, 7 }, c4[] = { 5, 3, 8 };
    put_cost(w, c1, 2, 2.5, NULL);
    put_cost(w, c2, 1, 1.0, "out of memory");   /* skipped: an error */
    put_cost(w, c2, 1, NAN, NULL);              /* skipped: not measured */
    put_cost(w, c3, 2, 4.0, NULL);              /* table 7 has no features */
    put_cost(w, c2, 0, 3.0, NULL);              /* skipped: no tables */
    put_cost(w, c4, 3, 0.5, NULL);
    as_writer_close(w);
    w = as_writer_open(p2, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t t1[] = { 8, 1, 5 }, t2[] = { 3, 5 };
    put_task(w, 0, t1, 3, 2, "train");
    put_task(w, 1, t2, 2, 2, "test");           /* left out */
    put_task(w, 2, t2, 2, 1, NULL);
    as_writer_close(w);
}

TEST(rlinput_joins_tasks_and_costs)
{
    const char *p1 = tmp("ri-ri1.ast"), *p2 = tmp("ri-ri2.ast");
    write_inputs(p1, p2);
    char *files[2] = { (char *)p1, (char *)p2 };
    char err[1024] = "";
    as_rl_input in;
    CHECK_EQ_I64(as_rl_input_read(&in, files, 2, err, sizeof err), 0);
    /* the features sorted by id: 1, 3, 5, 8; no pieces */
    CHECK_EQ_I64(in.ntables, 4);
    CHECK_EQ_I64(in.nfeat, 4);
    CHECK_EQ_I64(in.npieces, 0);
    CHECK_EQ_I64(in.feat[0].id, 1);
    CHECK_EQ_I64(in.feat[3].id, 8);
    /* two training tasks, their tables in record order */
    CHECK_EQ_I64(in.ntasks, 2);
    CHECK_EQ_I64(in.tasks[0].id, 0);
    CHECK_EQ_I64(in.tasks[0].n, 3);
    CHECK_EQ_I64(in.tasks[0].K, 2);
    CHECK(in.tasks[0].t[0] == &in.feat[3] && in.tasks[0].t[1] == &in.feat[0] && in.tasks[0].t[2] == &in.feat[2]);
    CHECK_EQ_I64(in.tasks[1].id, 2);
    CHECK_EQ_I64(in.tasks[1].K, 1);
    CHECK(in.tasks[1].t[0] == &in.feat[1] && in.tasks[1].t[1] == &in.feat[2]);
    /* the measured shards as positions: {3, 1} and {5, 3, 8} */
    CHECK_EQ_I64(in.nseed, 2);
    CHECK_EQ_I64(in.cost_skipped, 3);
    CHECK_EQ_I64(in.cost_nofeat, 1);
    CHECK_EQ_I64(in.cost_nopiece, 0);
    CHECK_EQ_I64(in.seed_pieces, 0);
    CHECK_EQ_I64(in.seed_off[0], 0);
    CHECK_EQ_I64(in.seed_off[1], 2);
    CHECK_EQ_I64(in.seed_off[2], 5);
    const int64_t want[] = { 1, 0, 2, 1, 3 };
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(in.seed_pos[i], want[i]);
    CHECK_NEAR(in.seed_cost[0], 2.5, 0);
    CHECK_NEAR(in.seed_cost[1], 0.5, 0);
    as_rl_input_free(&in);
}

/* Pieces (issue 37): tables 1 (dim 8) and 3 (dim 16), 500 rows each, pooling 2, 16 lookups;
 * the features records of table 3's two row blocks (as as-features --row-pieces 2 writes
 * them: 250 rows, pooling 1.5 and 0.5, 12 and 4 lookups) and none of table 1's. Cost
 * records (as as-bench --sample-pieces writes them):
 *   0: t3 rows [0, 250), t3 rows [250, 500), t1 whole   row blocks: their records
 *   1: t1 columns [0, 4), t3 columns [8, 16)            column pieces: derived from the tables
 *   2: t1 rows [0, 100)                                 a row block without features: skipped
 *   3: t3 columns [0, 8) of rows [250, 500)             derived from the row block's record
 *   4: t1 columns [0, 8) of rows [0, 500)               the whole table
 * Before issue 37 each entry was joined to its whole table (rows 500, dim 8 or 16, pooling
 * 2) and record 2 was kept as table 1. */
static as_features piece_feat(int64_t id, int64_t dim, int64_t r0, int64_t r1, double pooling, int64_t lookups)
{
    as_features f = tsup_features(id, dim, r1 - r0, pooling, 8, lookups);
    f.piece = (as_piece){ 0, dim, r0, r1 };
    f.bins[3] = 1;
    snprintf(f.source, sizeof f.source, "pool.ast");
    return f;
}

TEST(rlinput_joins_pieces_to_their_features)
{
    const char *p = tmp("ri-pieces.ast");
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    as_features t1 = feat(1, 8), t3 = feat(3, 16);
    t1.pooling = t3.pooling = 2;
    as_features_write(w, &t3);
    as_features_write(w, &t1);
    as_features b0 = piece_feat(3, 16, 0, 250, 1.5, 12), b1 = piece_feat(3, 16, 250, 500, 0.5, 4);
    as_features_write(w, &b1);
    as_features_write(w, &b0);
    const int64_t tk[] = { 1, 3 };
    put_task(w, 0, tk, 2, 2, "train");
    const int64_t c0[] = { 3, 3, 1 }, c1[] = { 1, 3 }, c2[] = { 1 }, c3[] = { 3 }, c4[] = { 1 };
    const as_piece p0[] = { { 0, 16, 0, 250 }, { 0, 16, 250, 500 }, AS_PIECE_WHOLE }, p1[] = { { 0, 4, 0, 500 }, { 8, 16, 0, 500 } },
                   p2[] = { { 0, 8, 0, 100 } }, p3[] = { { 0, 8, 250, 500 } }, p4[] = { { 0, 8, 0, 500 } };
    put_cost_pieces(w, c0, p0, 3, 3.0);
    put_cost_pieces(w, c1, p1, 2, 2.0);
    put_cost_pieces(w, c2, p2, 1, 1.0);
    put_cost_pieces(w, c3, p3, 1, 0.75);
    put_cost_pieces(w, c4, p4, 1, 1.25);
    as_writer_close(w);
    char *files[1] = { (char *)p };
    char err[1024] = "";
    as_rl_input in;
    if (!CHECK_EQ_I64(as_rl_input_read(&in, files, 1, err, sizeof err), 0)) fprintf(stderr, "  %s\n", err);
    /* the tables first, in id order; then the 5 distinct pieces of the records kept */
    CHECK_EQ_I64(in.ntables, 2);
    CHECK_EQ_I64(in.npieces, 5);
    CHECK_EQ_I64(in.nfeat, 7);
    CHECK(in.tasks[0].t[0] == &in.feat[0] && in.tasks[0].t[1] == &in.feat[1]);
    /* record 2 skipped (its piece has no features), the others kept; 3 of them hold pieces */
    CHECK_EQ_I64(in.nseed, 4);
    CHECK_EQ_I64(in.cost_nopiece, 1);
    CHECK_EQ_I64(in.cost_nofeat, 0);
    CHECK_EQ_I64(in.cost_skipped, 0);
    CHECK_EQ_I64(in.seed_pieces, 3);
    const int64_t off[] = { 0, 3, 5, 6, 7 };
    for (int j = 0; j < 5; j++) CHECK_EQ_I64(in.seed_off[j], off[j]);
    const double cost[] = { 3.0, 2.0, 0.75, 1.25 };
    for (int j = 0; j < 4; j++) CHECK_NEAR(in.seed_cost[j], cost[j], 0);
    /* each entry's item: table id, piece, rows, dim, pooling, lookups */
    const struct { int64_t id; as_piece p; int64_t rows, dim; double pooling; int64_t lookups; } want[] = {
        { 3, { 0, 16, 0, 250 }, 250, 16, 1.5, 12 },     /* row blocks: their own records */
        { 3, { 0, 16, 250, 500 }, 250, 16, 0.5, 4 },
        { 1, AS_PIECE_WHOLE, 500, 8, 2, 16 },            /* the whole table */
        { 1, { 0, 4, 0, 500 }, 500, 4, 2, 16 },         /* column pieces of the tables */
        { 3, { 8, 16, 0, 500 }, 500, 8, 2, 16 },
        { 3, { 0, 8, 250, 500 }, 250, 8, 0.5, 4 },      /* columns of a row block */
        { 1, AS_PIECE_WHOLE, 500, 8, 2, 16 },            /* a piece that covers its table */
    };
    for (int i = 0; i < 7; i++) {
        int64_t pos = in.seed_pos[i];
        if (!CHECK(pos >= 0 && pos < in.nfeat)) continue;
        const as_features *f = &in.feat[pos];
        CHECK_EQ_I64(f->id, want[i].id);
        CHECK(as_piece_eq(&f->piece, &want[i].p));
        CHECK_EQ_I64(f->rows, want[i].rows);
        CHECK_EQ_I64(f->dim, want[i].dim);
        CHECK_NEAR(f->pooling, want[i].pooling, 0);
        CHECK_EQ_I64(f->lookups, want[i].lookups);
        /* a piece is never its whole table's item; a whole table is the task's */
        CHECK((pos < in.ntables) == as_piece_whole(&want[i].p));
    }
    CHECK(&in.feat[in.seed_pos[2]] == in.tasks[0].t[0] && in.seed_pos[6] == in.seed_pos[2]);
    as_rl_input_free(&in);
}

/* as_rl_input_read of one input holding what fill writes after the features of tables 5, 1,
 * 3, 8; returns its result, err the message */
static int read_one(void (*fill)(as_writer *), const char *name, char *err, size_t errlen, char *path)
{
    const char *p = tmp(name);
    snprintf(path, 512, "%s", p);
    as_writer *w = as_writer_open(p, 0, 0);
    as_writer_header(w, "test", 0, NULL);
    const int64_t fid[] = { 5, 1, 3, 8 };
    for (int i = 0; i < 4; i++) {
        as_features f = feat(fid[i], 8);
        as_features_write(w, &f);
    }
    fill(w);
    as_writer_close(w);
    char *files[1] = { (char *)p };
    as_rl_input in;
    int rc = as_rl_input_read(&in, files, 1, err, errlen);
    as_rl_input_free(&in);
    return rc;
}

static void only_test_tasks(as_writer *w)
{
    const int64_t t[] = { 1, 3 };
    put_task(w, 4, t, 2, 2, "test");
}

static void task_without_features(as_writer *w)
{
    const int64_t t[] = { 1, 6 };
    put_task(w, 9, t, 2, 2, "train");
}

static void zero_cost(as_writer *w)
{
    const int64_t t[] = { 1, 3 };
    put_task(w, 0, t, 2, 2, "train");
    put_cost(w, t, 2, 0, NULL);
}

static void bad_pieces(as_writer *w)
{
    const int64_t t[] = { 1, 3 };
    put_task(w, 0, t, 2, 2, "train");
    /* two tables, one piece */
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 4);
    as_pack_kv_str(pk, "kind", "cost");
    as_pack_str(pk, "tables");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int64(pk, 1);
    msgpack_pack_int64(pk, 3);
    as_pack_str(pk, "pieces");
    msgpack_pack_array(pk, 1);
    msgpack_pack_nil(pk);
    as_pack_kv_f64(pk, "cost_ms", 1.0);
    as_writer_end_record(w);
}

static void bad_task(as_writer *w)
{
    const int64_t t[] = { 1, 3 };
    put_task(w, 0, t, 2, 0, "train");   /* no shards */
}

TEST(rlinput_messages)
{
    char err[1024] = "", want[1200], path[512];
    CHECK_EQ_I64(read_one(only_test_tasks, "ri-m1.ast", err, sizeof err, path), -1);
    CHECK_STR(err, "no training task records in the input (make them with as-features --tasks)");
    CHECK_EQ_I64(read_one(task_without_features, "ri-m2.ast", err, sizeof err, path), -1);
    CHECK_STR(err, "task 9: table 6 has no features record in the input");
    CHECK_EQ_I64(read_one(zero_cost, "ri-m3.ast", err, sizeof err, path), -1);
    snprintf(want, sizeof want, "%s: record 7: cost: 'cost_ms' = 0 is not a positive cost", path);
    CHECK_STR(err, want);
    CHECK_EQ_I64(read_one(bad_pieces, "ri-m5.ast", err, sizeof err, path), -1);
    snprintf(want, sizeof want, "%s: record 7: cost: 'pieces' must be a list of 2 pieces, one per table entry", path);
    CHECK_STR(err, want);
    CHECK_EQ_I64(read_one(bad_task, "ri-m4.ast", err, sizeof err, path), -1);
    snprintf(want, sizeof want, "%s: record 6: ", path);
    CHECK(!strncmp(err, want, strlen(want)));
    /* a file that is not there */
    const char *none = tmp("ri-none.ast");
    char *files[1] = { (char *)none };
    as_rl_input in;
    CHECK_EQ_I64(as_rl_input_read(&in, files, 1, err, sizeof err), -1);
    as_rl_input_free(&in);
    snprintf(want, sizeof want, "%s: No such file or directory", none);
    CHECK_STR(err, want);
}
