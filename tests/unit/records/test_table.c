/* test_table.c - the `table` record (lib/records/table.c): written by as_write_table and read back
 * by as_table_parse through a real stream (int32 and int64 indices, a table with empty
 * bags, int32 offsets on the wire), and hostile records the reader refuses with the first
 * violation: offsets that decrease, that do not start at 0 or end at lookups, the wrong
 * number of entries. Dimension letters: B batch, E rows, D dim. */
#include "unit.h"
#include "table.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

/* one table record written to a stream file; returns its path */
static const char *write_one(const char *name, int64_t id, int64_t rows, int64_t batch, int64_t dim,
                             const int64_t *off, const void *idx, as_dtype dt)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", ut_tmpdir(), name);
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test_table", 0, NULL);
    as_write_table(w, id, rows, batch, dim, off, idx, dt, "unit");
    as_writer_close(w);
    return path;
}

/* read the stream's table record back: as_table_parse's return, err, the fields and the
 * arrays converted to int64 (out_off [batch+1], out_idx [lookups], at most 16 each) */
typedef struct { int64_t id, rows, batch, dim; int64_t off[16], idx[16]; int64_t noff, nidx; as_dtype odt; char src[32]; } got_t;

static int read_one(const char *path, got_t *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    as_reader *r = as_reader_open(path);
    if (!CHECK(r != NULL)) return -2;
    as_record rec;
    int rc = -2;
    while (as_reader_next(r, &rec) == 1) {
        if (!as_rec_is(&rec, "table")) continue;
        as_array o, x;
        rc = as_table_parse(&rec.obj, &g->id, &g->rows, &g->batch, &g->dim, &o, &x, g->src, sizeof g->src, err, errlen);
        if (rc == 0) {
            g->noff = o.n;
            g->nidx = x.n;
            g->odt = o.dtype;
            for (int64_t i = 0; i < o.n && i < 16; i++) g->off[i] = as_table_at(&o, i);
            for (int64_t i = 0; i < x.n && i < 16; i++) g->idx[i] = as_table_at(&x, i);
        }
    }
    as_reader_close(r);
    return rc;
}

TEST(table_write_then_parse)
{
    char err[256] = "";
    got_t g;
    /* bags {1,1,2}, {}, {3,0}, {4}: B = 4, 6 lookups, int32 indices */
    const int64_t off[5] = { 0, 3, 3, 5, 6 };
    const int32_t idx32[6] = { 1, 1, 2, 3, 0, 4 };
    CHECK_EQ_I64(read_one(write_one("t32.ast", 7, 5, 4, 16, off, idx32, AS_DT_I32), &g, err, sizeof err), 0);
    CHECK_EQ_I64(g.id, 7);
    CHECK_EQ_I64(g.rows, 5);
    CHECK_EQ_I64(g.batch, 4);
    CHECK_EQ_I64(g.dim, 16);
    CHECK_STR(g.src, "unit");
    CHECK_EQ_I64(g.noff, 5);
    CHECK_EQ_I64(g.odt, AS_DT_I32);   /* 6 lookups: offsets travel as int32 */
    for (int i = 0; i < 5; i++) CHECK_EQ_I64(g.off[i], off[i]);
    CHECK_EQ_I64(g.nidx, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(g.idx[i], idx32[i]);

    /* int64 indices past 2^31 */
    const int64_t off2[3] = { 0, 1, 2 }, idx64[2] = { (int64_t)1 << 33, 5 };
    CHECK_EQ_I64(read_one(write_one("t64.ast", 0, ((int64_t)1 << 33) + 1, 2, 4, off2, idx64, AS_DT_I64), &g, err,
                          sizeof err), 0);
    CHECK_EQ_I64(g.nidx, 2);
    CHECK_EQ_I64(g.idx[0], (int64_t)1 << 33);
    CHECK_EQ_I64(g.idx[1], 5);
}

/* the writer does not validate, so it makes the hostile records too */
TEST(table_parse_refuses_bad_offsets)
{
    char err[256] = "";
    got_t g;
    const int32_t idx[4] = { 0, 1, 2, 3 };
    /* bag 1 ends before it starts: offsets 0, 3, 1, 4 */
    const int64_t dec[4] = { 0, 3, 1, 4 };
    CHECK_EQ_I64(read_one(write_one("dec.ast", 9, 4, 3, 8, dec, idx, AS_DT_I32), &g, err, sizeof err), -1);
    CHECK_STR(err, "table 9: offsets decrease at bag 1");
    /* a decrease in the last bag: 0, 2, 4, 3 (it ends at lookups = 3: only the decrease is wrong) */
    const int64_t dec2[4] = { 0, 2, 4, 3 };
    CHECK_EQ_I64(read_one(write_one("dec2.ast", 2, 4, 3, 8, dec2, idx, AS_DT_I32), &g, err, sizeof err), -1);
    CHECK_STR(err, "table 2: offsets decrease at bag 2");
    /* equal neighbours (an empty bag) are fine */
    const int64_t flat[4] = { 0, 0, 0, 4 };
    CHECK_EQ_I64(read_one(write_one("flat.ast", 2, 4, 3, 8, flat, idx, AS_DT_I32), &g, err, sizeof err), 0);
    /* not starting at 0 */
    const int64_t start[4] = { 1, 2, 3, 4 };
    CHECK_EQ_I64(read_one(write_one("start.ast", 3, 4, 3, 8, start, idx, AS_DT_I32), &g, err, sizeof err), -1);
    CHECK_STR(err, "table 3: offsets must start at 0 and end at lookups (4)");
}

/* a record whose offsets do not end at `lookups`, or whose arrays have the wrong length,
 * packed by hand (the writer derives lookups from the offsets), then read back */
static int parse_packed(int64_t batch, int64_t lookups, const int32_t *off, int64_t noff, const int32_t *idx,
                        int64_t nidx, char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/packed.ast", ut_tmpdir());
    as_writer *w = as_writer_open(path, 0, 0);
    as_writer_header(w, "test_table", 0, NULL);
    msgpack_packer *pk = as_writer_pk(w);
    msgpack_pack_map(pk, 8);
    as_pack_kv_str(pk, "kind", "table");
    as_pack_kv_i64(pk, "id", 4);
    as_pack_kv_i64(pk, "rows", 10);
    as_pack_kv_i64(pk, "batch", batch);
    as_pack_kv_i64(pk, "lookups", lookups);
    as_pack_kv_i64(pk, "dim", 8);
    as_pack_kv_array(pk, "offsets", AS_DT_I32, off, 1, &noff);
    as_pack_kv_array(pk, "indices", AS_DT_I32, idx, 1, &nidx);
    as_writer_end_record(w);
    as_writer_close(w);
    got_t g;
    return read_one(path, &g, err, errlen);
}

TEST(table_parse_refuses_bad_lengths)
{
    char err[256] = "";
    const int32_t off[4] = { 0, 1, 2, 3 }, idx[3] = { 0, 1, 2 };
    CHECK_EQ_I64(parse_packed(3, 3, off, 4, idx, 3, err, sizeof err), 0);
    CHECK_EQ_I64(parse_packed(3, 2, off, 4, idx, 2, err, sizeof err), -1);
    CHECK_STR(err, "table 4: offsets must start at 0 and end at lookups (2)");
    CHECK_EQ_I64(parse_packed(2, 3, off, 4, idx, 3, err, sizeof err), -1);
    CHECK_STR(err, "table 4: offsets has 4 entries, expected batch + 1 = 3");
    CHECK_EQ_I64(parse_packed(3, 3, off, 4, idx, 2, err, sizeof err), -1);
    CHECK_STR(err, "table 4: indices has 2 entries but lookups is 3");
}
