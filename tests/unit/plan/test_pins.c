/* test_pins.c - the items of a plan that have one rank (lib/plan/pins.h) on hand-made items:
 * TorchRec's row_wise blocks (a table's K row blocks of ceil(E / K) rows, all columns each)
 * pinned block i to rank i, other cuts and whole tables left free; with hosts of L ranks
 * (as_plan_pins_hosts) a table's L blocks pinned to one host, the tables spread heaviest
 * first onto the host of the least work so far. test_objective.c checks that the planners
 * keep the pins. */
#include "unit.h"

#include "fixtures.h"
#include "pins.h"

#include <string.h>

#define DIM 16

/* table id's row piece [r0, r1) of all DIM columns (a table of `rows` rows), with lookups
   lookups and a batch of 10 */
static as_features rows_of(int64_t id, int64_t rows, int64_t r0, int64_t r1, int64_t lookups)
{
    as_features f = tsup_features(id, DIM, rows, 2, 10, lookups);
    f.piece = (as_piece){ 0, DIM, r0, r1 };
    f.rows = r1 - r0;
    return f;
}

static void ptrs(const as_features *f, int64_t n, const as_features **t)
{
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
}

/* table 5 of 10 rows on K = 3: blocks of ceil(10 / 3) = 4 rows, [0, 4) [4, 8) [8, 10), on
 * ranks 0, 1, 2 whatever the items' order; whole tables and a column-cut table free */
TEST(pins_row_wise_blocks_on_their_ranks)
{
    as_features f[8];
    f[0] = tsup_features(1, DIM, 100, 2, 10, 50);                 /* whole */
    f[1] = rows_of(5, 10, 8, 10, 7);                              /* block 2 */
    f[2] = rows_of(5, 10, 0, 4, 7);                               /* block 0 */
    f[3] = tsup_features(2, 8, 100, 2, 10, 50);                   /* table 2's columns [0, 8) and [8, 16) */
    f[3].piece = (as_piece){ 0, 8, 0, 100 };
    f[4] = tsup_features(2, 8, 100, 2, 10, 50);
    f[4].piece = (as_piece){ 8, 16, 0, 100 };
    f[5] = rows_of(5, 10, 4, 8, 7);                               /* block 1 */
    const as_features *t[8];
    ptrs(f, 6, t);
    int64_t pin[8];
    CHECK_EQ_I64(as_plan_pins(t, 6, 3, pin), 3);
    const int64_t want[6] = { -1, 2, 0, -1, -1, 1 };
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(pin[i], want[i]);
    /* K = 2 or 4 is another cut (blocks of 5, of 3 rows): nothing pinned */
    CHECK_EQ_I64(as_plan_pins(t, 6, 2, pin), 0);
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(pin[i], -1);
    CHECK_EQ_I64(as_plan_pins(t, 6, 4, pin), 0);
    /* one rank: nothing to pin */
    CHECK_EQ_I64(as_plan_pins(t, 6, 1, pin), 0);
    /* whole tables alone: nothing */
    CHECK_EQ_I64(as_plan_pins(t, 1, 3, pin), 0);
    CHECK_EQ_I64(pin[0], -1);
}

/* fewer blocks than ranks when the last ones would be empty: 5 rows on K = 4, blocks of 2,
 * [0, 2) [2, 4) [4, 5) on ranks 0..2; two row-wise tables each pinned on its own */
TEST(pins_short_table_and_two_tables)
{
    as_features f[7] = { rows_of(3, 5, 4, 5, 1), rows_of(3, 5, 0, 2, 1), rows_of(3, 5, 2, 4, 1),
                         rows_of(9, 8, 6, 8, 1), rows_of(9, 8, 0, 2, 1), rows_of(9, 8, 2, 4, 1), rows_of(9, 8, 4, 6, 1) };
    const as_features *t[7];
    ptrs(f, 7, t);
    int64_t pin[7];
    CHECK_EQ_I64(as_plan_pins(t, 7, 4, pin), 7);
    const int64_t want[7] = { 2, 0, 1, 3, 0, 1, 2 };
    for (int i = 0; i < 7; i++) CHECK_EQ_I64(pin[i], want[i]);
    /* table 3 without its last block: its pieces cover 4 rows, TorchRec's blocks of 1 row
       for K = 4, not theirs; table 9 still pinned */
    CHECK_EQ_I64(as_plan_pins(t + 1, 6, 4, pin), 4);
    const int64_t want2[6] = { -1, -1, 3, 0, 1, 2 };
    for (int i = 0; i < 6; i++) CHECK_EQ_I64(pin[i], want2[i]);
    CHECK_EQ_I64(as_plan_pins(t, 1, 4, pin), 0);
}

/* row blocks cut any other way, or not of all columns: free */
TEST(pins_other_cuts_free)
{
    int64_t pin[4];
    const as_features *t[4];
    /* 10 rows in [0, 4) [4, 10) on K = 2: TorchRec's blocks are [0, 5) [5, 10) */
    as_features a[2] = { rows_of(4, 10, 0, 4, 1), rows_of(4, 10, 4, 10, 1) };
    ptrs(a, 2, t);
    CHECK_EQ_I64(as_plan_pins(t, 2, 2, pin), 0);
    CHECK(pin[0] == -1 && pin[1] == -1);
    /* TorchRec's row blocks for K = 2, but half the columns each */
    as_features b[2] = { rows_of(4, 10, 0, 5, 1), rows_of(4, 10, 5, 10, 1) };
    for (int i = 0; i < 2; i++) b[i].piece.c1 = DIM / 2;
    ptrs(b, 2, t);
    CHECK_EQ_I64(as_plan_pins(t, 2, 2, pin), 0);
    /* the same all columns: pinned */
    b[0].piece.c1 = b[1].piece.c1 = DIM;
    CHECK_EQ_I64(as_plan_pins(t, 2, 2, pin), 2);
    CHECK(pin[0] == 0 && pin[1] == 1);
    /* a block cut again in columns ([0, 5) twice): not the row blocks */
    as_features c[3] = { rows_of(4, 10, 0, 5, 1), rows_of(4, 10, 0, 5, 1), rows_of(4, 10, 5, 10, 1) };
    c[0].piece.c1 = 8, c[0].dim = 8;
    c[1].piece.c0 = 8, c[1].dim = 8;
    ptrs(c, 3, t);
    CHECK_EQ_I64(as_plan_pins(t, 3, 2, pin), 0);
}

/* four tables of 8 rows, each as 4 blocks of 2 rows: table-row-wise on K = 8 in hosts of
 * L = 4, each table on one host, block i on rank h L + i; item order: tables 1..4, blocks
 * 0..3 */
static int64_t four_tables(as_features *f, const int64_t lookups[4])
{
    int64_t n = 0;
    for (int64_t id = 1; id <= 4; id++)
        for (int64_t b = 0; b < 4; b++) f[n++] = rows_of(id, 8, 2 * b, 2 * b + 2, lookups[id - 1]);
    return n;
}

/* with work given: the tables' work 1: 10, 2: 30, 3: 15, 4: 12. Heaviest first onto the
 * least loaded host so far: 2 host 0 (loads 30, 0); 3 host 1 (30, 15); 4 host 1 (30, 27);
 * 1 host 1 (27 < 30: 30, 37) */
TEST(pins_hosts_by_work)
{
    as_features f[16];
    const int64_t lk[4] = { 1, 1, 1, 1 };
    const int64_t n = four_tables(f, lk);
    const as_features *t[16];
    ptrs(f, n, t);
    const double table_work[4] = { 10, 30, 15, 12 };
    double work[16];
    for (int64_t i = 0; i < n; i++) work[i] = table_work[f[i].id - 1] / 4;
    int64_t pin[16];
    unsigned char tw[16];
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, work, pin, tw), 16);
    /* host 0: table 2 (30); host 1: 3 (15), 4 (27), 1 (37) */
    const int64_t host[4] = { 1, 0, 1, 1 };
    for (int64_t i = 0; i < n; i++) {
        CHECK_EQ_I64(pin[i], host[f[i].id - 1] * 4 + f[i].piece.r0 / 2);
        CHECK_EQ_I64(tw[i], 1);
    }
    /* table 1's work 40 now: 1 host 0 (40, 0), 2 host 1 (40, 30), 3 host 1 (40, 45), 4 host 0
       (52, 45) */
    for (int64_t i = 0; i < n; i++)
        if (f[i].id == 1) work[i] = 10;
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, work, pin, tw), 16);
    const int64_t host2[4] = { 0, 1, 1, 0 };
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(pin[i], host2[f[i].id - 1] * 4 + f[i].piece.r0 / 2);
    /* ties: equal work, the lower id first, onto the lowest host of the least: 1 host 0,
       2 host 1, 3 host 0, 4 host 1 */
    for (int64_t i = 0; i < n; i++) work[i] = 1;
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, work, pin, tw), 16);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(pin[i], ((f[i].id - 1) % 2) * 4 + f[i].piece.r0 / 2);
    /* three hosts of 4 (K = 12): 1 host 0, 2 host 1, 3 host 2, 4 host 0 */
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 12, 4, work, pin, tw), 16);
    const int64_t host3[4] = { 0, 1, 2, 0 };
    for (int64_t i = 0; i < n; i++) CHECK_EQ_I64(pin[i], host3[f[i].id - 1] * 4 + f[i].piece.r0 / 2);
}

/* without work: the bytes each table moves, its 4 blocks' ids in (lookups x 8) and outputs
 * and gradients out (2 x batch x dim x 4 = 2 x 10 x 16 x 4 = 1280 a block): table 1
 * 4 x (800 + 1280) = 8320, table 2 4 x (8000 + 1280) = 37120, table 3 4 x (80 + 1280) = 5440,
 * table 4 4 x (4000 + 1280) = 21120. Table 2 host 0 (loads 37120, 0), 4 host 1 (37120,
 * 21120), 1 host 1 (37120, 29440), 3 host 1 (37120, 34880) */
TEST(pins_hosts_by_bytes)
{
    as_features f[16];
    const int64_t lk[4] = { 100, 1000, 10, 500 };
    const int64_t n = four_tables(f, lk);
    const as_features *t[16];
    ptrs(f, n, t);
    int64_t pin[16];
    unsigned char tw[16];
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, NULL, pin, tw), 16);
    const int64_t host[4] = { 1, 0, 1, 1 };
    for (int64_t i = 0; i < n; i++) {
        CHECK_EQ_I64(pin[i], host[f[i].id - 1] * 4 + f[i].piece.r0 / 2);
        CHECK_EQ_I64(tw[i], 1);
    }
    /* twrw not wanted: the same pins */
    int64_t pin2[16];
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, NULL, pin2, NULL), 16);
    CHECK(memcmp(pin, pin2, sizeof pin) == 0);
}

/* no hosts (L < 2, K not a multiple of L, K not above L): as as_plan_pins, nothing
 * table-row-wise; 4 blocks of 2 of 8 rows are TorchRec's row_wise for K = 4, and for K = 6
 * (blocks of ceil(8 / 6) = 2, the last two empty), not for K = 8 (blocks of 1) */
TEST(pins_hosts_none)
{
    as_features f[16];
    const int64_t lk[4] = { 1, 1, 1, 1 };
    const int64_t n = four_tables(f, lk);
    const as_features *t[16];
    ptrs(f, n, t);
    int64_t pin[16];
    unsigned char tw[16];
    const int64_t cases[][2] = { { 8, 0 }, { 8, 1 }, { 8, 3 }, { 6, 4 }, { 4, 4 }, { 4, 8 }, { 12, 5 } };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int64_t K = cases[c][0], L = cases[c][1], rw = K == 4 || K == 6;
        CHECK_EQ_I64(as_plan_pins_hosts(t, n, K, L, NULL, pin, tw), rw ? 16 : 0);
        for (int64_t i = 0; i < n; i++) {
            CHECK_EQ_I64(pin[i], rw ? f[i].piece.r0 / 2 : -1);
            CHECK_EQ_I64(tw[i], 0);
        }
    }
}

/* under hosts a table cut in K blocks stays row_wise (block i on rank i, not
 * table-row-wise); a table of at most L rows (3 rows: its L and K blocks the same, 3 of
 * one row) is table-row-wise, on a host of its own */
TEST(pins_hosts_mixed)
{
    as_features f[16];
    int64_t n = 0;
    for (int64_t b = 0; b < 8; b++) f[n++] = rows_of(7, 16, 2 * b, 2 * b + 2, 1);   /* 8 blocks of 2: K's */
    for (int64_t b = 0; b < 3; b++) f[n++] = rows_of(8, 3, b, b + 1, 1);           /* 3 rows */
    const as_features *t[16];
    ptrs(f, n, t);
    int64_t pin[16];
    unsigned char tw[16];
    double work[16];
    for (int64_t i = 0; i < n; i++) work[i] = 1;
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 4, work, pin, tw), 11);
    for (int64_t b = 0; b < 8; b++) CHECK(pin[b] == b && tw[b] == 0);
    /* table 8 alone among the table-row-wise: host 0 */
    for (int64_t b = 0; b < 3; b++) CHECK(pin[8 + b] == b && tw[8 + b] == 1);
    /* without hosts: table 8's one-row blocks are its K = 8 row_wise too (3 non-empty) */
    CHECK_EQ_I64(as_plan_pins_hosts(t, n, 8, 0, work, pin, tw), 11);
    for (int64_t b = 0; b < 3; b++) CHECK(pin[8 + b] == b && tw[8 + b] == 0);
}
