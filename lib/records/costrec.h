/* costrec.h - the `cost` record (docs/FORMAT.md; written by as-bench): one measured shard,
 * the cost model's training data. Its writer (as_costrec_pack: every field, in the order
 * and with the types as-bench writes them) and its reader (as_costrec_read: the shard and its
 * measured cost checked, the rule every reader of cost records follows; the other fields
 * read as they stand, each with where it stood (reclimits.h as_fhas), so that each reader keeps its own checks
 * and messages). The kind's name is this module's: as_costrec_is. Dimension letters: T the
 * record's table entries, P passes.
 */
#ifndef AS_COSTREC_H
#define AS_COSTREC_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#include "piece.h"
#include "reclimits.h"

typedef struct {
    /* the shard: T table ids, their pieces (NULL: none, every entry whole; written only
     * when non-NULL). as_costrec_read checks them (as_field_table_ids, as_field_pieces) */
    int64_t *tables, n;
    as_piece *pieces;
    as_fstr origin;            /* "sample", "shard" or "plan" */
    as_fint task, shard;       /* -1: none */
    as_fstr alg;               /* nil but for origin "plan" */
    /* the figures (nil: not measured) */
    as_fnum cost_ms, fwd_ms, bwd_ms, median_ms, min_ms, max_ms, rel_std, gbps, spread;
    as_fint attempts, passes, together;
    as_fnum drift;
    as_fint noisy, drift_refused;   /* bools */
    double *pass_ms;            /* [npass] each pass's cost, NAN for nil; the writer writes a
                                 * finite one as a number and any other as nil */
    int64_t npass;
    as_fhas pass_has;          /* the array (SET), nil, ... */
    as_fnum pass_spread;
    as_fint lookups, row_cap, capped, batch, sum_dim, bytes;   /* row_cap: nil: none */
    as_fstr device, device_kind;
    as_fint threads, sm_clock_mhz;
    int protocol[3];            /* warm-up, timed runs, trimmed */
    as_fhas protocol_has;      /* SET: an array of 3 integers within int */
    as_fstr error;             /* nil: measured */
    /* what was trained; both written when weights_type is SET (absent: fp16 with SGD) */
    as_fstr weights_type, optimizer;
    /* the run's reference (written when ref_has is SET): its tables and level. Read: SET
     * when `reference` is a map whose `tables` is an array and `level_ms` a number; each
     * entry that is not a non-negative integer reads as -1 */
    int64_t *ref_tables, nref;
    double ref_level_ms;
    as_fhas ref_has;
    /* as_costrec_read: 1 when the record holds a measured cost (cost_ms.v, finite, > 0) */
    int measured;
} as_costrec;

/* 1 when rec (a map) is a `cost` record: its `kind` is "cost" */
int as_costrec_is(const msgpack_object *rec);

/* Pack c as one `cost` record (one map, the caller ends the record): kind, tables,
 * pieces (when c->pieces), origin, task, alg, shard, cost_ms, fwd_ms, bwd_ms, median_ms,
 * min_ms, max_ms, rel_std, gbps, spread, attempts, passes, together, drift, noisy,
 * drift_refused, pass_ms (the array when pass_has is SET, else nil), pass_spread, lookups,
 * row_cap, capped, batch, sum_dim, bytes, device, device_kind, threads, sm_clock_mhz,
 * protocol, error, weights_type and optimizer (when weights_type is SET), reference (when
 * ref_has is SET). Integers as the smallest msgpack integers, numbers as float64. */
void as_costrec_pack(msgpack_packer *pk, const as_costrec *c);

/* Read a `cost` record as every reader of one takes it (as-costfit and as-rl, as-eval's
 * single costs, as-costfit --predict): its `tables` (ids within the limits,
 * lib/records/reclimits.h), their `pieces` (one piece or nil per table, or none:
 * lib/records/piece.h) and its measured cost, checked in that order: `measured` 0 when
 * it carries none (an `error` that is not nil, or `cost_ms` absent or nil: not measured),
 * else 1 with cost_ms.v a finite cost > 0; a `cost_ms` that is anything else is bad data.
 * Then every other field as as_costrec_read_fields reads them. c is zeroed first. 0, or -1
 * with err naming the field ("'cost_ms' = 0 is not a positive cost"; c freed) */
int as_costrec_read(const msgpack_object *rec, as_costrec *c, char *err, size_t errlen);
/* Every field but `tables` and `pieces` into c, as it stands (never refused: each with its
 * as_fhas); `measured` is not set. For a reader that takes only some fields and checks
 * them itself (as-bench --reference-level: `reference` and `row_cap`). c is zeroed first */
void as_costrec_read_fields(const msgpack_object *rec, as_costrec *c);
/* free what a read allocated (not for a record filled to be written); NULL: nothing */
void as_costrec_free(as_costrec *c);

#endif
