/* fuzz_modelcfg.c - model configs (lib/data/modelcfg.h, as-convert --config) on top of the JSON
 * decoder. Input: a config's JSON text. A rejected config must come with a message; an
 * accepted one must hold what the parser promises (1 or more tables with unique, non-empty
 * names, these and the feature names without control characters, rows and dims in range, a
 * known data type, a batch within bounds), and its first table's lookups are generated at a
 * small batch (as as-convert does). */
#include "fuzz.h"
#include "modelcfg.h"
#include "msgobj.h"
#include "synth.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    as_mcfg c;
    err[0] = 0;
    if (as_mcfg_parse(&c, (const char *)data, size, err, sizeof err)) {
        if (!err[0]) abort();
        as_mcfg_free(&c);
        return 0;
    }
    if (c.n < 1 || c.world_size < 1 || c.local_size < 1 || c.world_size % c.local_size || as_mcfg_batch(&c) < 1) abort();
    for (int64_t i = 0; i < c.n; i++) {
        const as_mcfg_table *t = &c.tables[i];
        if (!t->name[0] || t->rows < 1 || t->rows > INT32_MAX || t->dim < 1 || t->nfeatures < 1 ||
            !as_mcfg_dtype_bytes(t->data_type) || !(t->pooling >= 0) || !(t->skew >= 0))
            abort();
        for (int64_t j = 0; j < i && c.n <= 64; j++)
            if (!strcmp(t->name, c.tables[j].name)) abort();
        /* names printed raw in text tables: no control characters, valid UTF-8 */
        char why[96];
        if (as_name_bad(t->name, strlen(t->name), why, sizeof why)) abort();
        for (int k = 0; k < t->nfeatures; k++)
            if (as_name_bad(t->features[k], strlen(t->features[k]), why, sizeof why)) abort();
    }
    /* the first table's lookups, as as-convert makes them, at a batch of 8 */
    const as_mcfg_table *t = &c.tables[0];
    if (t->pooling <= 64) {
        const as_synth_params sp = { .hash = t->rows, .pooling = t->pooling, .zipf = t->skew, .zipf2 = t->skew,
                                     .knee = (double)t->rows };
        as_synth_table tb;
        const int rc = as_synth_gen(&sp, 8, 0, 0, t->fixed, &tb);
        if (rc == 0) {
            for (int64_t k = 0; k < tb.lookups; k++)
                if (tb.indices[k] < 0 || tb.indices[k] >= t->rows) abort();
        } else if (rc != -12) {     /* only -ENOMEM may fail a config the parser accepted */
            abort();
        }
        as_synth_free(&tb);
    }
    as_mcfg_free(&c);
    return 0;
}
