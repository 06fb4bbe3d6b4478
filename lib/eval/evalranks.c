/* evalranks.c - per-rank planner statistics; see evalranks.h */
#include "evalranks.h"
#include "common.h"
#include "piece.h"
#include "planrec.h"
#include "reclimits.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS_SHOWN 8       /* items listed per rank (text, markdown) */
#define SLOW_SHOWN 5        /* items of the slowest rank explained */

static const double MiB = 1024.0 * 1024.0;

/* rank q's first rank without a cost where others have one (costs partly known), else -1 */
static int64_t unmeasured_rank(const as_planrec_full *q)
{
    int64_t known = 0, first = -1;
    for (int64_t k = 0; k < q->K; k++) {
        if (isfinite(q->cost[k])) known++;
        else if (first < 0) first = k;
    }
    return known > 0 && first >= 0 ? first : -1;
}

int64_t as_eval_slowest_rank(const as_planrec_full *q, const char *label, const char **by)
{
    int64_t s = -1;
    int known = q->K > 0;
    for (int64_t k = 0; k < q->K; k++) known &= isfinite(q->cost[k]);
    if (known) {
        for (int64_t k = 0; k < q->K; k++)
            if (s < 0 || q->cost[k] > q->cost[s]) s = k;
        if (by) *by = label;
        return s;
    }
    /* some ranks' costs known, others not: a prediction is no match for a measurement, and
       the unmeasured rank may be the slowest; none */
    if (!q->pred || unmeasured_rank(q) >= 0) return -1;
    for (int64_t k = 0; k < q->K; k++)
        if (s < 0 || q->pred[k] > q->pred[s]) s = k;
    if (by) *by = "predicted";
    return s;
}

/* entry i's label: its name (or t<id>) and its piece; a data-parallel entry (on every rank)
 * marked " (dp)" */
static const char *item_label(char *buf, size_t len, const as_planrec_full *q, int64_t i)
{
    as_piece_label(buf, len, q->names ? q->names[i] : NULL, q->tables[i], q->pieces ? &q->pieces[i] : NULL);
    if (q->assign[i] == AS_DP) {
        const size_t m = strlen(buf);
        snprintf(buf + m, len - m, " (dp)");
    }
    return buf;
}

/* entry i's measured cost alone (single-item cost records); NaN unknown. A data-parallel
 * entry's: its table's alone over K, an approximation of its rank's slice (1/K of the
 * batch), as as-plan's item_pred_ms of it is its full-batch prediction over K */
static double item_single(const as_planrec_full *q, int64_t i, const as_eval_singles *s)
{
    if (!s) return NAN;
    if (q->pieces && !as_piece_whole(&q->pieces[i])) return as_eval_singles_get_piece(s, q->tables[i], &q->pieces[i], NULL);
    const double c = as_eval_singles_get(s, q->tables[i], NULL);
    return q->assign[i] == AS_DP ? c / (double)q->K : c;
}

/* s inside a quoted CSV field: its quotes doubled */
static void csv_inner(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, ",%.9g", v);
    else fputc(',', f);
}

/* a number cell of width w (text) or | v | (markdown); NaN: n/a */
static void cell_num(FILE *f, as_eval_format fmt, int w, const char *cfmt, double v)
{
    char b[64];
    if (isfinite(v)) snprintf(b, sizeof b, cfmt, v);
    else snprintf(b, sizeof b, "n/a");
    if (fmt == AS_EVAL_MARKDOWN) fprintf(f, " %s |", b);
    else fprintf(f, " %*s", w, b);
}

/* the entries of rank k in plan order into it[]: its own and the data-parallel ones (on
 * every rank); their count */
static int64_t rank_items(const as_planrec_full *q, int64_t k, int64_t *it)
{
    int64_t n = 0;
    for (int64_t i = 0; i < q->T; i++)
        if (q->assign[i] == k || q->assign[i] == AS_DP) it[n++] = i;
    return n;
}

/* a plan with data-parallel entries: a line saying they are on every rank, their
 * all-reduce bytes and their part of each rank's cost, where the plan carries them */
static void print_dp(FILE *f, as_eval_format fmt, const as_planrec_full *q)
{
    if (!q->ndp) return;
    const char *ind = fmt == AS_EVAL_MARKDOWN ? "" : "  ";
    fprintf(f, "%sdata parallel: %" PRId64 " %s on every rank, marked (dp) (each rank looks up its share of the batch; "
               "the gradients are all-reduced)", ind, q->ndp, q->ndp == 1 ? "table" : "tables");
    if (q->comm_ar) {
        double mx = 0;
        for (int64_t k = 0; k < q->K; k++) if (q->comm_ar[k] > mx) mx = q->comm_ar[k];
        fprintf(f, "; all-reduce %.3f MB sent per rank at most", mx / 1e6);
    }
    if (q->cost_dp) {
        fprintf(f, "; their part of each rank's cost:");
        for (int64_t k = 0; k < q->K; k++) {
            if (isfinite(q->cost_dp[k])) fprintf(f, "%s %.4f", k ? "," : "", q->cost_dp[k]);
            else fprintf(f, "%s n/a", k ? "," : "");
        }
        fprintf(f, " ms");
    }
    fprintf(f, "%s\n", fmt == AS_EVAL_MARKDOWN ? "\n" : "");
}

static int64_t count_pieces(const as_planrec_full *q, const int64_t *it, int64_t n)
{
    int64_t c = 0;
    for (int64_t j = 0; j < n; j++) c += q->pieces && !as_piece_whole(&q->pieces[it[j]]);
    return c;
}

/* rank k's memory in bytes by term (weights, optimizer, pipeline; NaN without mem_terms)
   and in all (NaN when the plan carries neither) */
static void rank_mem(const as_planrec_full *q, int64_t k, double t[3], double *total)
{
    t[0] = t[1] = t[2] = NAN;
    *total = q->mem ? (double)q->mem[k] : NAN;
    if (!q->mterm) return;
    for (int j = 0; j < 3; j++) t[j] = (double)q->mterm[j * q->K + k];
    *total = t[0] + t[1] + t[2];
}

static void print_csv(FILE *f, const as_planrec_full *q, const char *label, const as_eval_singles *s, int64_t *it)
{
    const char *by;
    const int64_t slow = as_eval_slowest_rank(q, label, &by);
    for (int64_t k = 0; k < q->K; k++) {
        const int64_t n = rank_items(q, k, it);
        double t[3], tot;
        rank_mem(q, k, t, &tot);
        fprintf(f, "%" PRId64 ",%" PRId64 ",", q->run, q->task);
        as_eval_csv_field(f, q->alg);
        fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64, k, n, count_pieces(q, it, n));
        for (int j = 0; j < 3; j++) csv_num(f, t[j]);
        csv_num(f, tot);
        if (q->mem_cap) fprintf(f, ",%" PRIu64, q->mem_cap);
        else fputc(',', f);
        csv_num(f, q->pred ? q->pred[k] : NAN);
        fprintf(f, ",%s", label);
        csv_num(f, q->cost[k]);
        fprintf(f, ",%s,", k == slow ? by : "");
        char lb[256];
        /* the items, their predictions and measured costs alone, each ;-separated */
        fputc('"', f);
        for (int64_t j = 0; j < n; j++) {
            if (j) fputc(';', f);
            csv_inner(f, item_label(lb, sizeof lb, q, it[j]));
        }
        fputs("\",", f);
        for (int64_t j = 0; j < n && q->item_pred; j++) fprintf(f, "%s%.9g", j ? ";" : "", q->item_pred[it[j]]);
        fputc(',', f);
        for (int64_t j = 0; j < n && s; j++) {
            const double v = item_single(q, it[j], s);
            fputs(j ? ";" : "", f);
            if (isfinite(v)) fprintf(f, "%.9g", v);
        }
        fputc('\n', f);
    }
}

/* what makes the slowest rank slow: its cost against the others, its items by cost alone */
static void print_slowest(FILE *f, as_eval_format fmt, const as_planrec_full *q, const char *label,
                          const as_eval_singles *s, int64_t *it)
{
    const char *by;
    const int64_t slow = as_eval_slowest_rank(q, label, &by);
    if (slow < 0) {
        const int64_t u = unmeasured_rank(q);
        if (u >= 0)
            fprintf(f, "%sno slowest rank: rank %" PRId64 "'s cost is unknown (nil) and a prediction is not compared with "
                       "the other ranks' %s costs\n", fmt == AS_EVAL_MARKDOWN ? "" : "  ", u, label);
        else
            fprintf(f, "%sno slowest rank: the plan has neither every rank's cost nor predictions\n", fmt == AS_EVAL_MARKDOWN ? "" : "  ");
        return;
    }
    const double *v = !strcmp(by, "predicted") ? q->pred : q->cost;
    double sum = 0, next = -1;
    int64_t nk = -1;
    for (int64_t k = 0; k < q->K; k++) {
        sum += v[k];
        if (k != slow && (nk < 0 || v[k] > next)) { nk = k; next = v[k]; }
    }
    const char *b = fmt == AS_EVAL_MARKDOWN ? "**" : "";
    fprintf(f, "%s%sslowest rank %" PRId64 "%s: %.4f ms %s", fmt == AS_EVAL_MARKDOWN ? "" : "  ", b, slow, b, v[slow], by);
    if (v != q->pred && q->pred) fprintf(f, " (predicted %.4f ms)", q->pred[slow]);
    if (sum > 0) fprintf(f, ", %.2fx the mean rank", v[slow] * (double)q->K / sum);
    if (nk >= 0) fprintf(f, "; the next, rank %" PRId64 ", %.4f ms (%.1f %% faster)", nk, next,
                         v[slow] > 0 ? 100.0 * (v[slow] - next) / v[slow] : 0.0);
    fputc('\n', f);
    int64_t n = rank_items(q, slow, it);
    if (!n) return;
    /* costliest alone first: by prediction, else by measurement, else in plan order */
    double *key = as_malloc((size_t)n * sizeof *key);
    int have_single = 0;
    for (int64_t j = 0; j < n; j++) {
        const double m = item_single(q, it[j], s);
        have_single |= isfinite(m);
        key[j] = q->item_pred ? q->item_pred[it[j]] : m;
    }
    for (int64_t j = 1; j < n; j++)
        for (int64_t i = j; i > 0 && (isnan(key[i - 1]) ? !isnan(key[i]) : key[i - 1] < key[i]); i--) {
            double tk = key[i]; key[i] = key[i - 1]; key[i - 1] = tk;
            int64_t ti = it[i]; it[i] = it[i - 1]; it[i - 1] = ti;
        }
    double psum = 0, msum = 0;
    int all_single = 1;
    for (int64_t j = 0; j < n; j++) {
        if (q->item_pred) psum += q->item_pred[it[j]];
        const double m = item_single(q, it[j], s);
        if (isfinite(m)) msum += m;
        else all_single = 0;
    }
    if (!q->item_pred && !have_single) {
        fprintf(f, "%sits items' costs alone are not known (plans from as-plan --model carry their predictions; "
                   "as-bench --singles measures them)\n", fmt == AS_EVAL_MARKDOWN ? "" : "    ");
        free(key);
        return;
    }
    /* each item: its prediction alone and its share of the rank's items' predictions, its
       measurement alone (a share only when every item's is known) */
    fprintf(f, "%sits items by their cost alone:", fmt == AS_EVAL_MARKDOWN ? "" : "    ");
    for (int64_t j = 0; j < n && j < SLOW_SHOWN; j++) {
        char lb[256];
        fprintf(f, "%s %s (", j ? ";" : "", item_label(lb, sizeof lb, q, it[j]));
        if (q->item_pred)
            fprintf(f, "predicted %.4f ms, %.0f %%", q->item_pred[it[j]], psum > 0 ? 100.0 * q->item_pred[it[j]] / psum : 0.0);
        const double m = item_single(q, it[j], s);
        if (have_single) {
            fputs(q->item_pred ? "; " : "", f);
            if (!isfinite(m)) fputs("measured n/a", f);
            else if (all_single) fprintf(f, "measured %.4f ms, %.0f %%", m, msum > 0 ? 100.0 * m / msum : 0.0);
            else fprintf(f, "measured %.4f ms", m);
        }
        fputc(')', f);
    }
    if (n > SLOW_SHOWN) fprintf(f, "; and %" PRId64 " more", n - SLOW_SHOWN);
    fputc('\n', f);
    free(key);
}

static void print_plan(FILE *f, as_eval_format fmt, const as_planrec_full *q, const char *label,
                       const as_eval_singles *s, int64_t *it)
{
    const int terms = q->mterm != NULL, mem = terms || q->mem, cap = mem && q->mem_cap, pred = q->pred != NULL;
    const int md = fmt == AS_EVAL_MARKDOWN;
    fprintf(f, "%stask %" PRId64 "%s%s%s, %s, run %" PRId64 "%s: %" PRId64 " ranks, costs %s%s%s", md ? "**" : "", q->task,
            q->split[0] ? " (" : "", q->split, q->split[0] ? ")" : "", q->alg, q->run, md ? "**" : "", q->K, label,
            q->device[0] ? " on " : "", q->device);
    if (q->mem_cap) fprintf(f, ", cap %.1f MiB per rank", (double)q->mem_cap / MiB);
    if (!q->feasible) fprintf(f, ", INFEASIBLE");
    fprintf(f, "%s\n", md ? "\n" : "");
    /* the header */
    if (md) {
        fprintf(f, "| rank | items | pieces |%s%s%s |%s cost (ms) |%s items |\n",
                terms ? " weights (MiB) | optimizer (MiB) | pipeline (MiB) |" : "", mem ? (terms ? " total (MiB)" : " memory (MiB)") : "",
                cap ? " | cap (%)" : "", pred ? " pred (ms) |" : "", pred ? " cost/pred |" : "");
        fprintf(f, "|---:|---:|---:|%s%s%s|%s---:|%s---|\n", terms ? "---:|---:|---:|" : "", mem ? "---:" : "",
                cap ? "|---:" : "", pred ? "---:|" : "", pred ? "---:|" : "");
    } else {
        fprintf(f, "  %4s %5s %6s", "rank", "items", "pieces");
        if (terms) fprintf(f, " %12s %13s %12s", "weights MiB", "optimizer MiB", "pipeline MiB");
        if (mem) fprintf(f, " %12s", terms ? "total MiB" : "memory MiB");
        if (cap) fprintf(f, " %6s", "cap %");
        if (pred) fprintf(f, " %9s", "pred ms");
        fprintf(f, " %9s", "cost ms");
        if (pred) fprintf(f, " %9s", "cost/pred");
        fprintf(f, "  items\n");
    }
    const char *by;
    const int64_t slow = as_eval_slowest_rank(q, label, &by);
    for (int64_t k = 0; k < q->K; k++) {
        const int64_t n = rank_items(q, k, it);
        double t[3], tot;
        rank_mem(q, k, t, &tot);
        if (md) fprintf(f, "| %" PRId64 "%s | %" PRId64 " | %" PRId64 " |", k, k == slow ? " (slowest)" : "", n, count_pieces(q, it, n));
        else fprintf(f, " %c%4" PRId64 " %5" PRId64 " %6" PRId64, k == slow ? '*' : ' ', k, n, count_pieces(q, it, n));
        if (terms) {
            cell_num(f, fmt, 12, "%.3f", t[0] / MiB);
            cell_num(f, fmt, 13, "%.3f", t[1] / MiB);
            cell_num(f, fmt, 12, "%.3f", t[2] / MiB);
        }
        if (mem) cell_num(f, fmt, 12, "%.3f", tot / MiB);
        if (cap) cell_num(f, fmt, 6, "%.1f%%", 100.0 * tot / (double)q->mem_cap);
        if (pred) cell_num(f, fmt, 9, "%.4f", q->pred[k]);
        cell_num(f, fmt, 9, "%.4f", q->cost[k]);
        /* the kernel's cost against the kernel's prediction: charged communication out */
        if (pred) cell_num(f, fmt, 9, "%.3f", q->pred[k] > 0 ? (q->cost[k] - (q->comm_ms ? q->comm_ms[k] : 0)) / q->pred[k] : NAN);
        fputs(md ? " " : "  ", f);
        for (int64_t j = 0; j < n && j < ITEMS_SHOWN; j++) {
            char lb[256];
            fputs(j ? ", " : "", f);
            if (md) as_eval_md_cell(f, item_label(lb, sizeof lb, q, it[j]));   /* a name may hold '|' */
            else fputs(item_label(lb, sizeof lb, q, it[j]), f);
        }
        if (n > ITEMS_SHOWN) fprintf(f, ", ... (%" PRId64 " in all)", n);
        if (!n) fputc('-', f);
        fprintf(f, "%s\n", md ? " |" : "");
    }
    if (md) fputc('\n', f);
    print_dp(f, fmt, q);
    print_slowest(f, fmt, q, label, s, it);
    fputc('\n', f);
}

void as_eval_print_ranks(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const char *label,
                         const as_eval_singles *singles)
{
    int64_t maxT = 1;
    for (int64_t j = 0; j < n; j++)
        if (p[j].T > maxT) maxT = p[j].T;
    int64_t *it = as_malloc((size_t)maxT * sizeof *it);
    if (fmt == AS_EVAL_CSV)
        fprintf(f, "run,task,alg,rank,items,pieces,weights_bytes,optimizer_bytes,pipeline_bytes,mem_bytes,mem_cap_bytes,"
                   "pred_ms,cost_kind,cost_ms,slowest,item_labels,item_pred_ms,item_single_ms\n");
    else if (fmt == AS_EVAL_TEXT)
        fprintf(f, "Ranks (costs %s; * the slowest rank; memory by TorchRec's terms where the plan carries them):\n\n", label);
    else fprintf(f, "**Ranks** (costs %s; memory by TorchRec's terms where the plan carries them)\n\n", label);
    for (int64_t j = 0; j < n; j++) {
        if (fmt == AS_EVAL_CSV) print_csv(f, &p[j], label, singles, it);
        else print_plan(f, fmt, &p[j], label, singles, it);
    }
    free(it);
}
