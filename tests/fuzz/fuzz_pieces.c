/* fuzz_pieces.c - the readers of records that carry pieces of tables (lib/records/piece.h): plan
 * records (as_planrec_read: `pieces` parsed and their cover checked; as_planrec_full_read with
 * the communication bytes, then charged and evaluated), `pieces` of shard and
 * cost records (as_field_pieces), features records with a `piece` (as_features_read), then
 * what an accepted plan goes on to: the grouping by shard, the size check against made-up
 * tables and the piece's names for messages. Input: a mode byte, then a stream or its raw
 * msgpack records (fuzz.h). */
#include "fuzz.h"
#include "eval.h"
#include "featurize.h"
#include "piece.h"
#include "plan.h"
#include "planrec.h"
#include "stream.h"

#include <stdlib.h>

/* every table 1000 rows x 64 columns, but table 7, which is unknown */
static int size_of(void *ctx, int64_t id, int64_t *rows, int64_t *dim)
{
    (void)ctx;
    if (id == 7) return -1;
    *rows = 1000;
    *dim = 64;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setenv("AS_MAX_RECORD", "64M", 0);
    char path[64], err[1024];
    int fd = fz_stream_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    as_reader *r = as_reader_open(path);
    if (r) {
        as_record rec;
        while (as_reader_next(r, &rec) == 1) {
            as_planrec p;
            err[0] = 0;
            if (as_planrec_read(&rec.obj, &p, 0, err, sizeof err) == 0) {
                if (p.n < 0 || p.shards < 1) abort();
                int64_t *start = malloc((size_t)(p.shards + 2) * sizeof *start), *order = malloc((size_t)(p.n + 1) * sizeof *order);
                if (start && order) {
                    as_planrec_group(&p, start, order);
                    if (start[p.shards] + p.unplaced != p.n) abort();
                }
                free(start);
                free(order);
                /* an accepted plan's pieces cover each table once: checked again, the same */
                if (as_pieces_check_cover(p.tables, p.pieces, p.n, err, sizeof err)) abort();
                err[0] = 0;
                if (as_pieces_check_dims(p.tables, p.pieces, p.n, size_of, NULL, err, sizeof err) && !err[0]) abort();
                char nb[96];
                for (int64_t i = 0; i < p.n && p.pieces; i++) (void)as_piece_name(nb, sizeof nb, p.tables[i], &p.pieces[i]);
                as_planrec_free(&p);
            } else if (!err[0]) abort();
            /* as-eval's reading of the same record: pieces, costs, communication bytes; an
               accepted plan is charged its communication and evaluated */
            as_planrec_full ep;
            err[0] = 0;
            if (as_planrec_full_read(&rec.obj, &ep, err, sizeof err) == 0) {
                if ((ep.comm_in == NULL) != (ep.comm_out == NULL)) abort();
                int64_t mis, hv, bn;
                double bs, bm;
                const as_comm_model bw = as_comm_bandwidth(600);
                char e2[256];
                (void)as_eval_charge_comm(&ep, 1, &bw, &mis, &hv, &bs, &bn, &bm, e2, sizeof e2);
                as_eval_compute(&ep, 1);
                as_planrec_full_free(&ep);
            } else if (!err[0]) abort();
            const msgpack_object *t = as_obj_get(&rec.obj, "tables");
            if (t && t->type == MSGPACK_OBJECT_ARRAY) {
                as_piece *pc = NULL;
                err[0] = 0;
                if (as_field_pieces(&rec.obj, "pieces", (int64_t)t->via.array.size, &pc, err, sizeof err) == 0) free(pc);
                else if (!err[0]) abort();
            }
            as_features f;
            err[0] = 0;
            if (as_features_read(&rec.obj, &f, err, sizeof err) == 0) {
                if (!as_piece_whole(&f.piece) && (f.dim != f.piece.c1 - f.piece.c0 || f.rows != f.piece.r1 - f.piece.r0)) abort();
                as_features c;
                (void)as_features_cols(&c, &f, 0, f.dim);
            } else if (!err[0]) abort();
        }
        as_reader_close(r);
    }
    close(fd);
    return 0;
}
