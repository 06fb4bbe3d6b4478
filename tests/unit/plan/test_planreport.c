/* test_planreport.c - a plan as text (lib/plan/planreport.c, as_plan_print_text): the whole
 * report of a hand-made plan with a cap, a model's predictions, the 2D ranks, a refinement and
 * an unplaced table; then the forms without a cap or predictions, data-parallel tables, names,
 * and a shard of more than 16 tables. */
#include "unit.h"

#include "fixtures.h"
#include "plan.h"
#include "planreport.h"
#include "reclimits.h"

#include <stdlib.h>
#include <string.h>

static char *report(const as_plan *p, const as_plan_meta *m, const as_features *const *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_plan_print_text(f, p, m, t);
    fclose(f);
    return buf;
}

/* task 7 (test), K = 2, tables 10 on shard 1, 11 on shard 0, 12 unplaced; 2 MiB and 1 MiB of
 * a 4 MiB cap (50 %, 25 %); key sums 7.5 and 5; predicted 2 and 1 ms (max 2, min 1, mean 1.5,
 * balance 50 %); the slowest shard 0 holds table 11 alone (0.25 ms, 100 %); world 4: shard k
 * on ranks 2k, 2k + 1; refined by 1 move and 2 swaps, placing 1 table, stopped by its time */
TEST(planreport_full)
{
    as_features f[3] = { tsup_features(10, 4, 100, 1, 0, 0), tsup_features(11, 4, 100, 1, 0, 0),
                         tsup_features(12, 4, 100, 1, 0, 0) };
    const as_features *t[3] = { &f[0], &f[1], &f[2] };
    int64_t assign[3] = { 1, 0, -1 }, count[2] = { 1, 1 }, inf[1] = { 12 };
    uint64_t mem[2] = { 2 << 20, 1 << 20 };
    double key[2] = { 7.5, 5 }, pred[2] = { 2, 1 }, ipred[3] = { 1.5, 0.25, 0 };
    as_plan p = { .n = 3, .shards = 2, .assign = assign, .mem = mem, .count = count, .key = key, .pred = pred,
                  .feasible = 0, .ninfeasible = 1, .infeasible = inf, .plan_ms = 1.25 };
    p.refine = (as_plan_refined){ .done = 1, .moves = 1, .swaps = 2, .placed = 1, .ms = 0.5, .max_before = 3,
                                  .stop = "time" };
    as_taskrec task = { .id = 7 };
    snprintf(task.split, sizeof task.split, "test");
    as_plan_meta m = { .task = &task, .alg = AS_ALG_SIZE, .mem_cap = 4 << 20, .world = 4, .item_pred = ipred };
    char *s = report(&p, &m, t);
    CHECK_STR(s, "task 7 (test)  size-greedy+refine  3 tables on 2 shards  cap 4.0 MiB/shard  INFEASIBLE  planned in 1.250 ms\n"
                 "  shard tables   memory MiB   cap %      key sum    pred ms  ranks  table ids\n"
                 "      0      1        2.000   50.0%          7.5     2.0000  [0,1]  11\n"
                 "      1      1        1.000   25.0%            5     1.0000  [2,3]  10\n"
                 "  total      2        3.000\n"
                 "  predicted (estimated): max 2.0000 ms, min 1.0000 ms, mean 1.5000 ms, balance 50.0%\n"
                 "  slowest shard 0 (predicted 2.0000 ms): its items alone t11 0.2500 ms (100%)\n"
                 "  refined: 1 move, 2 swaps, 1 unplaced table placed in 0.500 ms (time budget spent); predicted max before 3.0000 ms\n"
                 "  fit on no shard: 12\n"
                 "\n");
    free(s);
    /* the other stops, one swap, nothing placed */
    p.refine.stop = "steps", p.refine.swaps = 1, p.refine.placed = 0;
    s = report(&p, &m, t);
    CHECK(strstr(s, "  refined: 1 move, 1 swap in 0.500 ms (step budget spent);") != NULL);
    free(s);
    p.refine.stop = NULL, p.refine.moves = 0;
    s = report(&p, &m, t);
    CHECK(strstr(s, "  refined: 0 moves, 1 swap in 0.500 ms (local optimum);") != NULL);
    free(s);
}

/* no cap, no model, no world: "no memory cap", '-' for the cap share, no predicted column or
 * lines; a shard of 17 tables lists 16 then ",..."; two data-parallel tables on a line of
 * their own, a named one by its name; the slowest items of a shard of 6 name 5 */
TEST(planreport_plain_dp_names)
{
    enum { N = 19 };
    as_features f[N];
    const as_features *t[N];
    int64_t assign[N];
    for (int i = 0; i < N; i++) {
        f[i] = tsup_features(100 + i, 4, 10, 1, 0, 0);
        t[i] = &f[i];
        assign[i] = i < 17 ? 0 : AS_DP;
    }
    snprintf(f[18].name, sizeof f[18].name, "user_emb");
    int64_t count[2] = { 17, 0 };
    uint64_t mem[2] = { 0, 0 };
    double key[2] = { 0, 0 };
    as_plan p = { .n = N, .shards = 2, .assign = assign, .mem = mem, .count = count, .key = key, .feasible = 1,
                  .ndp = 2 };
    as_taskrec task = { .id = 3 };
    as_plan_meta m = { .task = &task, .alg = AS_ALG_RANDOM };
    char *s = report(&p, &m, t);
    const char *head = "task 3  random  19 tables on 2 shards  no memory cap  feasible  planned in 0.000 ms\n"
                      "  shard tables   memory MiB   cap %      key sum             table ids\n";
    CHECK(!strncmp(s, head, strlen(head)));
    CHECK(strstr(s, "      0     17        0.000       -            0             100,101,102,103,104,105,106,107,"
                    "108,109,110,111,112,113,114,115,...\n") != NULL);
    CHECK(strstr(s, "      1      0        0.000       -            0             -\n") != NULL);
    CHECK(strstr(s, "  every      2                                               117,user_emb (data parallel)\n") != NULL);
    CHECK(strstr(s, "  total     19        0.000\n") != NULL);
    CHECK(strstr(s, "predicted") == NULL && strstr(s, "refined") == NULL && strstr(s, "fit on no shard") == NULL);
    free(s);
    /* with predictions and item predictions: shard 0 slowest, its 17 items by cost (ties: input order) */
    double pred[2] = { 4, 0 }, ipred[N];
    for (int i = 0; i < N; i++) ipred[i] = i == 3 ? 2 : i == 9 ? 1 : 0.0625;
    p.pred = pred;
    m.item_pred = ipred;
    s = report(&p, &m, t);
    /* sum 2 + 1 + 15 x 0.0625 = 3.9375 (and the data-parallel ones are not on shard 0) */
    CHECK(strstr(s, "  predicted (estimated): max 4.0000 ms, min 0.0000 ms, mean 2.0000 ms, balance 0.0%\n") != NULL);
    CHECK(strstr(s, "  slowest shard 0 (predicted 4.0000 ms): its items alone t103 2.0000 ms (51%), t109 1.0000 ms (25%), "
                    "t100 0.0625 ms (2%), t101 0.0625 ms (2%), t102 0.0625 ms (2%), 12 more\n") != NULL);
    free(s);
}
