/* mcfgrec.h - the `model-config` record (docs/FORMAT.md; written by as-convert --config, before
 * its tables): a model config's topology. Its writer (as_mcfgrec_pack: the 13 fields in the
 * order and with the types as-convert writes them) and its reader (as_mcfgrec_read: every
 * field as it stands, each with where it stood (reclimits.h as_fhas), never refused, so that
 * each reader keeps its own checks and messages: as-features --model-task the topology,
 * as-plan local_size and module_path). The kind's name is this module's: as_mcfgrec_is.
 * (The name: `modelcfg` is the config file's parser, a stage's; this is its record's.)
 */
#ifndef AS_MCFGREC_H
#define AS_MCFGREC_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#include "reclimits.h"

typedef struct {
    as_fstr name, source;       /* the config's name, where its sizes come from */
    as_fstr module_path;        /* the EmbeddingBagCollection's path in the model ("": none) */
    as_fint world_size, local_size;   /* ranks in all, ranks per host */
    as_fint hbm_bytes;          /* HBM per device */
    as_fint batch_size_per_rank;
    as_fstr optimizer, pipeline;      /* TorchRec's names, lower case */
    as_fint dense_bytes;        /* the dense part of TorchRec's reservation (absent before
                                 * 2026-11-26) */
    as_fint tables;             /* table records that follow */
    as_fint batch;              /* B of every table's lookups */
} as_mcfgrec;

/* 1 when rec (a map) is a `model-config` record: its `kind` is "model-config" */
int as_mcfgrec_is(const msgpack_object *rec);
/* pack c as one `model-config` record (one map of 13 fields, the caller ends the record):
 * kind, name, source, module_path, world_size, local_size, hbm_bytes, batch_size_per_rank,
 * optimizer, pipeline, dense_bytes, tables, batch; every field written whatever its has
 * (a NULL string as "") */
void as_mcfgrec_pack(msgpack_packer *pk, const as_mcfgrec *c);
/* every field of rec into c (zeroed first), as it stands; free with as_mcfgrec_free */
void as_mcfgrec_read(const msgpack_object *rec, as_mcfgrec *c);
void as_mcfgrec_free(as_mcfgrec *c);   /* NULL: nothing */

#endif
