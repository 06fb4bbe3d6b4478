/* test_reccount.c - records counted by kind (lib/records/reccount.h, as-show -c): counts in order
 * of first appearance; kinds compared by length and bytes (a prefix, an embedded NUL);
 * names copied whole; many kinds (the table grown several times); free leaves it empty. */
#include "unit.h"

#include "reccount.h"

#include <stdio.h>
#include <string.h>

static uint64_t count_of(const as_reccount *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->k[i].len == len && !memcmp(c->k[i].name, name, len)) return c->k[i].n;
    return 0;
}

TEST(reccount_order_and_counts)
{
    as_reccount c = { 0 };
    const char *seq[] = { "header", "table", "table", "features", "table", "header", "task" };
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++) as_reccount_add(&c, seq[i], strlen(seq[i]));
    CHECK_EQ_I64(c.n, 4);
    CHECK_STR(c.k[0].name, "header");
    CHECK_STR(c.k[1].name, "table");
    CHECK_STR(c.k[2].name, "features");
    CHECK_STR(c.k[3].name, "task");
    CHECK_EQ_I64(c.k[0].n, 2);
    CHECK_EQ_I64(c.k[1].n, 3);
    CHECK_EQ_I64(c.k[2].n, 1);
    CHECK_EQ_I64(c.k[3].n, 1);
    as_reccount_free(&c);
    CHECK(c.n == 0 && c.k == NULL && c.slot == NULL && c.nslot == 0);
    as_reccount_free(NULL);
}

TEST(reccount_compares_length_and_bytes)
{
    as_reccount c = { 0 };
    /* a kind that is a prefix of another, the same bytes with a NUL inside, an empty kind */
    as_reccount_add(&c, "plan", 4);
    as_reccount_add(&c, "plans", 5);
    as_reccount_add(&c, "plan\0x", 6);
    as_reccount_add(&c, "plan\0x", 6);
    as_reccount_add(&c, "", 0);
    /* only len bytes of name are read: the rest of the buffer does not count */
    as_reccount_add(&c, "planet", 4);
    CHECK_EQ_I64(c.n, 4);
    CHECK_EQ_I64(count_of(&c, "plan", 4), 2);
    CHECK_EQ_I64(count_of(&c, "plans", 5), 1);
    CHECK_EQ_I64(count_of(&c, "plan\0x", 6), 2);
    CHECK_EQ_I64(count_of(&c, "", 0), 1);
    CHECK_EQ_I64(c.k[2].len, 6);
    CHECK(c.k[2].name[6] == 0);        /* copied whole, NUL-terminated */
    CHECK_EQ_I64(c.k[3].len, 0);
    CHECK_STR(c.k[3].name, "");
    as_reccount_free(&c);
}

TEST(reccount_names_are_copies)
{
    as_reccount c = { 0 };
    char buf[16];
    snprintf(buf, sizeof buf, "cost");
    as_reccount_add(&c, buf, 4);
    snprintf(buf, sizeof buf, "plan");   /* the caller's buffer reused, as the reader's is */
    as_reccount_add(&c, buf, 4);
    CHECK_EQ_I64(c.n, 2);
    CHECK_STR(c.k[0].name, "cost");
    CHECK_STR(c.k[1].name, "plan");
    as_reccount_free(&c);
}

TEST(reccount_many_kinds)
{
    enum { N = 5000 };
    as_reccount c = { 0 };
    char name[64];
    /* each kind i counted i % 7 + 1 times, the adds of one kind spread over the run */
    for (int round = 0; round < 7; round++)
        for (int i = 0; i < N; i++) {
            if (round > i % 7) continue;
            int len = snprintf(name, sizeof name, "kind-%d-%s", i, i % 3 ? "x" : "a longer name than most");
            as_reccount_add(&c, name, (size_t)len);
        }
    CHECK_EQ_I64(c.n, N);
    CHECK(c.nslot >= 2 * (size_t)N && (c.nslot & (c.nslot - 1)) == 0);   /* at most half full, a power of two */
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int len = snprintf(name, sizeof name, "kind-%d-%s", i, i % 3 ? "x" : "a longer name than most");
        bad += c.k[i].len != (size_t)len || memcmp(c.k[i].name, name, (size_t)len) || c.k[i].n != (uint64_t)(i % 7 + 1);
    }
    CHECK_EQ_I64(bad, 0);
    as_reccount_free(&c);
}
