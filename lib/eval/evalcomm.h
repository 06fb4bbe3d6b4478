/* evalcomm.h - as-eval --table comm: how much of each plan's slowest rank is communication,
 * by sharding type, each with the collectives TorchRec runs for it. Dimension letters: K
 * ranks (shards).
 *
 * From the bytes as-plan writes (docs/FORMAT.md) and the communication model (lib/records/comm.h:
 * --comm-gbps G, every byte at G; --comm-model, alpha per call plus bytes over the
 * collective's bus bandwidth), at shard k:
 *   table-wise     (whole tables: ids in, pooled outputs out and their gradients back, all
 *                  to all) own_k + all / K, own_k = comm_in_bytes + comm_out_bytes less the
 *                  row and column pieces' shares (comm_rw_bytes, comm_cw_bytes), all their
 *                  sum over the shards;
 *   column-wise    (column pieces) the same with comm_cw_bytes;
 *   row-wise       (row pieces: their ids, their partial sums reduce-scattered) the same with
 *                  comm_rw_bytes;
 *   data-parallel  (their gradients all-reduced) comm_ar_bytes.
 * Their sum is what as_eval_charge_comm charged the shard. The slowest rank is the one of the
 * highest cost (communication included where charged). A plan without comm_rw_bytes or
 * comm_cw_bytes (made before 2026-11-27 / 2026-11-28, or without such pieces) has those
 * bytes in the table-wise column. */
#ifndef AS_EVALCOMM_H
#define AS_EVALCOMM_H

#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "eval.h"

/* shard k of plan q under model m: the milliseconds of each sharding type into ms[AS_NSH];
 * 0, or -1 when the plan carries no communication bytes */
int as_eval_comm_parts(const as_planrec_full *q, int64_t k, const as_comm_model *m, double ms[AS_NSH]);

/* The table over the plans p[0..n) (after as_eval_charge_comm and as_eval_compute): per plan
 * its slowest rank, that rank's kernel cost, each sharding type's modelled time and the
 * share of the rank's time that is communication. m charging nothing: one line saying so. */
void as_eval_print_comm(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m);

#endif
