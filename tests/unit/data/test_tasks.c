/* test_tasks.c - sharding tasks (lib/data/tasks.h): every task holds T distinct tables of the
 * pool, ascending, K = T / 10 shards by default; training and test tasks are disjoint as
 * sets of tables; the same seed and pool in any order give the same tasks, another seed
 * others; too small a pool is an error; the whole-model task (as-features --model-task). */
#include "unit.h"

#include "tasks.h"

#include <stdlib.h>
#include <string.h>

static int same_set(const as_task *a, const as_task *b)
{
    return a->ntables == b->ntables && !memcmp(a->tables, b->tables, (size_t)a->ntables * sizeof *a->tables);
}

TEST(tasks_make_rules)
{
    enum { N = 60 };
    int64_t ids[N], rev[N], bytes[N], rbytes[N];
    for (int i = 0; i < N; i++) { ids[i] = 100 + i; bytes[i] = 1000 + i; rev[N - 1 - i] = ids[i]; rbytes[N - 1 - i] = bytes[i]; }
    as_task_cfg c = { .ntasks = 12, .ntest = 3, .tables = 20, .shards = 0, .seed = 5, .mem_cap = 0, .unseen_ratio = -1 };
    as_task *t = NULL, *u = NULL, *v = NULL;
    char err[256];
    CHECK(as_tasks_make(&c, ids, bytes, N, &t, err, sizeof err) == 0);
    int ntest = 0;
    for (int k = 0; k < 12; k++) {
        CHECK_EQ_I64(t[k].ntables, 20);
        CHECK_EQ_I64(t[k].shards, 2);                      /* T / 10 */
        ntest += t[k].test;
        uint64_t sum = 0;
        for (int64_t j = 0; j < t[k].ntables; j++) {
            CHECK(t[k].tables[j] >= 100 && t[k].tables[j] < 100 + N);
            if (j) CHECK(t[k].tables[j] > t[k].tables[j - 1]);   /* ascending, distinct */
            sum += (uint64_t)(1000 + t[k].tables[j] - 100);
        }
        CHECK_EQ_I64(t[k].bytes, sum);
    }
    CHECK_EQ_I64(ntest, 3);
    /* no test task has the same table set as a training task */
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 12; b++)
            if (t[a].test && !t[b].test) CHECK(!same_set(&t[a], &t[b]));
    /* the pool in another order: the same tasks; another seed: others */
    CHECK(as_tasks_make(&c, rev, rbytes, N, &u, err, sizeof err) == 0);
    for (int k = 0; k < 12; k++) CHECK(same_set(&t[k], &u[k]) && t[k].test == u[k].test);
    c.seed = 6;
    CHECK(as_tasks_make(&c, ids, bytes, N, &v, err, sizeof err) == 0);
    int differ = 0;
    for (int k = 0; k < 12; k++) differ += !same_set(&t[k], &v[k]);
    CHECK(differ > 0);
    as_tasks_free(t, 12);
    as_tasks_free(u, 12);
    as_tasks_free(v, 12);
    /* more tables per task than the pool holds */
    c.tables = N + 1;
    err[0] = 0;
    CHECK(as_tasks_make(&c, ids, bytes, N, &t, err, sizeof err) == -1 && err[0]);
}

TEST(tasks_whole_model)
{
    int64_t ids[3] = { 9, 2, 5 }, bytes[3] = { 10, 20, 30 };
    as_task t;
    as_task_whole(&t, ids, bytes, 3, 4);
    CHECK_EQ_I64(t.id, 0);
    CHECK(t.test == 1);
    CHECK_EQ_I64(t.shards, 4);
    CHECK_EQ_I64(t.ntables, 3);
    CHECK(t.tables[0] == 2 && t.tables[1] == 5 && t.tables[2] == 9);
    CHECK_EQ_I64(t.bytes, 60);
    free(t.tables);   /* the task itself is the caller's */
}
