/* evalcomm.h - as-eval --table comm: how much of each plan's slowest rank is communication,
 * by the collective each sharding type uses. Dimension letters: K ranks (shards).
 *
 * From the bytes as-plan writes (docs/FORMAT.md): at shard k, with G the bandwidth
 * (--comm-gbps, in bytes per ms):
 *   all-to-all  (table- and column-wise items: ids in, pooled outputs out and their
 *               gradients back) (own_k + all / K) / G, own_k = comm_in_bytes + comm_out_bytes
 *               less the row pieces' share (comm_rw_bytes), all their sum over the shards;
 *   row-wise    (row pieces: their ids, their partial sums reduce-scattered) the same with
 *               the row pieces' bytes;
 *   all-reduce  (data-parallel tables' gradients) comm_ar_bytes / G.
 * Their sum is what as_eval_charge_comm charged the shard. The slowest rank is the one of the
 * highest cost (communication included where charged). A plan without comm_rw_bytes (made
 * before 2026-11-27, or without row pieces) has all its bytes in the all-to-all. */
#ifndef AS_EVALCOMM_H
#define AS_EVALCOMM_H

#include <stdint.h>
#include <stdio.h>

#include "eval.h"

/* shard k of plan q at gbps GiB/s: the milliseconds of each collective into ms[3] (all-to-all,
 * row-wise, all-reduce); 0, or -1 when the plan carries no communication bytes */
int as_eval_comm_parts(const as_eval_plan *q, int64_t k, double gbps, double ms[3]);

/* The table over the plans p[0..n) (after as_eval_charge_comm and as_eval_compute): per plan
 * its slowest rank, that rank's kernel cost, each collective's modelled time and the share of
 * the rank's time that is communication. gbps <= 0: one line saying nothing is charged. */
void as_eval_print_comm(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, double gbps);

#endif
