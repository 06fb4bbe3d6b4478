/* planreport.c - a plan as text (as-plan --format text); see planreport.h. Dimension
 * letters: K shards, G = W/K replicas. */
#include "planreport.h"
#include "objective.h"
#include "common.h"
#include "reclimits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the ids of shard k's tables (as_plan_group's start, order), at most max of them */
static void print_ids(FILE *f, const int64_t *start, const int64_t *order, const as_features *const *t, int64_t k,
                      int max)
{
    for (int64_t q = start[k]; q < start[k + 1]; q++) {
        if (q - start[k] == max) { fprintf(f, ",..."); return; }
        /* a model's tables by name (as-convert --config), others by id */
        if (t[order[q]]->name[0]) fprintf(f, "%s%s", q > start[k] ? "," : "", t[order[q]]->name);
        else fprintf(f, "%s%" PRId64, q > start[k] ? "," : "", t[order[q]]->id);
    }
    if (start[k + 1] == start[k]) fputc('-', f);
}

/* the memory of every shard by TorchRec's terms, when its items carry them (trmem.h) */
static void print_mem_terms(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t,
                            const int64_t *start, const int64_t *order)
{
    int any = 0;
    for (int64_t i = 0; i < p->n && !any; i++) any = as_features_has_mem(t[i]);
    if (!any) return;
    const double MiB = 1024.0 * 1024.0;
    fprintf(f, "  memory by term (TorchRec's model: weights in their data type, optimizer state, pipeline buffers), MiB\n");
    fprintf(f, "  %5s %12s %12s %12s %12s %7s\n", "shard", "weights", "optimizer", "pipeline io", "total", "cap %");
    double tw = 0, to = 0, ti = 0;
    for (int64_t k = 0; k < p->shards; k++) {
        double w = 0, o = 0, io = 0;
        for (int64_t q = start[k]; q < start[k + 1]; q++) {
            const as_trmem *x = &t[order[q]]->mem;
            w += x->weights;
            o += x->optimizer;
            io += as_trmem_io(x);
        }
        for (int64_t i = 0; i < p->n; i++) {
            if (p->assign[i] != AS_DP) continue;
            const as_trmem *x = &t[i]->mem;   /* data parallel: whole, its buffers for 1/K of the batch */
            w += x->weights;
            o += x->optimizer;
            io += as_trmem_io(x) / (double)p->shards;
        }
        tw += w;
        to += o;
        ti += io;
        fprintf(f, "  %5" PRId64 " %12.3f %12.3f %12.3f %12.3f ", k, w / MiB, o / MiB, io / MiB, (w + o + io) / MiB);
        if (m->mem_cap) fprintf(f, "%6.1f%%\n", 100.0 * (w + o + io) / (double)m->mem_cap);
        else fprintf(f, "%7s\n", "-");
    }
    fprintf(f, "  %5s %12.3f %12.3f %12.3f %12.3f\n", "total", tw / MiB, to / MiB, ti / MiB, (tw + to + ti) / MiB);
}

/* what makes the predicted slowest shard slow: its items by their predicted cost alone */
static void print_slowest(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t)
{
    int64_t K = p->shards, s = 0, n = 0;
    for (int64_t k = 1; k < K; k++)
        if (p->pred[k] > p->pred[s]) s = k;
    int64_t *it = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *it);
    double sum = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->assign[i] == s) {
            /* insertion, costliest first (ties: input order) */
            int64_t q = n++;
            while (q > 0 && m->item_pred[it[q - 1]] < m->item_pred[i]) { it[q] = it[q - 1]; q--; }
            it[q] = i;
            sum += m->item_pred[i];
        }
    fprintf(f, "  slowest shard %" PRId64 " (predicted %.4f ms): its items alone", s, p->pred[s]);
    for (int64_t q = 0; q < n && q < 5; q++) {
        char lb[200];
        const as_features *x = t[it[q]];
        fprintf(f, "%s %s %.4f ms (%.0f%%)", q ? "," : "", as_piece_label(lb, sizeof lb, x->name, x->id, &x->piece),
                m->item_pred[it[q]], sum > 0 ? 100.0 * m->item_pred[it[q]] / sum : 0.0);
    }
    if (n > 5) fprintf(f, ", %" PRId64 " more", n - 5);
    fprintf(f, "%s\n", n ? "" : " -");
    free(it);
}

/* the plan's slowest shard by the one objective (objective.h) with the communication its
 * search charged (p->comm_gbps or p->comm_model), as as-eval charges it; nothing when none */
static void print_objective(FILE *f, const as_plan *p, const as_features *const *t)
{
    as_comm_model cm = as_comm_bandwidth(p->comm_gbps);
    char e[256];
    if (p->comm_model && as_comm_model_parse(p->comm_model, &cm, e, sizeof e)) return;
    if (!as_comm_on(&cm) || !p->feasible) return;
    const as_plan_cfg cc = { .shards = p->shards, .comm_gbps = cm.ab ? 0 : cm.gbps, .comm_model = cm.ab ? &cm : NULL };
    as_objective o;
    as_obj_init(&o, &cc, t, p->n);
    as_obj_load(&o, p->assign);
    int64_t s;
    const double mx = as_obj_max(&o, p->pred, &s);
    fprintf(f, "  predicted with communication %s%s: slowest shard %" PRId64 " %.4f ms (kernel %.4f, communication %.4f)\n",
            cm.ab ? "by " : "at ", cm.name, s, mx, p->pred[s], as_obj_comm(&o, s, NULL));
    as_obj_free(&o);
}

void as_plan_print_text(FILE *f, const as_plan *p, const as_plan_meta *m, const as_features *const *t)
{
    int64_t K = p->shards;
    const double MiB = 1024.0 * 1024.0;
    char label[64];
    fprintf(f, "task %" PRId64 "%s%s%s  %s  %" PRId64 " tables on %" PRId64 " shards  ", m->task->id,
            m->task->split[0] ? " (" : "", m->task->split, m->task->split[0] ? ")" : "",
            as_plan_meta_label(p, m, label, sizeof label), p->n, K);
    if (m->mem_cap) fprintf(f, "cap %.1f MiB/shard  ", m->mem_cap / MiB);
    else fprintf(f, "no memory cap  ");
    fprintf(f, "%s  planned in %.3f ms\n", p->feasible ? "feasible" : "INFEASIBLE", p->plan_ms);
    int64_t G = m->world > 0 ? as_plan_ranks(m->world, K, 0, NULL) : -1;
    fprintf(f, "  %5s %6s %12s %7s %12s %10s  %s\n", "shard", "tables", "memory MiB", "cap %", "key sum",
            p->pred ? "pred ms" : "", G > 0 ? "ranks  table ids" : "table ids");
    uint64_t tot = 0;
    int64_t *start = as_malloc((size_t)(K + 1) * sizeof *start);
    int64_t *order = as_malloc((size_t)(p->n ? p->n : 1) * sizeof *order);
    as_plan_group(start, order, p->assign, p->n, K);
    for (int64_t k = 0; k < K; k++) {
        tot += p->mem[k];
        fprintf(f, "  %5" PRId64 " %6" PRId64 " %12.3f ", k, p->count[k], p->mem[k] / MiB);
        if (m->mem_cap) fprintf(f, "%6.1f%%", 100.0 * (double)p->mem[k] / (double)m->mem_cap);
        else fprintf(f, "%7s", "-");
        fprintf(f, " %12.6g ", p->key[k]);
        if (p->pred) fprintf(f, "%10.4f  ", p->pred[k]);
        else fprintf(f, "%10s  ", "");
        if (G > 0) {
            fputc('[', f);
            for (int64_t i = 0; i < G && i < 8; i++) fprintf(f, "%s%" PRId64, i ? "," : "", as_plan_rank(G, k, i));
            fprintf(f, "%s]  ", G > 8 ? ",..." : "");
        }
        print_ids(f, start, order, t, k, 16);
        fputc('\n', f);
    }
    if (p->ndp) {
        /* data parallel: on every shard (their memory is in every shard's above) */
        fprintf(f, "  %5s %6" PRId64 " %12s %7s %12s %10s  ", "every", p->ndp, "", "", "", "");
        for (int64_t i = 0, q = 0; i < p->n; i++) {
            if (p->assign[i] != AS_DP) continue;
            if (q++ == 16) { fprintf(f, ",..."); break; }
            if (t[i]->name[0]) fprintf(f, "%s%s", q > 1 ? "," : "", t[i]->name);
            else fprintf(f, "%s%" PRId64, q > 1 ? "," : "", t[i]->id);
        }
        fprintf(f, " (data parallel)\n");
    }
    fprintf(f, "  %5s %6" PRId64 " %12.3f\n", "total", p->n - p->ninfeasible, tot / MiB);
    print_mem_terms(f, p, m, t, start, order);
    free(start);
    free(order);
    if (p->pred && K > 0) {
        double mx = p->pred[0], mn = p->pred[0], s = 0;
        for (int64_t k = 0; k < K; k++) {
            if (p->pred[k] > mx) mx = p->pred[k];
            if (p->pred[k] < mn) mn = p->pred[k];
            s += p->pred[k];
        }
        fprintf(f, "  predicted (estimated): max %.4f ms, min %.4f ms, mean %.4f ms, balance %.1f%%\n", mx, mn, s / K,
                mx > 0 ? 100.0 * mn / mx : 100.0);
    }
    if (p->pred && K > 0) print_objective(f, p, t);
    if (p->pred && m->item_pred && K > 0) print_slowest(f, p, m, t);
    if (p->refine.done) {
        const as_plan_refined *r = &p->refine;
        fprintf(f, "  refined: %" PRId64 " move%s, %" PRId64 " swap%s", r->moves, r->moves == 1 ? "" : "s", r->swaps,
                r->swaps == 1 ? "" : "s");
        if (r->placed) fprintf(f, ", %" PRId64 " unplaced table%s placed", r->placed, r->placed == 1 ? "" : "s");
        fprintf(f, " in %.3f ms (%s); predicted max before %.4f ms\n", r->ms,
                !r->stop || !strcmp(r->stop, "optimum") ? "local optimum" : !strcmp(r->stop, "time") ? "time budget spent"
                                                                                                   : "step budget spent",
                r->max_before);
    }
    if (p->ninfeasible) {
        fprintf(f, "  fit on no shard:");
        for (int64_t i = 0; i < p->ninfeasible; i++) fprintf(f, " %" PRId64, p->infeasible[i]);
        fputc('\n', f);
    }
    fputc('\n', f);
}
