/* eval.c - plan evaluation: figures, summaries, tables and gnuplot plots; see eval.h.
 * Dimension letters: K shards, T tables of a plan. */
#include "eval.h"
#include "common.h"
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void as_eval_plan_free(as_eval_plan *p)
{
    free(p->tables);
    free(p->assign);
    free(p->cost);
    free(p->mem);
    memset(p, 0, sizeof *p);
}

/* a msgpack array of integers into a malloc'd int64 list */
static int get_ints(const msgpack_object *rec, const char *key, int64_t **out, int64_t *n)
{
    const msgpack_object *a = as_obj_get(rec, key);
    *out = NULL;
    *n = 0;
    if (!a || a->type != MSGPACK_OBJECT_ARRAY) return -1;
    int64_t m = a->via.array.size;
    int64_t *v = as_malloc((size_t)(m ? m : 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++) {
        const msgpack_object *o = &a->via.array.ptr[i];
        if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) v[i] = (int64_t)o->via.u64;
        else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) v[i] = o->via.i64;
        else { free(v); return -1; }
    }
    *out = v;
    *n = m;
    return 0;
}

int as_eval_plan_read(const msgpack_object *rec, as_eval_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->seed = -1;
    as_planrec pr;
    if (as_planrec_read(rec, &pr, err, errlen)) return -1;
    p->task = pr.task;
    p->K = pr.shards;
    p->T = pr.n;
    p->tables = pr.tables;
    p->assign = pr.assign;
    int unplaced = pr.unplaced > 0;
    if (!pr.has_task || pr.task < 0 || as_obj_str(rec, "alg", p->alg, sizeof p->alg)) {
        snprintf(err, errlen, "plan needs 'task' (an id >= 0) and 'alg'");
        goto bad;
    }
    as_obj_str(rec, "split", p->split, sizeof p->split);
    as_obj_i64(rec, "seed", &p->seed);
    const msgpack_object *fe = as_obj_get(rec, "feasible");
    if (fe && fe->type == MSGPACK_OBJECT_BOOLEAN) p->feasible = fe->via.boolean && !unplaced;
    else p->feasible = !unplaced;
    int64_t nm;
    int64_t *mem;
    if (!get_ints(rec, "mem_bytes", &mem, &nm)) {
        if (nm != p->K) { free(mem); snprintf(err, errlen, "plan of task %" PRId64 ": 'mem_bytes' must have one entry per shard", p->task); goto bad; }
        p->mem = as_malloc((size_t)p->K * sizeof *p->mem);
        for (int64_t k = 0; k < p->K; k++) p->mem[k] = mem[k] < 0 ? 0 : (uint64_t)mem[k];
        free(mem);
    }
    p->cost = as_malloc((size_t)p->K * sizeof *p->cost);
    for (int64_t k = 0; k < p->K; k++) p->cost[k] = NAN;
    const msgpack_object *c = as_obj_get(rec, "cost_ms");
    if (c && c->type != MSGPACK_OBJECT_NIL) {
        if (c->type != MSGPACK_OBJECT_ARRAY || (int64_t)c->via.array.size != p->K) {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_ms' must be a list with one entry per shard", p->task);
            goto bad;
        }
        for (int64_t k = 0; k < p->K; k++) {
            const msgpack_object *o = &c->via.array.ptr[k];
            switch (o->type) {
            case MSGPACK_OBJECT_FLOAT32: case MSGPACK_OBJECT_FLOAT64: p->cost[k] = o->via.f64; break;
            case MSGPACK_OBJECT_POSITIVE_INTEGER: p->cost[k] = (double)o->via.u64; break;
            case MSGPACK_OBJECT_NIL: continue;   /* not measured: stays NaN */
            default:
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_ms[%" PRId64 "] is not a number or nil", p->task, k);
                goto bad;
            }
            if (!isfinite(p->cost[k])) {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_ms[%" PRId64 "] is not finite (an unmeasured shard is nil)", p->task, k);
                goto bad;
            }
            if (p->cost[k] < 0) {
                snprintf(err, errlen, "plan of task %" PRId64 ": cost_ms[%" PRId64 "] is negative", p->task, k);
                goto bad;
            }
        }
        char kind[32] = "";
        as_obj_str(rec, "cost_kind", kind, sizeof kind);
        if (!strcmp(kind, "measured")) p->cost_kind = 1;
        else if (!strcmp(kind, "estimated")) p->cost_kind = 2;
        else {
            snprintf(err, errlen, "plan of task %" PRId64 ": 'cost_ms' without a cost_kind of \"measured\" or \"estimated\"", p->task);
            goto bad;
        }
        as_obj_str(rec, "cost_device", p->device, sizeof p->device);
    }
    return 0;
bad:
    as_eval_plan_free(p);
    return -1;
}

void as_eval_compute(as_eval_plan *p, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        as_eval_plan *q = &p[j];
        q->max = q->min = q->mean = q->balance = q->speedup = NAN;
        q->ok = q->feasible;
        double mx = 0, mn = INFINITY, s = 0;
        for (int64_t k = 0; k < q->K; k++) {
            if (isnan(q->cost[k])) { q->ok = 0; continue; }
            if (q->cost[k] > mx) mx = q->cost[k];
            if (q->cost[k] < mn) mn = q->cost[k];
            s += q->cost[k];
        }
        if (q->mem) {
            q->mem_max = 0;
            q->mem_min = UINT64_MAX;
            for (int64_t k = 0; k < q->K; k++) {
                if (q->mem[k] > q->mem_max) q->mem_max = q->mem[k];
                if (q->mem[k] < q->mem_min) q->mem_min = q->mem[k];
            }
        }
        int known = 1;
        for (int64_t k = 0; k < q->K; k++) if (isnan(q->cost[k])) known = 0;
        if (!known) continue;
        q->max = mx;
        q->min = mn;
        q->mean = s / (double)q->K;
        if (q->ok && mx > 0) q->balance = mn / mx;
    }
    for (int64_t j = 0; j < n; j++) {
        as_eval_plan *q = &p[j];
        if (!q->ok) continue;
        const as_eval_plan *r = NULL;
        for (int64_t i = 0; i < n && !r; i++)
            if (p[i].run == q->run && p[i].task == q->task && !strcmp(p[i].alg, "random")) r = &p[i];
        if (r && r->ok && q->max > 0) q->speedup = r->max / q->max;
    }
}

int64_t as_eval_meanstd(const double *v, int64_t n, double *mean, double *std)
{
    int64_t m = 0;
    double s = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(v[i])) { s += v[i]; m++; }
    if (!m) { *mean = *std = NAN; return 0; }
    *mean = s / (double)m;
    double ss = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(v[i])) ss += (v[i] - *mean) * (v[i] - *mean);
    *std = sqrt(ss / (double)m);
    return m;
}

/* statistics of one figure of the plans of algorithm alg (which: 0 balance, 1 speedup, 2 max) */
static int64_t stat(const as_eval_plan *p, int64_t n, const char *alg, int which, int over_runs, double *mean, double *std)
{
    double *v = as_malloc((size_t)(n ? n : 1) * sizeof *v);
    int64_t m = 0;
    if (!over_runs) {
        for (int64_t j = 0; j < n; j++) {
            if (strcmp(p[j].alg, alg)) continue;
            v[m++] = which == 0 ? p[j].balance : which == 1 ? p[j].speedup : (p[j].ok ? p[j].max : NAN);
        }
    } else {
        int64_t maxrun = -1;
        for (int64_t j = 0; j < n; j++) if (p[j].run > maxrun) maxrun = p[j].run;
        for (int64_t r = 0; r <= maxrun; r++) {
            double s = 0;
            int64_t c = 0;
            for (int64_t j = 0; j < n; j++) {
                if (p[j].run != r || strcmp(p[j].alg, alg)) continue;
                double x = which == 0 ? p[j].balance : which == 1 ? p[j].speedup : (p[j].ok ? p[j].max : NAN);
                if (isfinite(x)) { s += x; c++; }
            }
            if (c) v[m++] = s / (double)c;
        }
    }
    int64_t got = as_eval_meanstd(v, m, mean, std);
    free(v);
    return got;
}

void as_eval_summary(const as_eval_plan *p, int64_t n, int over_runs, as_eval_alg **out, int64_t *nout)
{
    as_eval_alg *a = as_calloc((size_t)(n ? n : 1), sizeof *a);
    int64_t na = 0;
    /* canonical order first, then the others by first appearance */
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < (pass ? 1 : AS_ALG_COUNT); c++) {
            for (int64_t j = 0; j < n; j++) {
                const char *name = p[j].alg;
                as_alg dummy;
                if (!pass && strcmp(name, as_alg_name((as_alg)c))) continue;
                if (pass && !as_alg_parse(name, &dummy)) continue;
                int64_t i;
                for (i = 0; i < na; i++) if (!strcmp(a[i].alg, name)) break;
                if (i == na) snprintf(a[na++].alg, sizeof a->alg, "%s", name);
            }
        }
    }
    for (int64_t i = 0; i < na; i++) {
        for (int64_t j = 0; j < n; j++) {
            if (strcmp(p[j].alg, a[i].alg)) continue;
            a[i].plans++;
            if (!p[j].feasible) a[i].infeasible++;
            else if (!p[j].ok) a[i].unmeasured++;
        }
        double dummy;
        a[i].nbal = stat(p, n, a[i].alg, 0, over_runs, &a[i].bal_mean, &a[i].bal_std);
        a[i].nspd = stat(p, n, a[i].alg, 1, over_runs, &a[i].spd_mean, &a[i].spd_std);
        stat(p, n, a[i].alg, 2, over_runs, &a[i].max_mean, &dummy);
    }
    *out = a;
    *nout = na;
}

/* ---- tables ---------------------------------------------------------------------------- */

static void num(FILE *f, as_eval_format fmt, int width, const char *cfmt, double v)
{
    char buf[64];
    if (isfinite(v)) snprintf(buf, sizeof buf, cfmt, v);
    else snprintf(buf, sizeof buf, fmt == AS_EVAL_CSV ? "" : "n/a");
    if (fmt == AS_EVAL_TEXT) fprintf(f, " %*s", width, buf);
    else if (fmt == AS_EVAL_MARKDOWN) fprintf(f, " %s |", buf);
    else fprintf(f, ",%s", buf);
}

static void pm(FILE *f, as_eval_format fmt, int width, const char *cfmt, double m, double s, double scale)
{
    char buf[96], a[40], b[40];
    if (!isfinite(m)) snprintf(buf, sizeof buf, "n/a");
    else {
        snprintf(a, sizeof a, cfmt, m * scale);
        snprintf(b, sizeof b, cfmt, s * scale);
        snprintf(buf, sizeof buf, "%s ± %s", a, b);
    }
    if (fmt == AS_EVAL_TEXT) fprintf(f, " %*s", width + 1, buf);   /* ± is two bytes, one column */
    else fprintf(f, " %s |", buf);
}

void as_eval_print_plans(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, const char *label)
{
    const double MiB = 1024.0 * 1024.0;
    if (fmt == AS_EVAL_CSV) {
        fprintf(f, "run,task,split,alg,shards,tables,cost_kind,max_ms,min_ms,mean_ms,balance,speedup,mem_max_bytes,mem_min_bytes,feasible\n");
        for (int64_t j = 0; j < n; j++) {
            const as_eval_plan *q = &p[j];
            fprintf(f, "%" PRId64 ",%" PRId64 ",%s,%s,%" PRId64 ",%" PRId64 ",%s", q->run, q->task, q->split, q->alg, q->K, q->T, label);
            num(f, fmt, 0, "%.9g", q->max);
            num(f, fmt, 0, "%.9g", q->min);
            num(f, fmt, 0, "%.9g", q->mean);
            num(f, fmt, 0, "%.9g", q->balance);
            num(f, fmt, 0, "%.9g", q->speedup);
            if (q->mem) fprintf(f, ",%" PRIu64 ",%" PRIu64, q->mem_max, q->mem_min);
            else fprintf(f, ",,");
            fprintf(f, ",%s\n", q->feasible ? "true" : "false");
        }
        return;
    }
    if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Plans (costs %s, ms):\n", label);
        fprintf(f, "%4s %5s %-20s %5s %10s %10s %10s %8s %8s %12s %12s  %s\n", "run", "task", "alg", "K", "max", "min",
                "mean", "balance", "speedup", "mem max MiB", "mem min MiB", "feasible");
    } else {
        fprintf(f, "**Plans** (costs %s, ms)\n\n", label);
        fprintf(f, "| run | task | alg | K | max | min | mean | balance (%%) | speedup | mem max (MiB) | mem min (MiB) | feasible |\n");
        fprintf(f, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    }
    for (int64_t j = 0; j < n; j++) {
        const as_eval_plan *q = &p[j];
        if (fmt == AS_EVAL_TEXT) fprintf(f, "%4" PRId64 " %5" PRId64 " %-20s %5" PRId64, q->run, q->task, q->alg, q->K);
        else fprintf(f, "| %" PRId64 " | %" PRId64 " | %s | %" PRId64 " |", q->run, q->task, q->alg, q->K);
        num(f, fmt, 10, "%.4f", q->max);
        num(f, fmt, 10, "%.4f", q->min);
        num(f, fmt, 10, "%.4f", q->mean);
        num(f, fmt, 7, "%.1f%%", q->balance * 100);
        num(f, fmt, 8, "%.3f", q->speedup);
        num(f, fmt, 12, "%.3f", q->mem ? q->mem_max / MiB : NAN);
        num(f, fmt, 12, "%.3f", q->mem ? q->mem_min / MiB : NAN);
        if (fmt == AS_EVAL_TEXT) fprintf(f, "  %s\n", q->feasible ? "yes" : "NO");
        else fprintf(f, " %s |\n", q->feasible ? "yes" : "no");
    }
    fputc('\n', f);
}

void as_eval_print_shards(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, const char *label)
{
    const double MiB = 1024.0 * 1024.0;
    if (fmt == AS_EVAL_CSV) fprintf(f, "run,task,alg,shard,tables,cost_kind,cost_ms,mem_bytes\n");
    else if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Shards (costs %s):\n", label);
        fprintf(f, "%4s %5s %-20s %5s %6s %12s %12s\n", "run", "task", "alg", "shard", "tables", "cost ms", "mem MiB");
    } else {
        fprintf(f, "**Shards** (costs %s)\n\n| run | task | alg | shard | tables | cost (ms) | mem (MiB) |\n", label);
        fprintf(f, "|---:|---:|---|---:|---:|---:|---:|\n");
    }
    for (int64_t j = 0; j < n; j++) {
        const as_eval_plan *q = &p[j];
        for (int64_t k = 0; k < q->K; k++) {
            int64_t c = 0;
            for (int64_t i = 0; i < q->T; i++) c += q->assign[i] == k;
            if (fmt == AS_EVAL_CSV) {
                fprintf(f, "%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%s", q->run, q->task, q->alg, k, c, label);
                num(f, fmt, 0, "%.9g", q->cost[k]);
                if (q->mem) fprintf(f, ",%" PRIu64 "\n", q->mem[k]);
                else fprintf(f, ",\n");
                continue;
            }
            if (fmt == AS_EVAL_TEXT) fprintf(f, "%4" PRId64 " %5" PRId64 " %-20s %5" PRId64 " %6" PRId64, q->run, q->task, q->alg, k, c);
            else fprintf(f, "| %" PRId64 " | %" PRId64 " | %s | %" PRId64 " | %" PRId64 " |", q->run, q->task, q->alg, k, c);
            num(f, fmt, 12, "%.4f", q->cost[k]);
            num(f, fmt, 12, "%.3f", q->mem ? q->mem[k] / MiB : NAN);
            fputc('\n', f);
        }
    }
    fputc('\n', f);
}

void as_eval_print_summary(FILE *f, as_eval_format fmt, const as_eval_alg *a, int64_t n, const char *label,
                           int over_runs)
{
    const char *over = over_runs ? "runs" : "plans";
    if (fmt == AS_EVAL_CSV) {
        fprintf(f, "alg,cost_kind,plans,infeasible,unmeasured,over,n_balance,balance_mean,balance_std,n_speedup,speedup_mean,speedup_std,max_ms_mean\n");
        for (int64_t i = 0; i < n; i++) {
            fprintf(f, "%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%" PRId64, a[i].alg, label, a[i].plans, a[i].infeasible,
                    a[i].unmeasured, over, a[i].nbal);
            num(f, fmt, 0, "%.9g", a[i].bal_mean);
            num(f, fmt, 0, "%.9g", a[i].bal_std);
            fprintf(f, ",%" PRId64, a[i].nspd);
            num(f, fmt, 0, "%.9g", a[i].spd_mean);
            num(f, fmt, 0, "%.9g", a[i].spd_std);
            num(f, fmt, 0, "%.9g", a[i].max_mean);
            fputc('\n', f);
        }
        return;
    }
    if (fmt == AS_EVAL_TEXT) {
        fprintf(f, "Summary per algorithm (costs %s; mean ± std over %s):\n", label, over);
        fprintf(f, "%-20s %6s %10s %16s %18s %12s\n", "alg", "plans", "infeasible", "balance %", "speedup", "max ms");
    } else {
        fprintf(f, "**Summary per algorithm** (costs %s; mean ± std over %s)\n\n", label, over);
        fprintf(f, "| alg | plans | infeasible | balance (%%) | speedup | max (ms) |\n|---|---:|---:|---:|---:|---:|\n");
    }
    for (int64_t i = 0; i < n; i++) {
        if (fmt == AS_EVAL_TEXT) fprintf(f, "%-20s %6" PRId64 " %10" PRId64, a[i].alg, a[i].plans, a[i].infeasible);
        else fprintf(f, "| %s | %" PRId64 " | %" PRId64 " |", a[i].alg, a[i].plans, a[i].infeasible);
        pm(f, fmt, 16, "%.1f", a[i].bal_mean, a[i].bal_std, 100);
        pm(f, fmt, 18, "%.3f", a[i].spd_mean, a[i].spd_std, 1);
        num(f, fmt, 12, "%.4f", a[i].max_mean);
        fputc('\n', f);
    }
    fputc('\n', f);
}

/* ---- training curves -------------------------------------------------------------------- */

/* a number field: 0 a number (NaN for nil), 1 absent, -1 something else */
static int get_num(const msgpack_object *rec, const char *key, double *v)
{
    const msgpack_object *o = as_obj_get(rec, key);
    *v = NAN;
    if (!o) return 1;
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    return as_obj_f64(rec, key, v) ? -1 : 0;
}

int as_eval_train_read(const msgpack_object *rec, as_eval_train *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->update = -1;
    if (as_obj_i64(rec, "episode", &t->episode) || t->episode < 0 || as_obj_i64(rec, "evals", &t->evals) || t->evals < 0) {
        snprintf(err, errlen, "train record needs integers 'episode' and 'evals' >= 0");
        return -1;
    }
    if (get_num(rec, "wall_s", &t->wall_s) || !isfinite(t->wall_s) || t->wall_s < 0) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": needs a number 'wall_s' >= 0", t->episode);
        return -1;
    }
    if (get_num(rec, "reward", &t->reward) || get_num(rec, "pred_balance", &t->pred_balance)) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": needs numbers 'reward' and 'pred_balance'", t->episode);
        return -1;
    }
    static const char *const opt[3] = { "meas_balance", "eval_pred_balance", "eval_meas_balance" };
    double *dst[3] = { &t->meas_balance, &t->eval_pred_balance, &t->eval_meas_balance };
    for (int i = 0; i < 3; i++)
        if (get_num(rec, opt[i], dst[i]) < 0) {
            snprintf(err, errlen, "train record of episode %" PRId64 ": '%s' is not a number", t->episode, opt[i]);
            return -1;
        }
    if (as_obj_get(rec, "update") && (as_obj_i64(rec, "update", &t->update) || t->update < 0)) {
        snprintf(err, errlen, "train record of episode %" PRId64 ": 'update' is not an integer >= 0", t->episode);
        return -1;
    }
    as_obj_str(rec, "reward_source", t->reward_source, sizeof t->reward_source);
    return 0;
}

double as_eval_train_balance(const as_eval_train *t)
{
    return isnan(t->pred_balance) ? t->reward : t->pred_balance;
}

static int has_eval(const as_eval_train *t)
{
    return isfinite(t->eval_pred_balance) || isfinite(t->eval_meas_balance);
}

int64_t as_eval_curve_rows(const as_eval_train *t, int64_t n, int64_t max, int64_t *rows)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) if (has_eval(&t[i])) rows[m++] = i;
    if (m || n < 1) return m;
    if (max < 1) max = 1;
    int64_t step = (n + max - 1) / max;
    for (int64_t i = n - 1; i >= 0; i -= step) rows[m++] = i;
    for (int64_t a = 0, b = m - 1; a < b; a++, b--) { int64_t x = rows[a]; rows[a] = rows[b]; rows[b] = x; }
    return m;
}

void as_eval_print_curve(FILE *f, as_eval_format fmt, const as_eval_train *t, int64_t n)
{
    int64_t *rows = as_malloc((size_t)(n ? n : 1) * sizeof *rows);
    int64_t m = as_eval_curve_rows(t, n, 20, rows);
    if (fmt == AS_EVAL_CSV) fprintf(f, "episode,wall_s,evals,reward,pred_balance,eval_pred_balance,eval_meas_balance\n");
    else {
        char which[64];
        int evals = m && has_eval(&t[rows[0]]);
        int64_t step = (n + 19) / 20;
        if (evals) snprintf(which, sizeof which, "the records with a greedy evaluation");
        else if (step > 1) snprintf(which, sizeof which, "one record in %" PRId64 ", ending with the last", step);
        else snprintf(which, sizeof which, "every record");
        const char *src = n && t[0].reward_source[0] ? t[0].reward_source : "?";
        if (fmt == AS_EVAL_TEXT) {
            fprintf(f, "Training curve (%" PRId64 " train records, reward %s; balance = min/max shard cost; %s):\n", n, src, which);
            fprintf(f, "%8s %10s %7s %9s %9s %9s %9s\n", "episode", "wall s", "evals", "reward", "pred bal", "eval pred", "eval meas");
        } else {
            fprintf(f, "**Training curve** (%" PRId64 " train records, reward %s; balance = min/max shard cost; %s)\n\n", n, src, which);
            fprintf(f, "| episode | wall (s) | evals | reward | pred balance | eval pred balance | eval meas balance |\n");
            fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|\n");
        }
    }
    for (int64_t j = 0; j < m; j++) {
        const as_eval_train *r = &t[rows[j]];
        const char *cf = fmt == AS_EVAL_CSV ? "%.9g" : "%.4f";
        if (fmt == AS_EVAL_CSV) fprintf(f, "%" PRId64, r->episode);
        else if (fmt == AS_EVAL_TEXT) fprintf(f, "%8" PRId64, r->episode);
        else fprintf(f, "| %" PRId64 " |", r->episode);
        num(f, fmt, 10, fmt == AS_EVAL_CSV ? "%.9g" : "%.3f", r->wall_s);
        if (fmt == AS_EVAL_CSV) fprintf(f, ",%" PRId64, r->evals);
        else if (fmt == AS_EVAL_TEXT) fprintf(f, " %7" PRId64, r->evals);
        else fprintf(f, " %" PRId64 " |", r->evals);
        num(f, fmt, 9, cf, r->reward);
        num(f, fmt, 9, cf, r->pred_balance);
        num(f, fmt, 9, cf, r->eval_pred_balance);
        num(f, fmt, 9, cf, r->eval_meas_balance);
        fputc('\n', f);
    }
    if (fmt != AS_EVAL_CSV) fputc('\n', f);
    free(rows);
}

/* ---- plots ------------------------------------------------------------------------------ */

static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* the png terminal (pngcairo when this gnuplot has it) and the output file */
static void gp_terminal(FILE *f, const char *png, int w, int h)
{
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size %d,%d noenhanced } "
               "else { set terminal png size %d,%d noenhanced }\n", w, h, w, h);
    fprintf(f, "set output ");
    gp_str(f, png);
    fputc('\n', f);
}

/* run gnuplot on a script, its stdout to /dev/null; 0 ok, -1 with err (a failing script is
 * named in err as "script kept: PATH", and the caller keeps it) */
static int gp_run(const char *script, char *err, size_t errlen)
{
    pid_t pid = fork();
    if (pid < 0) { snprintf(err, errlen, "fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) { dup2(devnull, 1); close(devnull); }
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) { snprintf(err, errlen, "gnuplot not found (install gnuplot-nox)"); return -1; }
    if (!WIFEXITED(st) || WEXITSTATUS(st)) { snprintf(err, errlen, "gnuplot failed (script kept: %s)", script); return -1; }
    return 0;
}

int as_eval_plot(const char *png, const as_eval_plan *p, int64_t n, const as_eval_alg *a, int64_t na,
                 int64_t task, const char *label, const double *pred, const double *meas, int64_t nscatter,
                 char *err, size_t errlen)
{
    char dir[] = "/tmp/as-eval-plot-XXXXXX";
    if (!mkdtemp(dir)) { snprintf(err, errlen, "temporary directory: %s", strerror(errno)); return -1; }
    char path[4][600];
    const char *names[4] = { "summary.dat", "bars.dat", "scatter.dat", "plot.gp" };
    for (int i = 0; i < 4; i++) snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    int rc = -1;
    FILE *f;
    /* balance and speedup per algorithm */
    if (!(f = fopen(path[0], "w"))) { snprintf(err, errlen, "%s: %s", path[0], strerror(errno)); goto out; }
    for (int64_t i = 0; i < na; i++)
        fprintf(f, "%" PRId64 " \"%s\" %.9g %.9g %.9g %.9g\n", i, a[i].alg, isfinite(a[i].bal_mean) ? 100 * a[i].bal_mean : 0,
                isfinite(a[i].bal_std) ? 100 * a[i].bal_std : 0, isfinite(a[i].spd_mean) ? a[i].spd_mean : 0,
                isfinite(a[i].spd_std) ? a[i].spd_std : 0);
    fclose(f);
    /* per-shard costs of each algorithm's plan of the task (first run that has it) */
    int64_t run = -1, K = 0, nb = 0;
    for (int64_t j = 0; j < n; j++)
        if (p[j].task == task && (run < 0 || p[j].run < run)) run = p[j].run;
    const as_eval_plan **bars = as_malloc((size_t)(na ? na : 1) * sizeof *bars);
    for (int64_t i = 0; i < na; i++) {
        for (int64_t j = 0; j < n; j++)
            if (p[j].run == run && p[j].task == task && !strcmp(p[j].alg, a[i].alg)) {
                bars[nb++] = &p[j];
                if (p[j].K > K) K = p[j].K;
                break;
            }
    }
    if (!(f = fopen(path[1], "w"))) { free(bars); snprintf(err, errlen, "%s: %s", path[1], strerror(errno)); goto out; }
    for (int64_t k = 0; k < K; k++) {
        fprintf(f, "%" PRId64, k);
        for (int64_t i = 0; i < nb; i++) {
            double c = k < bars[i]->K ? bars[i]->cost[k] : NAN;
            if (isfinite(c)) fprintf(f, " %.9g", c);
            else fprintf(f, " NaN");
        }
        fputc('\n', f);
    }
    fclose(f);
    if (nscatter > 0) {
        if (!(f = fopen(path[2], "w"))) { free(bars); snprintf(err, errlen, "%s: %s", path[2], strerror(errno)); goto out; }
        for (int64_t i = 0; i < nscatter; i++) fprintf(f, "%.9g %.9g\n", meas[i], pred[i]);
        fclose(f);
    }
    if (!(f = fopen(path[3], "w"))) { free(bars); snprintf(err, errlen, "%s: %s", path[3], strerror(errno)); goto out; }
    int panels = 2 + (nb > 0) + (nscatter > 0);
    gp_terminal(f, png, 1200, panels > 2 ? 900 : 450);
    fprintf(f, "set datafile missing \"NaN\"\nset multiplot layout %d,2\nset grid ytics\nset style fill solid 0.6 border -1\n"
               "set boxwidth 0.6\nset xtics rotate by -30\nset key off\nset offsets 0.5,0.5,0,0\n",
            panels > 2 ? 2 : 1);
    fprintf(f, "set title \"Degree of balance (%s costs), mean ± std\"\nset ylabel \"balance (%%)\"\nset yrange [0:110]\n", label);
    fprintf(f, "plot \"%s\" using 1:3:xtic(2) with boxes lc rgb \"#4c72b0\", \"\" using 1:3:4 with yerrorbars lc rgb \"black\" pt 0\n", path[0]);
    fprintf(f, "set title \"Speedup over random (%s costs), mean ± std\"\nset ylabel \"speedup (x)\"\nset yrange [0:*]\n", label);
    fprintf(f, "plot \"%s\" using 1:5:xtic(2) with boxes lc rgb \"#55a868\", \"\" using 1:5:6 with yerrorbars lc rgb \"black\" pt 0\n", path[0]);
    if (nb > 0) {
        fprintf(f, "set title \"Task %" PRId64 ": cost per shard (%s)\"\nset ylabel \"ms\"\nset xlabel \"shard\"\nset xtics norotate\n"
                   "set style data histogram\nset style histogram clustered gap 1\nset boxwidth 0.9 relative\nset key inside top right\n"
                   "set offsets 0,0,0,0\nset yrange [0:*]\n", task, label);
        fprintf(f, "plot ");
        for (int64_t i = 0; i < nb; i++) {
            fprintf(f, "%s\"%s\" using %" PRId64 ":xtic(1) title ", i ? ", " : "", path[1], i + 2);
            gp_str(f, bars[i]->alg);
        }
        fprintf(f, "\nunset style data\nset key off\nset xlabel \"\"\n");
    }
    free(bars);
    if (nscatter > 0) {
        fprintf(f, "set title \"Cost model: predicted vs measured shard cost\"\nset xlabel \"measured (ms)\"\nset ylabel \"predicted (ms)\"\n"
                   "set xtics norotate\nset autoscale\nset offsets 0,0,0,0\nset size ratio -1\n");
        fprintf(f, "plot \"%s\" using 1:2 with points pt 7 ps 0.5 lc rgb \"#c44e52\", x with lines lc rgb \"gray\"\nset size noratio\n", path[2]);
    }
    fprintf(f, "unset multiplot\n");
    if (fclose(f)) { snprintf(err, errlen, "%s: %s", path[3], strerror(errno)); goto out; }
    rc = gp_run(path[3], err, errlen);
out:
    if (rc == 0 || !strstr(err, "script kept")) {
        for (int i = 0; i < 4; i++) unlink(path[i]);
        rmdir(dir);
    }
    return rc;
}

int as_eval_plot_curve(const char *png, const as_eval_train *t, int64_t n, char *err, size_t errlen)
{
    char dir[] = "/tmp/as-eval-curve-XXXXXX";
    if (!mkdtemp(dir)) { snprintf(err, errlen, "temporary directory: %s", strerror(errno)); return -1; }
    enum { S_TRAIN, S_MEAS, S_EVP, S_EVM, NS };
    static const char *const names[NS + 1] = { "train.dat", "meas.dat", "evalpred.dat", "evalmeas.dat", "curve.gp" };
    char path[NS + 1][600];
    for (int i = 0; i <= NS; i++) snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    int rc = -1, fallback = 0;
    int64_t npts[NS] = { 0 };
    FILE *f;
    /* one file per series, finite points only: gnuplot joins the lines over the gaps */
    for (int s = 0; s < NS; s++) {
        if (!(f = fopen(path[s], "w"))) { snprintf(err, errlen, "%s: %s", path[s], strerror(errno)); goto out; }
        for (int64_t i = 0; i < n; i++) {
            double y = s == S_TRAIN ? as_eval_train_balance(&t[i]) : s == S_MEAS ? t[i].meas_balance
                     : s == S_EVP ? t[i].eval_pred_balance : t[i].eval_meas_balance;
            if (!isfinite(y)) continue;
            if (s == S_TRAIN && isnan(t[i].pred_balance)) fallback = 1;
            fprintf(f, "%" PRId64 " %.9g %.9g\n", t[i].episode, t[i].wall_s, y);
            npts[s]++;
        }
        if (fclose(f)) { snprintf(err, errlen, "%s: %s", path[s], strerror(errno)); goto out; }
    }
    if (!(f = fopen(path[NS], "w"))) { snprintf(err, errlen, "%s: %s", path[NS], strerror(errno)); goto out; }
    gp_terminal(f, png, 1100, 900);
    const char *src = n && t[0].reward_source[0] ? t[0].reward_source : "?";
    static const char *const style[NS] = {
        "with linespoints pt 7 ps 0.4 lc rgb \"#4c72b0\"", "with linespoints pt 7 ps 0.4 lc rgb \"#dd8452\"",
        "with linespoints pt 5 ps 0.9 lw 2 lc rgb \"#55a868\"", "with linespoints pt 9 ps 1.1 lw 2 lc rgb \"#c44e52\"",
    };
    const char *title[NS] = {
        fallback ? "training, predicted (or reward)" : "training, predicted",
        "training, measured", "greedy evaluation, predicted", "greedy evaluation, measured",
    };
    int64_t total = 0;
    for (int s = 0; s < NS; s++) total += npts[s];
    fprintf(f, "set multiplot layout 2,1\nset grid\nset key below maxcols 2\nset offsets graph 0.02, graph 0.02, 0, 0\nset yrange [*<0:1.05]\n"
               "set ylabel \"balance (min/max shard cost)\"\n");
    if (!total) fprintf(f, "set label 1 \"no finite balance in the train records\" at graph 0.5,0.5 center\n");
    for (int panel = 0; panel < 2; panel++) {
        if (!panel) fprintf(f, "set title \"Training curve (reward: %s): balance vs episodes\"\nset xlabel \"episodes\"\n", src);
        else fprintf(f, "set title \"Training curve (reward: %s): balance vs training time\"\nset xlabel \"wall time (s)\"\n", src);
        if (!total) { fprintf(f, "plot [0:1] NaN notitle\n"); continue; }
        fprintf(f, "plot ");
        int first = 1;
        for (int s = 0; s < NS; s++) {
            if (!npts[s]) continue;
            fprintf(f, "%s\"%s\" using %d:3 %s title ", first ? "" : ", ", path[s], panel ? 2 : 1, style[s]);
            gp_str(f, title[s]);
            first = 0;
        }
        fputc('\n', f);
    }
    fprintf(f, "unset multiplot\n");
    if (fclose(f)) { snprintf(err, errlen, "%s: %s", path[NS], strerror(errno)); goto out; }
    rc = gp_run(path[NS], err, errlen);
out:
    if (rc == 0 || !strstr(err, "script kept")) {
        for (int i = 0; i <= NS; i++) unlink(path[i]);
        rmdir(dir);
    }
    return rc;
}
