/* convert.h - turn MetaSyn-like data into `table` records, and print torch.save contents.
 * Dimension letters: B batch, L pooling, D dim, E rows, T tables.
 *
 * The records are written by table.h's as_write_table: rows = max index + 1 (at least 1),
 * dim drawn per table from a list with the seed (MetaSyn has none), offsets re-based at 0.
 */
#ifndef AS_CONVERT_H
#define AS_CONVERT_H

#include <stdint.h>
#include <stdio.h>

#include "stream.h"
#include "table.h"
#include "torchsave.h"
#include "synth.h"
#include "modelcfg.h"
#include "progress.h"

typedef struct {
    const int64_t *dims;     /* choices for the per-table dim */
    size_t ndims;
    uint64_t seed;           /* seeds the dims (and the synthetic pool) */
    const int64_t *select;   /* table ids to convert, in this order (NULL = all) */
    size_t nselect;
    int64_t first;           /* > 0: only the first N tables (when select is NULL) */
    const char *source;      /* recorded in every table record ("synth", file name) */
    /* a model config's table whose lookups come from the file (as-convert --config): the one
     * selected table is written as id out_id with rows out_rows (its indices must lie below:
     * else an error naming it), dim out_dim and meta's name, data type and features; NULL:
     * every table as converted */
    const as_table_meta *meta;
    int64_t out_id, out_rows, out_dim;
} as_convert_opts;

/* The dim of table `id`: dims[uniform choice], from (seed, id) only. */
int64_t as_table_dim(const as_convert_opts *o, int64_t id);

/* MetaSyn tuple (indices, offsets, lengths) or the prototype's dict {'lS_indices': [...],
 * 'lS_offsets': [...]} -> table records. Validates offsets against lengths and indices and
 * reports the first violation in err. Returns number of tables written, -1 on error.
 * Bounded by the input: a data tensor with stride 0 in a dimension longer than 1 (expanded)
 * is refused, and the data tensors together may hold no more bytes than the distinct
 * storages under them (no overlapping, shared or repeated tensors), so the tables written
 * and their lookups grow at most linearly with the file. */
int64_t as_convert_torch(pt_file *f, const as_convert_opts *o, as_writer *w, as_progress *p,
                         char *err, size_t errlen);

/* the synthetic pool -> table records; returns tables written or -1 */
int64_t as_convert_synth(const as_synth_cfg *c, const as_convert_opts *o, as_writer *w, as_progress *p,
                         char *err, size_t errlen);

/* a model config (modelcfg.h) -> a `model-config` record (its topology, docs/FORMAT.md)
 * then one table record per table, id = its position, with its name, data type, feature
 * names, rows = num_embeddings and dim = embedding_dim, and its lookups: those of table k of
 * a torch.save file (MetaSyn or the prototype's, as as_convert_torch reads them; its batch)
 * when the table names one, else synthetic: batch bags (0: the config's batch_size_per_rank
 * x world_size) of its pooling factor, rows drawn by a Zipf law of its skew (synth.h
 * as_synth_gen, seeded by (seed, 3 x id)). A table whose lookups would make a record above
 * the cap on one record is refused before anything is written (as_mcfg_check_lookups).
 * Returns tables written, or with err naming the table -1 (bad data) or -2 (the environment
 * failed: out of memory generating the lookups, no temporary file for a gzip'd lookups
 * file). */
int64_t as_convert_config(const as_mcfg *c, int64_t batch, uint64_t seed, const char *source, as_writer *w,
                          as_progress *p, char *err, size_t errlen);

/* one line per tensor: path, dtype, shape (and strides/offset when not contiguous) */
int as_convert_list(pt_file *f, FILE *out, char *err, size_t errlen);
/* as --list, followed by the values in logical row-major order. Expanded (stride-0),
 * overlapping or repeated tensors are printed, but the tensors together may hold no more
 * bytes than their storages unless they hold at most AS_DUMP_FREE_ELEMENTS elements. */
#define AS_DUMP_FREE_ELEMENTS ((int64_t)1 << 20)
int as_convert_dump(pt_file *f, FILE *out, char *err, size_t errlen);

/* shortest decimal text that reads back to the same value in the given dtype */
void as_format_value(char *buf, size_t len, double v, pt_dtype dt);

#endif
