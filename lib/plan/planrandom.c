/* planrandom.c - the random planner (the paper's baseline): each item, in task order, on a
 * shard drawn uniformly from those where it still fits (all K without a cap: the
 * prototype's), from random stream c->rng_stream of c->seed. */
#include "plan.h"
#include "common.h"

#include <stdlib.h>

static int make_random(as_plan_ctx *x, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    const as_plan_cfg *c = x->c;
    const int64_t K = c->shards;
    as_rng rng;
    as_rng_seed(&rng, c->seed, (uint64_t)c->rng_stream);
    int64_t *ok = as_malloc((size_t)K * sizeof *ok);
    for (int64_t i = 0; i < x->n; i++) {
        if (as_plan_pinned(x, i)) continue;   /* on its rank already */
        int64_t nok = 0, k;
        for (k = 0; k < K; k++) if (as_plan_fits(c->mem_cap, x->p->mem[k], x->bytes[i])) ok[nok++] = k;
        if (!nok) { as_plan_unplaced(x, i); continue; }
        as_plan_put(x, i, ok[as_rng_below(&rng, (uint64_t)nok)]);
    }
    free(ok);
    return 0;
}

const as_planner as_planner_random = {
    .help = "each table on a shard drawn uniformly (seeded) from those where it fits",
    .make = make_random,
};
