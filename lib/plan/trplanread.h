/* trplanread.h - as-plan --import: TorchRec sharding plans, as JSON lines in the form
 * `as-plan --format torchrec` writes (docs/FORMAT.md, "TorchRec plans"), read back into
 * `plan` records of the input's tasks. Dimension letters: T tables of a task, K shards.
 *
 * One document per line (blank lines skipped), strict JSON (lib/core/jsonparse.h): {"task": N,
 * "alg": label (optional, default "torchrec-import"), "world_size": K, "local_size": L
 * (optional), "module": path (optional), "dmp_collection": {...} (optional),
 * "plan": {module: {table: {"sharding_type", "compute_kernel", "ranks", "shards":
 * [{"shard_offsets": [r0, c0], "shard_sizes": [rows, cols], "placement": "rank:r/cuda:d"}]}}}}.
 * Each becomes the plan of task N as if a planner of ours had made it: one entry per shard
 * on the rank of its placement (a shard of all of its table: the whole table; else the
 * piece [c0, c0 + cols, r0, r0 + rows]), entries in the task's table order, a table's
 * pieces in piece order (as_piece_cmp); shards of 0 rows or columns hold nothing and are
 * left out. Tables are keyed as the export keys them: by their `features` name (a model
 * config's), else "t<id>". The plan is finalised by as_plan_emit_placed (lib/plan/planrun.h), the
 * code --export goes through: counts, memory (mem_bytes, mem_terms), communication bytes,
 * names, feasibility, the cap, pred_ms with a model, written in c->out. Its alg label is the
 * document's, written as it is.
 *
 * sharding_type: table_wise (one shard), column_wise and table_column_wise (shards of all
 * rows), row_wise and table_row_wise (shards of all columns), grid_shard (any); data_parallel
 * (the table whole on every rank: "ranks" absent or every rank 0..K-1 once, "shards" absent,
 * null or empty) becomes one entry on every shard (assign AS_DP, -2).
 *
 * Placements and local_size are checked as pipelines/torchrec_plan.py --check checks them:
 * local_size (optional) in 1..AS_MAX_SHARDS (as_limit(AS_LIM_SHARDS), 65536 by default);
 * each shard's placement "rank:R/cuda:D" with R its rank ("ranks"[j] when given) and, when
 * local_size L is given, D = R % L (the GPU of its host TorchRec places rank R on). A line
 * is at most AS_TRIMPORT_MAX_LINE bytes, read no further (a file without newlines, such as
 * /dev/zero, is an error after that many bytes, not an unbounded read).
 */
#ifndef AS_TRPLANREAD_H
#define AS_TRPLANREAD_H

#include <stddef.h>
#include <stdint.h>

#include "planrun.h"

#define AS_TRIMPORT_DEFAULT_ALG "torchrec-import"
#define AS_TRIMPORT_MAX_LINE ((size_t)64 << 20)   /* bytes of one document, as the helper's */

/* Every document of file (a path, "-" standard input) imported and written, in file order; *imported counts
 * them. The cap of a plan is c->mem_cap with c->cap_given, else its task's; its shards
 * c->shards when > 0, else its task's; its 2D rank map c->world, else the document's
 * dmp_collection.world_size. 0, or -1 with err naming the file, the document's line, and
 * the table and field at fault: "FILE: line 3: task 7 (torchrec): table 't5': shards[1]:
 * placement 'rank:9/cuda:1': rank 9 is outside 0..3". Errors: a file that cannot be read,
 * bad JSON, a field missing or of the wrong type, a task not in the input, world_size not
 * the task's shard count, local_size outside 1..AS_MAX_SHARDS, a table unknown or not the
 * task's, a table of the task missing from the plan, a rank outside 0..K-1, a placement that
 * is not "rank:R/cuda:R % local_size", shards outside their table or that do not tile it
 * exactly (overlap, gap), a data_parallel table with shards or not on every rank once, a
 * shard over the cap, a piece without features in the input (row pieces need as-features
 * --row-pieces), a line longer than AS_TRIMPORT_MAX_LINE. */
int as_plan_import_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const char *file,
                       int64_t *imported, char *err, size_t errlen);

#endif
