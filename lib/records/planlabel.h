/* planlabel.h - a plan's label, the `alg` of a plan record: the name of the planner that made
 * it, then, in this order, a suffix for each thing done to the plan since: "+split" (the
 * split search, as-plan --split-tables), "+dp" (tables replicated data-parallel,
 * --replicate), "+refine" (the local search, lib/plan/refine.h), "+measured" or "+measuredN"
 * (repaired after N measured rounds, as-plan --repair), e.g. "cost-greedy+split+refine".
 * A plan imported from TorchRec's own planner carries a label that names no planner of ours
 * ("torchrec-own"). This module is the one place that writes and reads them. */
#ifndef AS_PLANLABEL_H
#define AS_PLANLABEL_H

#include <stddef.h>

/* the planners, one per line of the registry (planners.def), in its order */
typedef enum {
#define AS_PLANNER(E, name, ident) AS_ALG_##E,
#include "planners.def"
#undef AS_PLANNER
    AS_ALG_COUNT
} as_alg;

const char *as_alg_name(as_alg a);             /* "random", "size-greedy", ... */
int as_alg_parse(const char *s, as_alg *out);  /* 0 ok, -1 unknown */

#define AS_REFINE_SUFFIX "+refine"

/* a label taken apart */
typedef struct {
    char base[64];          /* the label up to its first '+' (at most 63 bytes of it) */
    int known;              /* base names a planner of ours: alg */
    as_alg alg;
    int split, replicated, refined;   /* the label holds "+split", "+dp", "+refine" */
    int measured;           /* 0 without "+measured", 1 with "+measured" (or a count below 2
                               after it), N with "+measuredN" */
} as_plan_label;

/* the parts of any string as a label (never fails: an unknown base gives known 0) */
void as_plan_label_parse(const char *label, as_plan_label *l);
/* the label of planner a's plan with these suffixes, into buf[len]; returns buf */
const char *as_plan_label_format(as_alg a, int split, int replicated, int refined, int measured, char *buf, size_t len);
/* a label that is a planner's name alone or with "+refine" only: 0 (*refined says which),
 * else -1 (another suffix, or a base not of ours) */
int as_alg_parse_label(const char *s, as_alg *out, int *refined);

/* The next token of a list of algorithms and labels (as-plan --alg) at *p into tok[len]
 * (NUL-terminated), *p moved past it: tokens are comma-separated, except that one starting
 * with '=' (=LABEL, that label exactly) runs to the end of the list, commas and all, since a
 * label may hold commas (an imported plan's, "a,b"). 1: a token; 0: the end; -1: a token of
 * len bytes or more (tok holds its start) */
int as_plan_label_next(const char **p, char *tok, size_t len);

#endif
