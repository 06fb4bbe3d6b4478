/* evalrange.c - how far a choice holds; see evalrange.h */
#include "evalrange.h"
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KNOB_BW, KNOB_A2A, KNOB_LAT, NKNOB };
static const char *const knob_name[NKNOB] = { "bw", "a2a-bw", "lat" };
static const char *const knob_words[NKNOB] = { "every collective's bandwidth", "the all-to-all's bandwidth", "every call's latency" };

#define GRID_LO (-64)          /* 2^(-64/16) = 1/16 */
#define GRID_HI 64             /* 16 */
#define GRID_STEP 16.0         /* points an octave */
#define PLAUSIBLE 16           /* grid steps of the plausible range each side: 0.5x to 2x */
#define MAX_SEG 64

/* one task's candidates: their plans, each rank's kernel, and each rank's load (comm.h) for
   hosts of `local` ranks (the charged model's: its scaled copies share it) */
typedef struct {
    const as_planrec_full **q;
    double **kern;
    as_comm_load **load;
    int64_t local;
    int64_t P;
    int64_t chosen, versus;    /* indices, -1: none */
} task_view;

static as_comm_model scaled(const as_comm_model *m, int knob, double x)
{
    return as_comm_scaled(m, m->bw * (knob == KNOB_BW ? x : 1), m->a2a_bw * (knob == KNOB_A2A ? x : 1),
                          m->lat * (knob == KNOB_LAT ? x : 1));
}

/* plan j's slowest rank under m */
static double cost_of(const task_view *t, int64_t j, const as_comm_model *m)
{
    const as_planrec_full *q = t->q[j];
    double mx = -INFINITY;
    const int own = as_comm_local(m) != t->local;   /* another model's hosts: its own loads */
    as_comm_load *l = own ? as_malloc((size_t)q->K * sizeof *l) : t->load[j];
    if (own) as_eval_comm_loads(q, as_comm_local(m), l);
    for (int64_t k = 0; k < q->K; k++) {
        const double c = as_comm_plan_shard_ms(m, q->K, &l[k], NULL);
        if (t->kern[j][k] + c > mx) mx = t->kern[j][k] + c;
    }
    if (own) free(l);
    return mx;
}

/* the winner under m (ties: the chosen, then the lower index); its cost into *best (NULL: not
   wanted) */
static int64_t winner(const task_view *t, const as_comm_model *m, double *costs, double *best)
{
    int64_t w = 0;
    for (int64_t j = 0; j < t->P; j++) {
        costs[j] = cost_of(t, j, m);
        if (costs[j] < costs[w]) w = j;
    }
    if (t->chosen >= 0 && costs[t->chosen] <= costs[w]) w = t->chosen;
    if (best) *best = costs[w];
    return w;
}

static double gx(int i)
{
    return exp2((double)i / GRID_STEP);
}

typedef struct {
    double x0, x1;
    int64_t who;
} segment;

/* the winners along knob: segments[0..*ns) over [1/16, 16] */
static int64_t segments(const task_view *t, const as_comm_model *m, int knob, segment *seg, double *costs)
{
    int64_t ns = 0;
    as_comm_model s = scaled(m, knob, gx(GRID_LO));
    int64_t prev = winner(t, &s, costs, NULL);
    seg[ns++] = (segment){ gx(GRID_LO), gx(GRID_HI), prev };
    for (int i = GRID_LO + 1; i <= GRID_HI; i++) {
        s = scaled(m, knob, gx(i));
        const int64_t w = winner(t, &s, costs, NULL);
        if (w == prev) continue;
        double lo = log2(gx(i - 1)), hi = log2(gx(i));   /* prev wins at lo, not at hi */
        for (int it = 0; it < 24; it++) {
            const double mid = (lo + hi) / 2;
            s = scaled(m, knob, exp2(mid));
            if (winner(t, &s, costs, NULL) == prev) lo = mid;
            else hi = mid;
        }
        seg[ns - 1].x1 = exp2(hi);
        if (ns == MAX_SEG) break;
        seg[ns++] = (segment){ exp2(hi), gx(GRID_HI), w };
        prev = w;
    }
    return ns;
}

/* the x along knob where the chosen and the reference cost the same: up to max of them into
   cross[], each's sign (+1: the chosen is the faster above it) into above[] */
static int crossings(const task_view *t, const as_comm_model *m, int knob, double *cross, int *above, int max)
{
    int nc = 0;
    double prev = NAN;
    for (int i = GRID_LO; i <= GRID_HI && nc < max; i++) {
        as_comm_model s = scaled(m, knob, gx(i));
        const double d = cost_of(t, t->chosen, &s) - cost_of(t, t->versus, &s);
        if (i > GRID_LO && d != 0 && prev != 0 && (d < 0) != (prev < 0)) {
            double lo = log2(gx(i - 1)), hi = log2(gx(i));
            for (int it = 0; it < 24; it++) {
                const double mid = (lo + hi) / 2;
                s = scaled(m, knob, exp2(mid));
                const double dm = cost_of(t, t->chosen, &s) - cost_of(t, t->versus, &s);
                if ((dm < 0) == (prev < 0)) lo = mid;
                else hi = mid;
            }
            cross[nc] = exp2((lo + hi) / 2);
            above[nc++] = d < 0 ? 1 : -1;
        }
        if (d != 0) prev = d;
    }
    return nc;
}

typedef struct {
    double *worst;          /* [P] each candidate's largest cost over the best's */
    int64_t robust;
    int holds;              /* the chosen is the best (within tie) everywhere */
    int64_t npoints, skipped;
    char skipped_names[256];
} worst_case;

static void worst_point(const task_view *t, const as_comm_model *m, double tie, double *costs, worst_case *w)
{
    double best;
    winner(t, m, costs, &best);
    for (int64_t j = 0; j < t->P; j++) {
        const double r = best > 0 ? costs[j] / best : 1;
        if (r > w->worst[j]) w->worst[j] = r;
    }
    if (best > 0 ? costs[t->chosen] > best * (1 + tie) : costs[t->chosen] > best) w->holds = 0;
    w->npoints++;
}

static void worst_cases(const task_view *t, const as_comm_model *m, const as_eval_range_cfg *c, double *costs, worst_case *w)
{
    w->worst = as_malloc((size_t)t->P * sizeof *w->worst);
    for (int64_t j = 0; j < t->P; j++) w->worst[j] = 0;
    w->holds = 1;
    w->npoints = w->skipped = 0;
    w->skipped_names[0] = 0;
    for (int knob = 0; knob < NKNOB; knob++)
        for (int i = -PLAUSIBLE; i <= PLAUSIBLE; i++) {
            if (knob && !i) continue;   /* 1x once */
            as_comm_model s = scaled(m, knob, gx(i));
            worst_point(t, &s, c->tie, costs, w);
        }
    char e[512];
    for (int64_t x = 0; x < c->nextra; x++) {
        if (as_comm_model_check(&c->extra[x], t->q[0]->K, e, sizeof e)) {
            const size_t u = strlen(w->skipped_names);
            snprintf(w->skipped_names + u, sizeof w->skipped_names - u, "%s%.60s", u ? ", " : "", c->extra[x].name);
            w->skipped++;
            continue;
        }
        worst_point(t, &c->extra[x], c->tie, costs, w);
    }
    int64_t r = t->chosen;
    for (int64_t j = 0; j < t->P; j++)
        if (w->worst[j] < w->worst[r]) r = j;
    w->robust = r;
}

/* the all-to-all's bandwidth at 1x: its value into *v and unit into unit ("GB/s busbw", ...);
   0 when the model has no one figure of it */
static int a2a_base(const as_comm_model *m, int64_t K, double *v, char *unit, size_t len)
{
    const double f = m->bw * m->a2a_bw;
    if (!m->ab) { *v = m->gbps; snprintf(unit, len, "GiB/s"); return 1; }
    if (m->kind == AS_COMM_AB || (m->kind == AS_COMM_HOSTS && K <= m->local)) {
        *v = m->beta_gbs[AS_COLL_A2A] * f;
        snprintf(unit, len, "GB/s busbw");
        return 1;
    }
    if (m->kind == AS_COMM_HOSTS) {
        *v = m->xbeta_gbs[AS_COLL_A2A] * f;
        snprintf(unit, len, "GB/s a GPU across hosts");
        return 1;
    }
    if (m->kind == AS_COMM_NCCL && m->tab[AS_COLL_A2A] && K > 1) {
        const as_nccl_table *a = m->tab[AS_COLL_A2A];
        const double S = a->size[a->n - 1];
        *v = S / (a->us[a->n - 1] * 1e3) * (double)(K - 1) / (double)K * f;
        snprintf(unit, len, "GB/s busbw at %.3g MB", S / 1e6);
        return 1;
    }
    if (m->kind == AS_COMM_TORCHREC) {
        *v = (m->local > 0 && K > m->local ? 12.5 : 600.0) * f;
        snprintf(unit, len, "GiB/s");
        return 1;
    }
    return 0;
}

/* x along a bandwidth knob in words: "1.88x (40.8 GB/s)" */
static void xw(FILE *f, double x, int knob, const double *base)
{
    fprintf(f, "%.3gx", x);
    if (base && knob != KNOB_LAT) fprintf(f, " (%.3g)", x * *base);
}

/* the candidates of the task of plan a (its run and task) among p[0..n) into t, marking them
   in done[]; their count */
static int64_t view_of(const as_planrec_full *p, int64_t n, int64_t a, const as_eval_range_cfg *c, int64_t local, task_view *t,
                       unsigned char *done)
{
    t->q = as_malloc((size_t)n * sizeof *t->q);
    t->kern = as_malloc((size_t)n * sizeof *t->kern);
    t->load = as_malloc((size_t)n * sizeof *t->load);
    t->local = local;
    t->P = 0;
    t->chosen = t->versus = -1;
    for (int64_t j = a; j < n; j++) {
        const as_planrec_full *q = &p[j];
        if (done[j] || q->run != p[a].run || q->task != p[a].task) continue;
        done[j] = 1;
        int ok = q->feasible && q->K > 0 && (q->comm_in || q->comm_ar);
        for (int64_t k = 0; ok && k < q->K; k++) ok = isfinite(q->cost[k]);
        int listed = !c->only;
        for (int64_t i = 0; !listed && i < c->nonly; i++) listed = !strcmp(c->only[i], q->alg);
        if (!ok || !listed) continue;
        double *kern = as_malloc((size_t)q->K * sizeof *kern);
        for (int64_t k = 0; k < q->K; k++) kern[k] = q->cost[k] - (q->comm_ms ? q->comm_ms[k] : 0);
        t->load[t->P] = as_malloc((size_t)q->K * sizeof **t->load);
        as_eval_comm_loads(q, local, t->load[t->P]);
        t->q[t->P] = q;
        t->kern[t->P++] = kern;
    }
    for (int64_t j = 0; j < t->P; j++) {
        if (c->chosen && !strcmp(t->q[j]->alg, c->chosen)) t->chosen = j;
        if (c->versus && !strcmp(t->q[j]->alg, c->versus)) t->versus = j;
    }
    for (int64_t j = 0; !c->versus && j < t->P; j++) if (!strcmp(t->q[j]->alg, "torchrec-own")) t->versus = j;
    for (int64_t j = 0; !c->versus && t->versus < 0 && j < t->P; j++) if (!strcmp(t->q[j]->alg, "torchrec")) t->versus = j;
    return t->P;
}

static void view_free(task_view *t)
{
    for (int64_t j = 0; j < t->P; j++) {
        free(t->kern[j]);
        free(t->load[j]);
    }
    free(t->kern);
    free(t->load);
    free(t->q);
}

static void csv_row(FILE *f, const task_view *t, const char *what, const char *knob, double x0, double x1, int64_t j, double v)
{
    fprintf(f, "%" PRId64 ",%" PRId64 ",%s,%s,", t->q[0]->run, t->q[0]->task, what, knob);
    if (isfinite(x0)) fprintf(f, "%.6g", x0);
    fputc(',', f);
    if (isfinite(x1)) fprintf(f, "%.6g", x1);
    fputc(',', f);
    as_eval_csv_field(f, t->q[j]->alg);
    fprintf(f, ",%.6g\n", v);
}

/* a label in the text: in backquotes for markdown */
static void name(FILE *f, as_eval_format fmt, const char *s)
{
    if (fmt == AS_EVAL_MARKDOWN) { fputc('`', f); fputs(s, f); fputc('`', f); }
    else fputs(s, f);
}

static void print_segments(FILE *f, as_eval_format fmt, const task_view *t, int knob, const segment *seg, int64_t ns,
                           const double *base, const char *unit)
{
    if (fmt == AS_EVAL_CSV) {
        for (int64_t s = 0; s < ns; s++) csv_row(f, t, "segment", knob_name[knob], seg[s].x0, seg[s].x1, seg[s].who, 0);
        return;
    }
    fprintf(f, "%s%s (x the model's", fmt == AS_EVAL_MARKDOWN ? "- " : "#   ", knob_words[knob]);
    if (base && knob != KNOB_LAT) fprintf(f, "; in brackets the all-to-all's, %s, 1x = %.3g", unit, *base);
    fputs("): ", f);
    if (ns == 1) {
        name(f, fmt, t->q[seg[0].who]->alg);
        fprintf(f, " wins from %gx to %gx\n", seg[0].x0, seg[0].x1);
        return;
    }
    for (int64_t s = 0; s < ns; s++) {
        name(f, fmt, t->q[seg[s].who]->alg);
        fputs(s == 0 ? " below " : " from ", f);
        xw(f, s == 0 ? seg[s].x1 : seg[s].x0, knob, base);
        if (s > 0 && s < ns - 1) {
            fputs(" to ", f);
            xw(f, seg[s].x1, knob, base);
        }
        fputs(s + 1 < ns ? ", " : "\n", f);
    }
}

static void print_crossings(FILE *f, as_eval_format fmt, const task_view *t, int knob, const double *cross, const int *above, int nc,
                            const double *base)
{
    if (fmt == AS_EVAL_CSV) {
        for (int i = 0; i < nc; i++) csv_row(f, t, "crossing", knob_name[knob], cross[i], NAN, t->chosen, above[i]);
        return;
    }
    if (!nc) return;
    fprintf(f, "%s", fmt == AS_EVAL_MARKDOWN ? "  - against " : "#     against ");
    name(f, fmt, t->q[t->versus]->alg);
    fputs(": the choice is ", f);
    for (int i = 0; i < nc; i++) {
        fprintf(f, "%s%s %s ", i ? ", then " : "", above[i] > 0 ? "slower below," : "faster below,",
                above[i] > 0 ? "faster above" : "slower above");
        xw(f, cross[i], knob, base);
    }
    fprintf(f, " (the crossing%s)\n", nc > 1 ? "s" : "");
}

static void print_worst(FILE *f, as_eval_format fmt, const task_view *t, const worst_case *w, const as_eval_range_cfg *c)
{
    if (fmt == AS_EVAL_CSV) {
        for (int64_t j = 0; j < t->P; j++) csv_row(f, t, "worst", "", NAN, NAN, j, w->worst[j]);
        csv_row(f, t, "robust", "", NAN, NAN, w->robust, w->holds);
        return;
    }
    const char *li = fmt == AS_EVAL_MARKDOWN ? "- " : "#   ";
    const int64_t other = c->nextra - w->skipped;
    fprintf(f, "%sover the plausible range (each knob 0.5x to 2x", li);
    if (other) fprintf(f, ", and %" PRId64 " other model%s", other, other == 1 ? "" : "s");
    fputs("): ", f);
    if (w->holds) {
        fputs("the choice ", f);
        name(f, fmt, t->q[t->chosen]->alg);
        fprintf(f, " is the best everywhere (within %g %%)", 100 * c->tie);
    } else {
        fputs("another candidate wins in part of it; the worst case over the best: the choice ", f);
        name(f, fmt, t->q[t->chosen]->alg);
        fprintf(f, " %.4gx", w->worst[t->chosen]);
        if (w->robust != t->chosen) {
            fputs(", ", f);
            name(f, fmt, t->q[w->robust]->alg);
            fprintf(f, " %.4gx (the least worst case)", w->worst[w->robust]);
        } else fputs(" (still the least worst case)", f);
    }
    if (w->skipped) fprintf(f, "; left out, not holding for %" PRId64 " ranks: %s", t->q[0]->K, w->skipped_names);
    fputc('\n', f);
}

static void one_task(FILE *f, as_eval_format fmt, task_view *t, const as_comm_model *m, const as_eval_range_cfg *c)
{
    double *costs = as_malloc((size_t)t->P * sizeof *costs);
    if (t->chosen < 0) t->chosen = winner(t, m, costs, NULL);
    char unit[96];
    double b0;
    const double *base = a2a_base(m, t->q[0]->K, &b0, unit, sizeof unit) ? &b0 : NULL;
    if (fmt == AS_EVAL_CSV) csv_row(f, t, "chosen", "", NAN, NAN, t->chosen, 1);
    else {
        fprintf(f, "%stask %" PRId64 " (run %" PRId64 "), the choice ", fmt == AS_EVAL_MARKDOWN ? "**How far the choice holds**, " : "# ",
                t->q[0]->task, t->q[0]->run);
        name(f, fmt, t->q[t->chosen]->alg);
        fprintf(f, " of %" PRId64 " candidate%s, as the communication by %s changes:%s\n", t->P, t->P == 1 ? "" : "s", m->name,
                fmt == AS_EVAL_MARKDOWN ? "\n" : "");
    }
    segment seg[MAX_SEG];
    for (int knob = 0; knob < NKNOB; knob++) {
        const int64_t ns = segments(t, m, knob, seg, costs);
        print_segments(f, fmt, t, knob, seg, ns, base, unit);
        if (t->versus >= 0 && t->versus != t->chosen) {
            double cross[8];
            int above[8];
            const int nc = crossings(t, m, knob, cross, above, 8);
            print_crossings(f, fmt, t, knob, cross, above, nc, base);
        }
    }
    worst_case w;
    worst_cases(t, m, c, costs, &w);
    print_worst(f, fmt, t, &w, c);
    if (fmt != AS_EVAL_CSV) fputc('\n', f);
    free(w.worst);
    free(costs);
}

void as_eval_print_range(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m,
                         const as_eval_range_cfg *c)
{
    if (!as_comm_on(m)) {
        if (fmt != AS_EVAL_CSV)
            fprintf(f, "%show far the choice holds: communication not modelled (--comm-gbps 0)\n\n", fmt == AS_EVAL_MARKDOWN ? "" : "# ");
        return;
    }
    if (fmt == AS_EVAL_CSV) fprintf(f, "run,task,what,knob,x_from,x_to,alg,value\n");
    int64_t none = 0;
    unsigned char *done = as_calloc((size_t)(n ? n : 1), 1);
    for (int64_t a = 0; a < n; a++) {
        if (done[a]) continue;
        task_view t;
        if (!view_of(p, n, a, c, as_comm_local(m), &t, done)) none++;
        else one_task(f, fmt, &t, m, c);
        view_free(&t);
    }
    free(done);
    if (none && fmt != AS_EVAL_CSV)
        fprintf(f, "%s%" PRId64 " task%s without a candidate (feasible, every cost known, communication bytes%s)\n\n",
                fmt == AS_EVAL_MARKDOWN ? "" : "# ", none, none == 1 ? "" : "s", c->only ? ", one of --candidates" : "");
}
