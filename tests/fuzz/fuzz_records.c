/* fuzz_records.c - the record parsers the other targets do not reach: `table` records
 * (as_table_parse, every offset and index read back), `task` records (as_taskrec_read),
 * single-table `cost` records (as_eval_singles_take, then the medians built and read),
 * `train` records (as_eval_train_read), the held-out quality of `model` and
 * `costfit-report` records (as_eval_quality_read, printed), and as-eval's `plan` reader with
 * the planner's fields (names, item_pred_ms, mem_terms, pred_ms): an accepted plan is
 * evaluated and its per-rank statistics printed in every format (lib/eval/evalranks.h) with the
 * single costs read so far. Input: a mode byte, then a stream or its raw msgpack records
 * (fuzz.h). */
#include "fuzz.h"
#include "eval.h"
#include "evalfloor.h"
#include "evalranks.h"
#include "plan.h"
#include "planrec.h"
#include "stream.h"
#include "table.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setenv("AS_MAX_RECORD", "64M", 0);
    char path[64], err[1024];
    int fd = fz_stream_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    FILE *sink = fopen("/dev/null", "w");
    as_eval_singles singles;
    memset(&singles, 0, sizeof singles);
    as_reader *r = as_reader_open(path);
    if (r && sink) {
        as_record rec;
        while (as_reader_next(r, &rec) == 1) {
            /* a table: its arrays, every element read */
            int64_t id, rows, batch, dim;
            as_array off, idx;
            char src[64];
            err[0] = 0;
            if (as_table_parse(&rec.obj, &id, &rows, &batch, &dim, &off, &idx, src, sizeof src, err, sizeof err) == 0) {
                if (off.n != batch + 1 || rows < 1 || dim < 1) abort();
                int64_t v;
                for (int64_t i = 0; i < off.n; i++) as_array_get_i64(&off, i, 1, &v);
                for (int64_t i = 0; i < idx.n; i++) as_array_get_i64(&idx, i, 1, &v);
            } else if (!err[0]) abort();
            /* a task */
            as_taskrec t;
            err[0] = 0;
            if (as_taskrec_read(&rec.obj, &t, err, sizeof err) == 0) {
                if (t.ntables < 0 || t.shards < 1) abort();
                as_taskrec_free(&t);
            } else if (!err[0]) abort();
            /* a single-table cost */
            err[0] = 0;
            if (as_eval_singles_take(&singles, &rec.obj, err, sizeof err) && !err[0]) abort();
            /* a train record */
            as_eval_train tr;
            err[0] = 0;
            if (as_eval_train_read(&rec.obj, &tr, err, sizeof err) == 0) (void)as_eval_train_balance(&tr);
            else if (!err[0]) abort();
            /* the held-out quality of a model or a costfit-report */
            as_eval_quality q;
            memset(&q, 0, sizeof q);
            err[0] = 0;
            int qr = as_eval_quality_read(&rec.obj, &q, err, sizeof err);
            if (qr < 0 && !err[0]) abort();
            if (qr == 0 && q.have) {
                as_eval_print_quality(sink, AS_EVAL_TEXT, &q);
                (void)as_eval_quality_worse(&q);
            }
            /* as-eval's plan: evaluated, its ranks printed with the singles so far */
            as_planrec_full ep;
            err[0] = 0;
            if (as_planrec_full_read(&rec.obj, &ep, err, sizeof err) == 0) {
                if ((ep.pred == NULL) == 0 && ep.K < 1) abort();
                as_eval_compute(&ep, 1);
                as_eval_singles_build(&singles, "");
                for (int fmt = AS_EVAL_TEXT; fmt <= AS_EVAL_CSV; fmt++)
                    as_eval_print_ranks(sink, (as_eval_format)fmt, &ep, 1, ep.cost_kind == 1 ? "measured" : "estimated",
                                        &singles);
                as_planrec_full_free(&ep);
            } else if (!err[0]) abort();
        }
    }
    if (r) as_reader_close(r);
    as_eval_singles_free(&singles);
    if (sink) fclose(sink);
    close(fd);
    return 0;
}
