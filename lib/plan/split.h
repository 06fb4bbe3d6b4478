/* split.h - which tables to split, and how (as-plan --split-tables): a beam search over
 * splits scored by the cost model after placing with the chosen algorithm. Dimension
 * letters: T tables of a task, P items (tables and pieces) of a split, K shards.
 *
 * A table's split is one of its *levels*, each one of TorchRec's sharding forms that
 * construct_module_sharding_plan trains: level 0 the whole table (table_wise, any rank);
 * column levels c = 2, 4, 8, ... (c equal column pieces while D / c stays a multiple of 4 and c
 * at most max_cols: column_wise, the pieces on any ranks, repeated ranks allowed); the row_wise level (the K
 * row blocks of ceil(E / K) rows, as_piece_row_blocks, block i pinned to rank i: pins.h; one
 * move that puts a block on every rank at once, each charged to its rank) when its blocks all
 * have features (as-features --row-pieces; --model-task cuts the task's K itself); under a
 * model of hosts of L GPUs (comm_model h100-ib or torchrec:L, K a multiple of L above it; not
 * for a learned policy), the table_row_wise level (L blocks of ceil(E / L) rows on the L ranks
 * of one host, pinned there: pins.h, the hosts chosen by the blocks' predicted work; a table
 * of fewer rows than L has it too, a row a block) when its L blocks have features
 * (--row-pieces L). With sc->rowp, free row levels n too (n blocks placed anywhere: plans
 * TorchRec cannot load; as-plan --split-rows N). A table is split one way: by columns or by
 * rows.
 *
 * The search: the root is every table whole. With sc->seed (TorchRec's planner's splits of the
 * task, as-plan --split-seed) a second search starts from the seed's levels, and under a
 * model of hosts another from every table table_row_wise; each gets an equal share of the
 * budget and the best best node wins (ties: the earlier search's). A node's children split one more table one
 * level further (a whole table: its first column level or its first row level; a split
 * one: the next level of its kind), for the `cands` tables whose costliest item has the
 * highest predicted cost alone (the floor the node's plans cannot pass). Every child is
 * placed with the chosen algorithm (as_plan_make) and scored by the plan's predicted
 * slowest shard (an infeasible plan scores as infinitely slow); the `beam` best children of
 * all nodes (ties: the fewer items, then the order made) form the next level, for at most
 * `steps` levels or until budget_ms of wall clock is spent (checked before each child; a
 * level's children are placed in parallel, `threads`). A planner with a quicker placement
 * for the search (plan.h as_plan_policy.search_ctx: the learned policy's greedy rollout)
 * places the candidates with it, and the best node once more with its own. The
 * best node seen wins, the root included, so the result is never predicted slower than no
 * split. When c charges communication, the root is placed under the charge (cost-greedy
 * weighs it), which can score worse than ALG's own plan of the whole tables (as as-plan
 * makes it without --split-tables: placed on the kernel alone); that plan is scored too and
 * kept when it scores at most the best node (split.c keep_unsplit), so the result is never
 * predicted slower than it either, by the score (the charge included: its pred, the
 * kernel alone, can be above that plan's when the charge pays for it). Deterministic for a
 * seed, as the planners are, unless the time budget cuts it.
 *
 * Communication (comm_gbps > 0 or a model of each collective, comm_model): a node's score is the one
 * objective's slowest shard (lib/plan/objective.h): each shard's predicted kernel (the plan's
 * pred) plus its communication by the one definition (lib/records/comm.h
 * as_comm_plan_shard_ms: its items' bytes of each sharding type, its 1/K share of every
 * shard's, each type's calls under a model of each collective). Per item: ids in = lookups x 8
 * bytes (TorchRec's BIGINT_DTYPE; a column piece gets all of its table's ids), outputs = 2 x
 * batch x dim x 4 bytes (fp32 pooled outputs forward, their gradients backward; a row
 * piece's are full-width partial sums). A column split so adds its ids once more per piece, a
 * row split its outputs: a split is kept only when the kernel time it saves exceeds the
 * communication it adds. comm_gbps 0 and no model: kernel cost alone.
 */
#ifndef AS_SPLIT_H
#define AS_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "featindex.h"
#include "plan.h"

#define AS_SPLIT_STEPS 10
#define AS_SPLIT_BEAM 3
#define AS_SPLIT_CANDS 6
#define AS_SPLIT_MS 1000.0
enum { AS_SPLIT_SEED_AUTO, AS_SPLIT_SEED_TORCHREC, AS_SPLIT_SEED_NONE };
/* --split-seed auto: TorchRec's planner takes 6 ms for 80 tables, 53 ms for 200, 365 ms for
 * 400 and about 0.8 s for 800 on the 2-vCPU VM (build/tools/bench-plan --alg torchrec), beside
 * the split search's second: the seed up to 256 tables */
#define AS_SPLIT_SEED_AUTO_TABLES 256

typedef struct {
    int steps;              /* levels of the search (>= 1) */
    int beam;               /* nodes kept per level (>= 1) */
    int cands;              /* tables tried per node (>= 1) */
    double budget_ms;       /* wall clock; 0: none */
    int threads;            /* threads placing a level's children at once (0: OpenMP's
                             * default, OMP_NUM_THREADS or every core): the result is the
                             * same for any number unless the budget cuts the search */
    int no_row_wise;        /* 1: leave TorchRec's row_wise (the K blocks, block i on rank i)
                             * out of the levels; 0: a level of every table whose blocks have
                             * features */
    const int64_t *rowp;    /* row blocks placed freely (block counts, ascending; a count of K
                             * is row_wise's cut, pinned): plans TorchRec cannot load (as-plan
                             * --split-rows LIST); NULL: none */
    int nrowp;
    int max_cols;           /* column levels of at most this many pieces (as-plan --split-cols:
                             * the piece counts the cost dataset measured, so that the search
                             * does not rest on the model's extrapolation); 0: as the dim
                             * allows (D / c a multiple of 4), up to 64 */
    int seed_mode;          /* where planrun seeds the search (as-plan --split-seed):
                             * AS_SPLIT_SEED_AUTO TorchRec's plan for tasks of at most
                             * AS_SPLIT_SEED_AUTO_TABLES tables, _TORCHREC always, _NONE never */
    const int64_t *seed;    /* [T] a start beside the root: each table's split in another
                             * plan (TorchRec's planner's): 0 whole, -1 row_wise, c >= 2 c equal
                             * column pieces (a split the table has no level of: whole);
                             * NULL: none */
    void (*progress)(void *ctx, double frac);   /* after each level: the share of the search
                             * done, 0..1, by levels or by the time budget, whichever is
                             * further (NULL: none); called on the caller's thread */
    void *progress_ctx;
    double comm_gbps;       /* communication bandwidth, GiB/s (above); 0: not charged */
    const as_comm_model *comm_model;   /* an alpha-beta model (lib/records/comm.h) charged instead of
                             * comm_gbps: each shard's items' bytes by sharding type over their
                             * collective's bandwidth, plus the alphas of every type the plan
                             * has (a first row piece adds the row-wise collectives' alphas to
                             * every shard); NULL or the bandwidth model: comm_gbps */
} as_split_cfg;

#define AS_SPLIT_COMM_GBPS AS_COMM_GBPS   /* comm.h: one host of NVLink GPUs */

typedef struct {
    int64_t nodes;          /* children placed and scored */
    int64_t split;          /* tables split in the result */
    int64_t items;          /* P */
    double pred_before;     /* score of the unsplit plan: predicted slowest shard, with its
                             * communication when charged (INFINITY: infeasible) */
    double pred_after;
    double ms;              /* the search's wall clock */
    int cut;                /* 1 when the time budget ended it */
    int seeded;             /* 1 when the seed was a node of the search (it differed from the
                             * root) */
} as_split_info;

/* Search the splits of tables t[0..n) (their features; ft: the index holding the row
 * pieces' features) for plan config c (c->model required). On success *items (malloc'd
 * [*nitems]) are the chosen items' features in task order (a split table's pieces in
 * place of it, column or row order), and *p the plan of them (as_plan_make; free with
 * as_plan_free). 0, or -1 with err. */
int as_split_search(const as_plan_cfg *c, const as_split_cfg *sc, const as_featidx *ft, const as_features *const *t, int64_t n,
                    as_features **items, int64_t *nitems, as_plan *p, as_split_info *info, char *err, size_t errlen);

#endif
