/* trplanwrite.c - a plan written as TorchRec's ShardingPlan (as-plan --format torchrec); see
 * trplanwrite.h. Its reverse, TorchRec plans read back, is trplanread.c. */
#include "trplanwrite.h"

#include "common.h"
#include "json.h"
#include "reclimits.h"
#include "planrec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the row pieces ord[0..m) of a table of `rows` rows are TorchRec's table_row_wise: L
   blocks of ceil(rows / L) rows on the ranks of one host h, block i on rank h L + i (K a
   multiple of L above it), and not its row_wise (K blocks from rank 0, which a table of at
   most L rows on host 0 also is) */
static int table_row_wise(const as_plan *p, const as_features *const *t, const int64_t *ord, int64_t m, int64_t rows,
                          int64_t K, int64_t L)
{
    if (L < 2 || K <= L || K % L || m > L) return 0;
    const int64_t block = (rows + L - 1) / L, h = p->assign[ord[0]] / L;
    for (int64_t q = 0; q < m; q++) {
        const as_piece a = as_piece_full(&t[ord[q]]->piece, t[ord[q]]->rows, t[ord[q]]->dim);
        const int64_t r1 = (q + 1) * block < rows ? (q + 1) * block : rows;
        if (a.r0 != q * block || a.r1 != r1 || p->assign[ord[q]] != h * L + q) return 0;
    }
    if (m * block < rows) return 0;
    /* the same blocks are row_wise's when they start on rank 0 and row_wise cuts them so */
    const int64_t kb = (rows + K - 1) / K;
    return !(h == 0 && kb == block);
}

int as_plan_print_torchrec(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t,
                           const as_torchrec_opts *o)
{
    if (!p->feasible) return -1;
    int64_t K = p->shards, L = o->local_size > 0 ? o->local_size : 8;
    char label[64];
    const char *lab = as_plan_meta_label(p, m, label, sizeof label);
    fprintf(f, "{\"task\":%" PRId64 ",\"alg\":", m->task->id);
    as_json_string(f, lab, strlen(lab));
    fprintf(f, ",\"feasible\":true,\"world_size\":%" PRId64 ",\"local_size\":%" PRId64 ",\"module\":", K, L);
    as_json_string(f, o->module, strlen(o->module));
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    if (G > 0) {
        fprintf(f, ",\"dmp_collection\":{\"world_size\":%" PRId64 ",\"sharding_group_size\":%" PRId64
                   ",\"replicas\":%" PRId64 ",\"shard_ranks\":[", m->world, K, G);
        for (int64_t k = 0; k < K; k++) {
            fprintf(f, "%s[", k ? "," : "");
            for (int64_t i = 0; i < G; i++) fprintf(f, "%s%" PRId64, i ? "," : "", as_plan_rank(G, k, i));
            fputc(']', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, ",\"plan\":{");
    as_json_string(f, o->module, strlen(o->module));
    fprintf(f, ":{");
    /* a table per key, in the order of its first item; a split table's items are its shards,
       ordered by (r0, c0) */
    int64_t *ord = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *ord);
    uint8_t *done = as_calloc((size_t)(p->n ? p->n : 1), 1);
    int first = 1;
    for (int64_t i = 0; i < p->n; i++) {
        if (done[i]) continue;
        int64_t m = 0, rows = 0, dim = 0;
        int full_rows = 1, full_cols = 1;
        for (int64_t j = i; j < p->n; j++)
            if (!done[j] && t[j]->id == t[i]->id) {
                done[j] = 1;
                /* insertion by (r0, c0) */
                const as_piece a = as_piece_full(&t[j]->piece, t[j]->rows, t[j]->dim);
                int64_t q = m++;
                while (q > 0) {
                    const as_piece b = as_piece_full(&t[ord[q - 1]]->piece, t[ord[q - 1]]->rows, t[ord[q - 1]]->dim);
                    if (b.r0 < a.r0 || (b.r0 == a.r0 && b.c0 <= a.c0)) break;
                    ord[q] = ord[q - 1];
                    q--;
                }
                ord[q] = j;
                if (a.r1 > rows) rows = a.r1;
                if (a.c1 > dim) dim = a.c1;
            }
        for (int64_t q = 0; q < m; q++) {
            const as_piece a = as_piece_full(&t[ord[q]]->piece, t[ord[q]]->rows, t[ord[q]]->dim);
            if (a.r0 != 0 || a.r1 != rows) full_rows = 0;
            if (a.c0 != 0 || a.c1 != dim) full_cols = 0;
        }
        const char *type = m == 1 ? "table_wise" : full_rows ? "column_wise" : full_cols ? "row_wise" : "grid_shard";
        if (m > 1 && full_cols && table_row_wise(p, t, ord, m, rows, K, L)) type = "table_row_wise";
        /* the table's name in its model (as-convert --config), else t<id> */
        if (!first) fputc(',', f);
        if (t[i]->name[0]) as_json_string(f, t[i]->name, strlen(t[i]->name));
        else fprintf(f, "\"t%" PRId64 "\"", t[i]->id);
        first = 0;
        if (p->assign[i] == AS_DP) {
            /* data parallel: on every rank, no shards (TorchRec's ParameterSharding has no
               sharding_spec for it); TorchRec's kernel for it is dense */
            fprintf(f, ":{\"sharding_type\":\"data_parallel\",\"compute_kernel\":\"dense\",\"ranks\":[");
            for (int64_t k = 0; k < K; k++) fprintf(f, "%s%" PRId64, k ? "," : "", k);
            fprintf(f, "],\"shards\":[]}");
            continue;
        }
        fprintf(f, ":{\"sharding_type\":\"%s\",\"compute_kernel\":\"fused\",\"ranks\":[", type);
        for (int64_t q = 0; q < m; q++) fprintf(f, "%s%" PRId64, q ? "," : "", p->assign[ord[q]]);
        fprintf(f, "],\"shards\":[");
        for (int64_t q = 0; q < m; q++) {
            const as_piece a = as_piece_full(&t[ord[q]]->piece, t[ord[q]]->rows, t[ord[q]]->dim);
            const int64_t r = p->assign[ord[q]];
            fprintf(f, "%s{\"shard_offsets\":[%" PRId64 ",%" PRId64 "],\"shard_sizes\":[%" PRId64 ",%" PRId64
                       "],\"placement\":\"rank:%" PRId64 "/cuda:%" PRId64 "\"}",
                    q ? "," : "", a.r0, a.c0, a.r1 - a.r0, a.c1 - a.c0, r, r % L);
        }
        fprintf(f, "]}");
    }
    free(ord);
    free(done);
    fprintf(f, "}}}\n");
    return 0;
}
