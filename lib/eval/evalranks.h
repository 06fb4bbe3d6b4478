/* evalranks.h - the planner statistics of a plan, rank by rank, like TorchRec's planner's
 * stats table: each rank's items (tables and pieces, by name when the plan has names), its
 * memory of the cap by TorchRec's terms (as-plan's mem_terms, lib/records/trmem.h) or its bytes,
 * the cost model's prediction (pred_ms) and the measured (or estimated) cost, and what
 * makes the slowest rank slow: its items by their cost alone, predicted (as-plan's
 * item_pred_ms) and measured (single-item cost records: as-bench --singles, or
 * --piece-singles for pieces), as a share of the items' sum.
 * Dimension letters: K ranks (shards), T entries of a plan.
 *
 * The slowest rank is the one of the highest cost where every rank's cost is known, else,
 * where no rank's cost is known, the one of the highest prediction; predicted and measured
 * costs are never compared, so a plan with some ranks' costs known and others not (nil) has
 * none, nor has one without costs or predictions. */
#ifndef AS_EVALRANKS_H
#define AS_EVALRANKS_H

#include <stdint.h>
#include <stdio.h>

#include "eval.h"
#include "evalfloor.h"

/* the slowest rank of plan q (see above), or -1; *by: "measured"/"estimated" (the cost's
 * label as given) or "predicted" */
int64_t as_eval_slowest_rank(const as_planrec_full *q, const char *label, const char **by);

/* The table of every plan p[0..n) (text: a block per plan; markdown: a table per plan;
 * CSV: one row per rank, with the plan's columns). label: "measured" or "estimated", what
 * the plans' costs are; singles: built single-item costs (NULL: none). */
void as_eval_print_ranks(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label,
                         const as_eval_singles *singles);

#endif
