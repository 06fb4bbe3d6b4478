/* test_piece.c - pieces of tables (lib/records/piece.h): parsing, the cover and size checks, a row
 * piece's lookups, TorchRec's row blocks; the features of pieces (as_features_row_piece,
 * as_features_cols) and the index that keeps them apart from whole tables
 * (as_featidx_piece). Tables and lookups are small and worked out by hand. */
#include "unit.h"

#include "common.h"
#include "featindex.h"
#include "featurize.h"
#include "piece.h"
#include "fixtures.h"

#include <stdlib.h>
#include <string.h>

static as_piece PC(int64_t c0, int64_t c1, int64_t r0, int64_t r1)
{
    as_piece p = { c0, c1, r0, r1 };
    return p;
}

/* parse a piece packed as nil (n < 0) or an array of n integers v; 0 or -1 */
static int parse_ints(const int64_t *v, int n, as_piece *p, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (n < 0) msgpack_pack_nil(&pk);
    else {
        msgpack_pack_array(&pk, (uint32_t)n);
        for (int i = 0; i < n; i++) msgpack_pack_int64(&pk, v[i]);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    err[0] = 0;
    const int rc = as_piece_parse(&up.data, p, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(piece_parse_nil_and_ranges)
{
    as_piece p = PC(9, 9, 9, 9);
    char err[256];
    CHECK_EQ_I64(parse_ints(NULL, -1, &p, err, sizeof err), 0);
    CHECK(as_piece_whole(&p));
    CHECK_EQ_I64(p.c0 + p.c1 + p.r0 + p.r1, 0);

    const int64_t ok[4] = { 4, 12, 100, 200 };
    CHECK_EQ_I64(parse_ints(ok, 4, &p, err, sizeof err), 0);
    CHECK(!as_piece_whole(&p));
    CHECK_EQ_I64(p.c0, 4);
    CHECK_EQ_I64(p.c1, 12);
    CHECK_EQ_I64(p.r0, 100);
    CHECK_EQ_I64(p.r1, 200);

    /* round trip through as_pack_piece */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const as_piece pp[2] = { AS_PIECE_WHOLE, PC(4, 12, 100, 200) };
    as_pack_pieces(&pk, pp, 2);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK(up.data.type == MSGPACK_OBJECT_ARRAY && up.data.via.array.size == 2);
    CHECK(up.data.via.array.ptr[0].type == MSGPACK_OBJECT_NIL);
    as_piece q;
    CHECK_EQ_I64(as_piece_parse(&up.data.via.array.ptr[1], &q, err, sizeof err), 0);
    CHECK(as_piece_eq(&q, &pp[1]));
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    CHECK(as_pieces_any(pp, 2));
    CHECK(!as_pieces_any(pp, 1));
    CHECK(!as_pieces_any(NULL, 5));
}

TEST(piece_parse_refusals)
{
    as_piece p;
    char err[256];
    const int64_t three[3] = { 0, 4, 0 }, five[5] = { 0, 4, 0, 10, 0 };
    CHECK_EQ_I64(parse_ints(three, 3, &p, err, sizeof err), -1);
    CHECK(strstr(err, "[c0, c1, r0, r1]") != NULL);
    CHECK_EQ_I64(parse_ints(five, 5, &p, err, sizeof err), -1);
    CHECK_EQ_I64(parse_ints(NULL, 0, &p, err, sizeof err), -1);
    const int64_t empty_cols[4] = { 4, 4, 0, 10 }, back_cols[4] = { 8, 4, 0, 10 };
    CHECK_EQ_I64(parse_ints(empty_cols, 4, &p, err, sizeof err), -1);
    CHECK(strstr(err, "columns") != NULL);
    CHECK_EQ_I64(parse_ints(back_cols, 4, &p, err, sizeof err), -1);
    const int64_t empty_rows[4] = { 0, 4, 10, 10 }, back_rows[4] = { 0, 4, 10, 3 };
    CHECK_EQ_I64(parse_ints(empty_rows, 4, &p, err, sizeof err), -1);
    CHECK(strstr(err, "rows") != NULL);
    CHECK_EQ_I64(parse_ints(back_rows, 4, &p, err, sizeof err), -1);
    const int64_t neg_c0[4] = { -1, 4, 0, 10 }, neg_r0[4] = { 0, 4, -5, 10 };
    CHECK_EQ_I64(parse_ints(neg_c0, 4, &p, err, sizeof err), -1);
    CHECK(strstr(err, "c0") != NULL);
    CHECK_EQ_I64(parse_ints(neg_r0, 4, &p, err, sizeof err), -1);
    CHECK(strstr(err, "r0") != NULL);
    const int64_t huge_c1[4] = { 0, (int64_t)1 << 40, 0, 10 }, huge_r1[4] = { 0, 4, 0, (int64_t)1 << 62 };
    CHECK_EQ_I64(parse_ints(huge_c1, 4, &p, err, sizeof err), -1);
    CHECK_EQ_I64(parse_ints(huge_r1, 4, &p, err, sizeof err), -1);

    /* a string where a piece or a number goes */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_str(&pk, 3);
    msgpack_pack_str_body(&pk, "all", 3);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_str(&pk, 1);
    msgpack_pack_str_body(&pk, "8", 1);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 10);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_I64(as_piece_parse(&up.data, &p, err, sizeof err), -1);
    CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_I64(as_piece_parse(&up.data, &p, err, sizeof err), -1);
    CHECK(strstr(err, "c1") != NULL);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

static int cover(const int64_t *ids, const as_piece *p, int64_t n, char *err)
{
    err[0] = 0;
    return as_pieces_check_cover(ids, p, n, err, 512);
}

TEST(piece_cover_good_tilings)
{
    char err[512];
    /* table 5 in two column pieces, table 2 whole, in a mixed order */
    const int64_t ids[3] = { 5, 2, 5 };
    const as_piece cols[3] = { PC(16, 32, 0, 100), AS_PIECE_WHOLE, PC(0, 16, 0, 100) };
    CHECK_EQ_I64(cover(ids, cols, 3, err), 0);
    /* row tiling of uneven blocks */
    const int64_t rid[3] = { 1, 1, 1 };
    const as_piece rows[3] = { PC(0, 8, 40, 100), PC(0, 8, 0, 17), PC(0, 8, 17, 40) };
    CHECK_EQ_I64(cover(rid, rows, 3, err), 0);
    /* a 2x2 grid */
    const int64_t gid[4] = { 3, 3, 3, 3 };
    const as_piece grid[4] = { PC(0, 4, 0, 10), PC(4, 8, 0, 10), PC(0, 4, 10, 30), PC(4, 8, 10, 30) };
    CHECK_EQ_I64(cover(gid, grid, 4, err), 0);
    /* a single piece from column 0 and row 0 covers its rectangle (the size check decides) */
    const int64_t one[1] = { 9 };
    const as_piece first[1] = { PC(0, 4, 0, 10) };
    CHECK_EQ_I64(cover(one, first, 1, err), 0);
    /* no pieces at all: distinct tables */
    const int64_t plain[3] = { 1, 2, 3 };
    CHECK_EQ_I64(cover(plain, NULL, 3, err), 0);
}

TEST(piece_cover_refusals_name_the_table)
{
    char err[512];
    /* overlapping columns */
    const int64_t ids[2] = { 7, 7 };
    const as_piece ov[2] = { PC(0, 16, 0, 100), PC(8, 32, 0, 100) };
    CHECK_EQ_I64(cover(ids, ov, 2, err), -1);
    CHECK(strstr(err, "table 7") && strstr(err, "overlap"));
    /* overlapping rows */
    const as_piece ovr[2] = { PC(0, 8, 0, 60), PC(0, 8, 50, 100) };
    CHECK_EQ_I64(cover(ids, ovr, 2, err), -1);
    CHECK(strstr(err, "overlap") != NULL);
    /* a gap in the columns: [0,8) and [16,32) */
    const as_piece gap[2] = { PC(0, 8, 0, 100), PC(16, 32, 0, 100) };
    CHECK_EQ_I64(cover(ids, gap, 2, err), -1);
    CHECK(strstr(err, "table 7") && strstr(err, "gap"));
    /* an L shape: three cells of a 2x2 grid */
    const int64_t gid[3] = { 4, 4, 4 };
    const as_piece ell[3] = { PC(0, 4, 0, 10), PC(4, 8, 0, 10), PC(0, 4, 10, 30) };
    CHECK_EQ_I64(cover(gid, ell, 3, err), -1);
    CHECK(strstr(err, "table 4") && strstr(err, "gap"));
    /* the whole table plus a piece of it */
    const int64_t wid[3] = { 2, 6, 6 };
    const as_piece wp[3] = { AS_PIECE_WHOLE, PC(0, 8, 0, 10), AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(wid, wp, 3, err), -1);
    CHECK(strstr(err, "table 6") && strstr(err, "whole"));
    /* a table listed twice, without pieces and with two whole pieces */
    const int64_t twice[3] = { 1, 3, 1 };
    CHECK_EQ_I64(cover(twice, NULL, 3, err), -1);
    CHECK(strstr(err, "table 1") != NULL);
    const as_piece ww[3] = { AS_PIECE_WHOLE, AS_PIECE_WHOLE, AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(twice, ww, 3, err), -1);
    CHECK(strstr(err, "table 1") != NULL);
    /* the same piece twice */
    const as_piece same[2] = { PC(0, 8, 0, 10), PC(0, 8, 0, 10) };
    CHECK_EQ_I64(cover(ids, same, 2, err), -1);
    /* a single piece not from column 0 or not from row 0 */
    const int64_t one[1] = { 9 };
    const as_piece late_c[1] = { PC(4, 8, 0, 10) }, late_r[1] = { PC(0, 8, 3, 10) };
    CHECK_EQ_I64(cover(one, late_c, 1, err), -1);
    CHECK(strstr(err, "table 9") && strstr(err, "gap"));
    CHECK_EQ_I64(cover(one, late_r, 1, err), -1);
    CHECK(strstr(err, "table 9") != NULL);
    /* two pieces both missing row 0 */
    const as_piece late2[2] = { PC(0, 4, 5, 10), PC(4, 8, 5, 10) };
    CHECK_EQ_I64(cover(ids, late2, 2, err), -1);
}

/* sizes: table id -> rows = 100 * id, dim = 8 * id; table 0 unknown */
static int size_of(void *ctx, int64_t id, int64_t *rows, int64_t *dim)
{
    if (id == 0) return -1;
    *rows = 100 * id;
    *dim = 8 * id;
    return 0;
}

static int dims(const int64_t *ids, const as_piece *p, int64_t n, char *err)
{
    err[0] = 0;
    return as_pieces_check_dims(ids, p, n, size_of, NULL, err, 512);
}

TEST(piece_check_dims)
{
    char err[512];
    /* table 2: 200 rows x 16 columns */
    const int64_t ids[3] = { 2, 2, 1 };
    const as_piece good[3] = { PC(0, 8, 0, 200), PC(8, 16, 0, 200), AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(ids, good, 3, err), 0);
    CHECK_EQ_I64(dims(ids, good, 3, err), 0);
    CHECK_EQ_I64(dims(ids, NULL, 3, err), 0);
    /* columns past the table */
    const as_piece wide[3] = { PC(0, 8, 0, 200), PC(8, 24, 0, 200), AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(ids, wide, 3, err), 0);
    CHECK_EQ_I64(dims(ids, wide, 3, err), -1);
    CHECK(strstr(err, "table 2") && strstr(err, "outside"));
    /* rows past the table */
    const as_piece tall[3] = { PC(0, 16, 0, 150), PC(0, 16, 150, 201), AS_PIECE_WHOLE };
    CHECK_EQ_I64(dims(ids, tall, 3, err), -1);
    CHECK(strstr(err, "table 2") != NULL);
    /* a cover short of the last column, and of the last row */
    const as_piece narrow[3] = { PC(0, 4, 0, 200), PC(4, 12, 0, 200), AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(ids, narrow, 3, err), 0);
    CHECK_EQ_I64(dims(ids, narrow, 3, err), -1);
    CHECK(strstr(err, "table 2") && strstr(err, "gap"));
    const as_piece shortr[3] = { PC(0, 16, 0, 100), PC(0, 16, 100, 199), AS_PIECE_WHOLE };
    CHECK_EQ_I64(cover(ids, shortr, 3, err), 0);
    CHECK_EQ_I64(dims(ids, shortr, 3, err), -1);
    CHECK(strstr(err, "table 2") != NULL);
    /* a single piece of the whole size is fine; of less, not */
    const int64_t one[1] = { 3 };
    const as_piece all3[1] = { PC(0, 24, 0, 300) }, part3[1] = { PC(0, 24, 0, 299) };
    CHECK_EQ_I64(dims(one, all3, 1, err), 0);
    CHECK_EQ_I64(dims(one, part3, 1, err), -1);
    /* an unknown table */
    const int64_t unk[2] = { 0, 0 };
    const as_piece up[2] = { PC(0, 4, 0, 10), PC(4, 8, 0, 10) };
    CHECK_EQ_I64(dims(unk, up, 2, err), -1);
    CHECK(strstr(err, "table 0") != NULL);
    /* as_piece_check alone */
    as_piece in = PC(0, 8, 0, 10), out = PC(0, 9, 0, 10);
    CHECK_EQ_I64(as_piece_check(5, &in, 10, 8, err, 512), 0);
    CHECK_EQ_I64(as_piece_check(5, &out, 10, 8, err, 512), -1);
    CHECK(as_piece_covers(&in, 10, 8));
    CHECK(!as_piece_covers(&in, 11, 8));
    as_piece w = AS_PIECE_WHOLE;
    CHECK(as_piece_covers(&w, 11, 8));
    as_piece f = as_piece_full(&w, 11, 8);
    CHECK(as_piece_eq(&f, &(as_piece){ 0, 8, 0, 11 }));
}

/* rows 10: bags { 1 7 2 } { } { 9 5 1 4 } { 8 } */
static const int64_t OFF[5] = { 0, 3, 3, 7, 8 };
static const int32_t IDX[8] = { 1, 7, 2, 9, 5, 1, 4, 8 };

TEST(piece_rows_data_split_and_rebased)
{
    int64_t off[5];
    int32_t idx[8];
    CHECK_EQ_I64(as_piece_rows_data(OFF, IDX, 4, 0, 5, NULL, NULL), 4);
    CHECK_EQ_I64(as_piece_rows_data(OFF, IDX, 4, 0, 5, off, idx), 4);
    const int64_t wo0[5] = { 0, 2, 2, 4, 4 };
    const int32_t wi0[4] = { 1, 2, 1, 4 };
    for (int b = 0; b < 5; b++) CHECK_EQ_I64(off[b], wo0[b]);
    for (int j = 0; j < 4; j++) CHECK_EQ_I64(idx[j], wi0[j]);
    CHECK_EQ_I64(as_piece_rows_data(OFF, IDX, 4, 5, 10, off, idx), 4);
    const int64_t wo1[5] = { 0, 1, 1, 3, 4 };
    const int32_t wi1[4] = { 2, 4, 0, 3 };
    for (int b = 0; b < 5; b++) CHECK_EQ_I64(off[b], wo1[b]);
    for (int j = 0; j < 4; j++) CHECK_EQ_I64(idx[j], wi1[j]);
    /* the pieces of any cut sum to the table's lookups */
    for (int64_t n = 1; n <= 12; n++) {
        as_piece bl[12];
        const int64_t k = as_piece_row_blocks(10, 16, n, bl);
        int64_t sum = 0;
        for (int64_t j = 0; j < k; j++) sum += as_piece_rows_data(OFF, IDX, 4, bl[j].r0, bl[j].r1, NULL, NULL);
        CHECK_EQ_I64(sum, 8);
    }
    /* a range no lookup hits: empty bags */
    CHECK_EQ_I64(as_piece_rows_data(OFF, IDX, 4, 3, 4, off, idx), 0);
    for (int b = 0; b < 5; b++) CHECK_EQ_I64(off[b], 0);
}

TEST(piece_row_blocks_torchrec)
{
    as_piece bl[8];
    /* 10 rows in 4: blocks of 3, the last of 1 */
    CHECK_EQ_I64(as_piece_row_blocks(10, 16, 4, bl), 4);
    const int64_t r[5] = { 0, 3, 6, 9, 10 };
    for (int j = 0; j < 4; j++) {
        CHECK_EQ_I64(bl[j].r0, r[j]);
        CHECK_EQ_I64(bl[j].r1, r[j + 1]);
        CHECK_EQ_I64(bl[j].c0, 0);
        CHECK_EQ_I64(bl[j].c1, 16);
    }
    int64_t ids[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    char err[512];
    CHECK_EQ_I64(cover(ids, bl, 4, err), 0);
    /* 9 rows in 4: blocks of 3, only 3 of them */
    CHECK_EQ_I64(as_piece_row_blocks(9, 8, 4, bl), 3);
    CHECK_EQ_I64(bl[2].r0, 6);
    CHECK_EQ_I64(bl[2].r1, 9);
    /* 5 rows in 4: blocks of 2: [0,2) [2,4) [4,5) */
    CHECK_EQ_I64(as_piece_row_blocks(5, 8, 4, bl), 3);
    CHECK_EQ_I64(bl[2].r0, 4);
    CHECK_EQ_I64(bl[2].r1, 5);
    /* fewer rows than blocks: one row each */
    CHECK_EQ_I64(as_piece_row_blocks(3, 8, 8, bl), 3);
    for (int j = 0; j < 3; j++) {
        CHECK_EQ_I64(bl[j].r0, j);
        CHECK_EQ_I64(bl[j].r1, j + 1);
    }
    CHECK_EQ_I64(cover(ids, bl, 3, err), 0);
    /* even division */
    CHECK_EQ_I64(as_piece_row_blocks(8, 4, 2, bl), 2);
    CHECK_EQ_I64(bl[1].r0, 4);
    CHECK_EQ_I64(bl[1].r1, 8);
    CHECK_EQ_I64(as_piece_row_blocks(8, 4, 0, bl), 0);
    CHECK_EQ_I64(as_piece_row_blocks(0, 4, 2, bl), 0);
}

/* table 1 of 10 rows x 16 columns with the bags above; its whole features and its row
 * pieces [0,5) and [5,10) */
static void table1(as_features *whole, as_features *lo, as_features *hi)
{
    as_array o = tsup_array(OFF, 5, AS_DT_I64), i = tsup_array(IDX, 8, AS_DT_I32);
    as_feat_scratch s = { 0 };
    char err[256];
    memset(whole, 0, sizeof *whole);
    memset(lo, 0, sizeof *lo);
    memset(hi, 0, sizeof *hi);
    CHECK_EQ_I64(as_features_compute(whole, &s, 1, 10, 16, &o, &i, err, sizeof err), 0);
    CHECK_EQ_I64(as_features_row_piece(lo, &s, 1, 10, 16, &o, &i, 0, 5, err, sizeof err), 0);
    CHECK_EQ_I64(as_features_row_piece(hi, &s, 1, 10, 16, &o, &i, 5, 10, err, sizeof err), 0);
    as_feat_scratch_free(&s);
}

TEST(piece_features_row_piece)
{
    as_features w, lo, hi;
    table1(&w, &lo, &hi);
    CHECK_EQ_I64(w.lookups, 8);
    CHECK(as_piece_whole(&w.piece));
    /* the counts of as_piece_rows_data, and they sum to the table's */
    CHECK_EQ_I64(lo.lookups, as_piece_rows_data(OFF, IDX, 4, 0, 5, NULL, NULL));
    CHECK_EQ_I64(hi.lookups, as_piece_rows_data(OFF, IDX, 4, 5, 10, NULL, NULL));
    CHECK_EQ_I64(lo.lookups + hi.lookups, w.lookups);
    CHECK(as_piece_eq(&lo.piece, &(as_piece){ 0, 16, 0, 5 }));
    CHECK(as_piece_eq(&hi.piece, &(as_piece){ 0, 16, 5, 10 }));
    CHECK_EQ_I64(lo.id, 1);
    CHECK_EQ_I64(lo.rows, 5);
    CHECK_EQ_I64(lo.dim, 16);
    CHECK_EQ_I64(lo.batch, 4);
    CHECK_NEAR(lo.pooling, 1.0, 0);
    /* [0,5): rows 1 (twice), 2, 4; the bags { 1 2 } { } { 1 4 } { } */
    CHECK_EQ_I64(lo.distinct, 3);
    CHECK_EQ_I64(lo.max_bag, 2);
    CHECK_NEAR(lo.bins[0], 2.0 / 3, 1e-12);
    CHECK_NEAR(lo.bins[1], 1.0 / 3, 1e-12);
    /* [5,10): rows 7, 9, 5, 8 once each */
    CHECK_EQ_I64(hi.distinct, 4);
    CHECK_NEAR(hi.bins[0], 1.0, 0);
    CHECK_EQ_I64(hi.bytes_fp16, 5 * 16 * 2);
    /* the whole range gives the whole table */
    as_features all;
    as_array o = tsup_array(OFF, 5, AS_DT_I64), i = tsup_array(IDX, 8, AS_DT_I32);
    as_feat_scratch s = { 0 };
    char err[256];
    memset(&all, 0, sizeof all);
    CHECK_EQ_I64(as_features_row_piece(&all, &s, 1, 10, 16, &o, &i, 0, 10, err, sizeof err), 0);
    CHECK(as_piece_whole(&all.piece));
    CHECK(as_features_same(&all, &w));
    /* bad ranges */
    CHECK_EQ_I64(as_features_row_piece(&all, &s, 1, 10, 16, &o, &i, 5, 11, err, sizeof err), -1);
    CHECK(strstr(err, "table 1") != NULL);
    CHECK_EQ_I64(as_features_row_piece(&all, &s, 1, 10, 16, &o, &i, 5, 5, err, sizeof err), -1);
    CHECK_EQ_I64(as_features_row_piece(&all, &s, 1, 10, 16, &o, &i, -1, 5, err, sizeof err), -1);
    as_feat_scratch_free(&s);
}

TEST(piece_features_cols)
{
    as_features w, lo, hi, c;
    table1(&w, &lo, &hi);
    CHECK_EQ_I64(as_features_cols(&c, &w, 4, 12), 0);
    CHECK_EQ_I64(c.dim, 8);
    CHECK_EQ_I64(c.rows, 10);
    CHECK_EQ_I64(c.bytes_fp16, 10 * 8 * 2);
    CHECK_EQ_I64(c.bytes_fp32, 10 * 8 * 4);
    CHECK_NEAR(c.size_gib, 160.0 / (1 << 30), 1e-20);
    CHECK(as_piece_eq(&c.piece, &(as_piece){ 4, 12, 0, 10 }));
    CHECK_EQ_I64(c.lookups, w.lookups);
    CHECK_EQ_I64(c.distinct, w.distinct);
    CHECK_NEAR(c.pooling, w.pooling, 0);
    CHECK(!memcmp(c.bins, w.bins, sizeof c.bins));
    CHECK(!memcmp(c.lookup_bins, w.lookup_bins, sizeof c.lookup_bins));
    /* all columns: the table itself */
    CHECK_EQ_I64(as_features_cols(&c, &w, 0, 16), 0);
    CHECK(as_piece_whole(&c.piece));
    CHECK(as_features_same(&c, &w));
    /* a column piece of a row piece keeps its rows */
    CHECK_EQ_I64(as_features_cols(&c, &hi, 8, 16), 0);
    CHECK(as_piece_eq(&c.piece, &(as_piece){ 8, 16, 5, 10 }));
    CHECK_EQ_I64(c.rows, 5);
    CHECK_EQ_I64(c.dim, 8);
    CHECK_EQ_I64(c.lookups, hi.lookups);
    CHECK_EQ_I64(c.bytes_fp16, 5 * 8 * 2);
    /* refusals: outside the columns, and a column piece of a column piece */
    CHECK_EQ_I64(as_features_cols(&c, &w, 8, 17), -1);
    CHECK_EQ_I64(as_features_cols(&c, &w, 8, 8), -1);
    CHECK_EQ_I64(as_features_cols(&c, &w, -4, 8), -1);
    as_features cp;
    CHECK_EQ_I64(as_features_cols(&cp, &w, 8, 16), 0);
    CHECK_EQ_I64(as_features_cols(&c, &cp, 0, 4), -1);
    as_features rc;
    CHECK_EQ_I64(as_features_cols(&rc, &hi, 4, 12), 0);
    CHECK_EQ_I64(as_features_cols(&c, &rc, 0, 4), -1);
}

TEST(piece_featidx_kept_apart_and_derived)
{
    as_features w, lo, hi, w2 = { 0 }, got;
    table1(&w, &lo, &hi);
    w2 = w;
    w2.id = 2;
    w2.rows = 20;
    as_featidx x = { 0 };
    char err[256];
    as_featidx_add(&x, &hi);
    as_featidx_add(&x, &w2);
    as_featidx_add(&x, &lo);
    as_featidx_add(&x, &w);
    as_featidx_add(&x, &lo);   /* an identical duplicate */
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), 0);
    /* whole tables only in f, the pieces apart */
    CHECK_EQ_I64(x.n, 2);
    CHECK_EQ_I64(x.npc, 2);
    CHECK(as_featidx_get(&x, 1) && as_piece_whole(&as_featidx_get(&x, 1)->piece));
    CHECK_EQ_I64(as_featidx_get(&x, 1)->lookups, 8);
    CHECK_EQ_I64(as_featidx_find(&x, 2), 1);
    /* the whole table, and a piece covering it */
    as_piece wp = AS_PIECE_WHOLE;
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &wp, &got), 0);
    CHECK(as_features_same(&got, &w));
    as_piece full = { 0, 16, 0, 10 };
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &full, &got), 0);
    CHECK(as_features_same(&got, &w));
    /* the records of the row pieces */
    as_piece rp = { 0, 16, 5, 10 };
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &rp, &got), 0);
    CHECK(as_features_same(&got, &hi));
    CHECK_EQ_I64(got.lookups, hi.lookups);
    /* a column piece of the table: derived */
    as_piece cp = { 4, 8, 0, 10 };
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &cp, &got), 0);
    CHECK_EQ_I64(got.dim, 4);
    CHECK_EQ_I64(got.rows, 10);
    CHECK_EQ_I64(got.lookups, 8);
    CHECK(as_piece_eq(&got.piece, &cp));
    /* a column piece of a row piece: derived from the row piece's record */
    as_piece crp = { 0, 8, 0, 5 };
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &crp, &got), 0);
    CHECK_EQ_I64(got.dim, 8);
    CHECK_EQ_I64(got.rows, 5);
    CHECK_EQ_I64(got.lookups, lo.lookups);
    CHECK(as_piece_eq(&got.piece, &crp));
    /* unknown: a row piece without a record, a table without features, a piece of table 2 */
    as_piece rq = { 0, 16, 0, 3 }, rq2 = { 0, 8, 0, 3 }, t2 = { 0, 16, 0, 10 };
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &rq, &got), -1);
    CHECK_EQ_I64(as_featidx_piece(&x, 1, &rq2, &got), -1);
    CHECK_EQ_I64(as_featidx_piece(&x, 3, &wp, &got), -1);
    CHECK_EQ_I64(as_featidx_piece(&x, 2, &t2, &got), -1);
    as_piece t2c = { 0, 8, 0, 20 };
    CHECK_EQ_I64(as_featidx_piece(&x, 2, &t2c, &got), 0);
    CHECK_EQ_I64(got.id, 2);
    CHECK_EQ_I64(got.rows, 20);
    as_featidx_free(&x);
}

TEST(piece_featidx_duplicates_differing)
{
    as_features w, lo, hi;
    table1(&w, &lo, &hi);
    as_featidx x = { 0 };
    char err[256];
    as_features lo2 = lo;
    lo2.lookups++;
    as_featidx_add(&x, &w);
    as_featidx_add(&x, &lo);
    as_featidx_add(&x, &lo2);
    CHECK_EQ_I64(as_featidx_build(&x, err, sizeof err), -1);
    CHECK(strstr(err, "piece") && strstr(err, "1[c 0:16, r 0:5)"));
    as_featidx_free(&x);
    /* a piece differing from its whole table is no duplicate */
    as_featidx y = { 0 };
    as_featidx_add(&y, &w);
    as_featidx_add(&y, &hi);
    CHECK_EQ_I64(as_featidx_build(&y, err, sizeof err), 0);
    as_featidx_free(&y);
}
