/* test_featindex.c - the features index (lib/records/featindex.h): ids in any order found after the
 * build, a repeated record of the same numbers kept once (a different source allowed), a
 * repeated id with different numbers an error, pieces kept apart and column pieces derived
 * from the table's features. */
#include "unit.h"

#include "featindex.h"
#include "fixtures.h"

#include <string.h>

static as_features feat(int64_t id, int64_t rows, int64_t dim) { return tsup_features(id, dim, rows, 2, 8, 16); }

TEST(featindex_find_and_duplicates)
{
    as_featidx x;
    memset(&x, 0, sizeof x);
    char err[256];
    as_features a = feat(7, 100, 16), b = feat(2, 50, 8), a2 = a;
    snprintf(a2.source, sizeof a2.source, "other-pool.ast");   /* only the source differs */
    as_featidx_add(&x, &a);
    as_featidx_add(&x, &b);
    as_featidx_add(&x, &a2);
    CHECK(as_featidx_build(&x, err, sizeof err) == 0);
    CHECK_EQ_I64(x.n, 2);
    CHECK_EQ_I64(as_featidx_find(&x, 2), 0);            /* ascending ids */
    CHECK_EQ_I64(as_featidx_find(&x, 7), 1);
    CHECK_EQ_I64(as_featidx_find(&x, 5), -1);
    CHECK(as_featidx_get(&x, 7)->rows == 100 && as_featidx_get(&x, 9) == NULL);
    /* a column piece of table 7 derived from the table's features; an unknown table not */
    as_features out;
    as_piece cols = { 0, 8, 0, 100 }, whole = { 0, 0, 0, 0 };
    CHECK(as_featidx_piece(&x, 7, &cols, &out) == 0 && out.dim == 8 && out.rows == 100);
    CHECK(as_featidx_piece(&x, 7, &whole, &out) == 0 && out.dim == 16);
    CHECK(as_featidx_piece(&x, 9, &whole, &out) == -1);
    /* a row piece needs its own record */
    as_piece rows = { 0, 16, 0, 50 };
    CHECK(as_featidx_piece(&x, 7, &rows, &out) == -1);
    as_featidx_free(&x);
    /* the same id with other numbers: features of two pools mixed */
    memset(&x, 0, sizeof x);
    as_features c = feat(7, 101, 16);
    as_featidx_add(&x, &a);
    as_featidx_add(&x, &c);
    err[0] = 0;
    CHECK(as_featidx_build(&x, err, sizeof err) == -1);
    CHECK(strstr(err, "table 7") != NULL);
    as_featidx_free(&x);
}
