/* fuzz_trplanread.c - as-plan --import (lib/plan/trplanread.h): TorchRec plans as JSON lines read
 * back into plans of the input's tasks. Input: the JSON lines as they are (a file of
 * documents). The tasks they are imported into are made once: tables 1 (100 rows x 4
 * columns, with the features of its 2 and 4 row blocks), 2 (100 x 8, named "emb_b" as a model
 * config names its tables), 3 (10 x 2); task 5 of all three on 2 shards, task 6 of tables 1
 * and 3 on 4 shards. A rejected file must come with a message naming the file; an accepted
 * one is rendered as TorchRec JSON (as-plan --import --format torchrec), and that rendering
 * must import again to the very same rendering (export and import are inverse on what the
 * import accepts). */
#include "fuzz.h"
#include "planrun.h"
#include "tasks.h"
#include "trplanread.h"

#include <stdlib.h>
#include <string.h>

static as_plan_input g_in;
static int g_ready;   /* 1: g_in read; -1: it could not be made (the target does nothing) */

/* the features of table id (rows x dim), or of its row piece [r0, r1) when r1 > 0 */
static as_features feat(int64_t id, int64_t rows, int64_t dim, int64_t r0, int64_t r1, const char *name)
{
    as_features f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.dim = dim;
    f.rows = r1 > 0 ? r1 - r0 : rows;
    f.batch = 8;
    f.lookups = 8 * f.rows / 10 + 1;
    f.pooling = (double)f.lookups / 8;
    f.bins[0] = 1;
    f.bytes_fp16 = f.rows * dim * 2;
    f.bytes_fp32 = f.rows * dim * 4;
    f.size_gib = (double)f.bytes_fp16 / (1 << 30);
    f.piece = r1 > 0 ? (as_piece){ 0, dim, r0, r1 } : AS_PIECE_WHOLE;
    snprintf(f.name, sizeof f.name, "%s", name);
    return f;
}

/* the tables and tasks above, written to a scratch stream and read back into g_in */
static int make_input(void)
{
    char path[256], err[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz-trplanread-%d.ast", dir && *dir ? dir : "/tmp", (int)getpid());
    as_writer *w = as_writer_open(path, 1, 0);
    as_writer_header(w, "fuzz", 0, NULL);
    as_features f[] = {
        feat(1, 100, 4, 0, 0, ""), feat(1, 100, 4, 0, 50, ""), feat(1, 100, 4, 50, 100, ""),
        feat(1, 100, 4, 0, 25, ""), feat(1, 100, 4, 25, 50, ""), feat(1, 100, 4, 50, 75, ""), feat(1, 100, 4, 75, 100, ""),
        feat(2, 100, 8, 0, 0, "emb_b"), feat(3, 10, 2, 0, 0, ""),
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) as_features_write(w, &f[i]);
    as_task_cfg tc;
    memset(&tc, 0, sizeof tc);
    tc.unseen_ratio = -1;
    int64_t t5[] = { 1, 2, 3 }, t6[] = { 1, 3 };
    as_task a = { 5, 1, t5, 3, 2, 0, 0 }, b = { 6, 1, t6, 2, 4, 0, 0 };
    as_task_write(w, &tc, &a);
    as_task_write(w, &tc, &b);
    as_writer_close(w);
    char *files[] = { path };
    const int rc = as_plan_input_read(&g_in, files, 1, NULL, NULL, err, sizeof err);
    unlink(path);
    return rc;
}

/* file imported, rendered as TorchRec JSON into a malloc'd *text (free it); the import's
 * return with err */
static int import_text(const char *file, char **text, size_t *len, int64_t *imported, char *err, size_t errlen)
{
    static const as_torchrec_opts tro = { "", 8 };
    as_plan_run_cfg c;
    memset(&c, 0, sizeof c);
    c.out = AS_PLAN_OUT_TORCHREC;
    c.tro = &tro;
    *text = NULL;
    *len = 0;
    c.text = open_memstream(text, len);
    if (!c.text) return -2;
    as_plan_run_stats st;
    err[0] = 0;
    const int rc = as_plan_import_run(&st, &c, &g_in, file, imported, err, errlen);
    fclose(c.text);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ready) {
        as_verbosity = 0;   /* the import's warnings (compute kernels) stay quiet */
        g_ready = make_input() ? -1 : 1;
    }
    if (g_ready < 0) return 0;
    char path[64], err[1024];
    int fd = fz_memfd(data, size, path, sizeof path);
    if (fd < 0) return 0;
    char *out = NULL;
    size_t len = 0;
    int64_t n = 0;
    const int rc = import_text(path, &out, &len, &n, err, sizeof err);
    close(fd);
    if (rc == -1 && (!err[0] || !strstr(err, path))) abort();   /* an error names the file */
    if (rc == 0 && n > 0) {
        /* the rendering imports again, to itself */
        int fd2 = fz_memfd((const uint8_t *)out, len, path, sizeof path);
        if (fd2 >= 0) {
            char *again = NULL;
            size_t len2 = 0;
            int64_t n2 = 0;
            const int rc2 = import_text(path, &again, &len2, &n2, err, sizeof err);
            close(fd2);
            if (rc2 == -1) {
                fprintf(stderr, "fuzz_trplanread: the rendering of an accepted file is refused: %s\n", err);
                abort();
            }
            if (rc2 == 0 && (n2 != n || len2 != len || memcmp(again, out, len))) {
                fprintf(stderr, "fuzz_trplanread: the rendering imports to another rendering\n");
                abort();
            }
            free(again);
        }
    }
    free(out);
    return 0;
}
