/* evalplot.c - as-eval's plots: gnuplot scripts and data files; see evalplot.h.
 * Dimension letters: K shards of a plan. */
#include "evalplot.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- gnuplot ---------------------------------------------------------------------------- */

/* a string in gnuplot's double quotes */
static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* a label in a data file's double quotes: gnuplot's data files have no escape for a double
   quote inside one, so it is written as a single quote (the plot's text only) */
static void gp_data_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) fputc(*s == '"' ? '\'' : *s, f);
    fputc('"', f);
}

int as_eval_plot_format(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return -1;
    if (!strcasecmp(dot, ".png")) return 0;
    if (!strcasecmp(dot, ".svg")) return 1;
    if (!strcasecmp(dot, ".pdf")) return 2;
    return -1;
}

/* the terminal of the output's extension (png: pngcairo when this gnuplot has it, else
 * png; svg; pdf: pdfcairo, w x h pixels at 100 per inch) and the output file */
static void gp_terminal(FILE *f, const char *out, int w, int h)
{
    switch (as_eval_plot_format(out)) {
    case 1: fprintf(f, "set terminal svg size %d,%d noenhanced\n", w, h); break;
    case 2: fprintf(f, "set terminal pdfcairo size %.2fin,%.2fin noenhanced font \",9\"\n", w / 100.0, h / 100.0); break;
    default:
        fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size %d,%d noenhanced } "
                   "else { set terminal png size %d,%d noenhanced }\n", w, h, w, h);
    }
    fprintf(f, "set output ");
    gp_str(f, out);
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

/* ---- the plans' plots ------------------------------------------------------------------ */

/* the data files and the script of one plot, in its temporary directory */
enum { F_SUMMARY, F_BARS, F_SCATTER, F_SCRIPT, NF };

typedef struct {
    char path[NF][600];
    double spd_top, spd_bottom;     /* the speedups' intervals: highest top, lowest positive bottom */
    const as_planrec_full **bars;      /* each algorithm's plan of the task (first run), nb of them */
    int64_t nb, K;                  /* K: the most shards among them */
    double cmax, cmin;              /* their finite non-zero shard costs' range */
    int logy;                       /* the bars on a log y axis */
} plot_ctx;

/* balance (mean, error bar mean ± std clipped to [0, 100] %) and speedup (geometric mean,
 * error bar its 95 % interval) per algorithm; the speedups' range into c */
static int write_summary(plot_ctx *c, const as_eval_alg *a, int64_t na, char *err, size_t errlen)
{
    FILE *f;
    if (!(f = fopen(c->path[F_SUMMARY], "w"))) { snprintf(err, errlen, "%s: %s", c->path[F_SUMMARY], strerror(errno)); return -1; }
    c->spd_top = 0, c->spd_bottom = INFINITY;
    for (int64_t i = 0; i < na; i++) {
        double bm = isfinite(a[i].bal_mean) ? 100 * a[i].bal_mean : 0, bs = isfinite(a[i].bal_std) ? 100 * a[i].bal_std : 0;
        double g = isfinite(a[i].spd_gmean) ? a[i].spd_gmean : 0;
        double lo = isfinite(a[i].spd_lo) ? a[i].spd_lo : g, hi = isfinite(a[i].spd_hi) ? a[i].spd_hi : g;
        if (hi > c->spd_top) c->spd_top = hi;
        if (lo > 0 && lo < c->spd_bottom) c->spd_bottom = lo;
        fprintf(f, "%" PRId64 " ", i);
        gp_data_str(f, a[i].alg);
        fprintf(f, " %.9g %.9g %.9g %.9g %.9g %.9g\n", bm, bm - bs < 0 ? 0 : bm - bs, bm + bs > 100 ? 100 : bm + bs, g, lo, hi);
    }
    fclose(f);
    return 0;
}

/* per-shard costs of each algorithm's plan of the task (first run that has it), and
 * whether they need a log y axis */
static void pick_bars(plot_ctx *c, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na, int64_t task)
{
    int64_t run = -1;
    c->K = 0, c->nb = 0;
    for (int64_t j = 0; j < n; j++)
        if (p[j].task == task && (run < 0 || p[j].run < run)) run = p[j].run;
    c->bars = as_malloc((size_t)(na ? na : 1) * sizeof *c->bars);
    for (int64_t i = 0; i < na; i++) {
        for (int64_t j = 0; j < n; j++)
            if (p[j].run == run && p[j].task == task && !strcmp(p[j].alg, a[i].alg)) {
                c->bars[c->nb++] = &p[j];
                if (p[j].K > c->K) c->K = p[j].K;
                break;
            }
    }
    /* a log y axis when the bars span more than AS_EVAL_LOG_RATIO (one random plan's shard
     * 100x the others flattens every other bar); zero-cost (empty) shards have no bar there */
    c->cmax = 0, c->cmin = INFINITY;
    for (int64_t i = 0; i < c->nb; i++)
        for (int64_t k = 0; k < c->bars[i]->K; k++) {
            double v = c->bars[i]->cost[k];
            if (!isfinite(v) || v <= 0) continue;
            if (v > c->cmax) c->cmax = v;
            if (v < c->cmin) c->cmin = v;
        }
    c->logy = c->cmax > 0 && c->cmax > AS_EVAL_LOG_RATIO * c->cmin;
}

/* the bars' data: a row per shard, a column per plan (NaN: no bar) */
static int write_bars(const plot_ctx *c, char *err, size_t errlen)
{
    FILE *f;
    if (!(f = fopen(c->path[F_BARS], "w"))) { snprintf(err, errlen, "%s: %s", c->path[F_BARS], strerror(errno)); return -1; }
    for (int64_t k = 0; k < c->K; k++) {
        fprintf(f, "%" PRId64, k);
        for (int64_t i = 0; i < c->nb; i++) {
            double v = k < c->bars[i]->K ? c->bars[i]->cost[k] : NAN;
            if (isfinite(v) && (!c->logy || v > 0)) fprintf(f, " %.9g", v);
            else fprintf(f, " NaN");
        }
        fputc('\n', f);
    }
    fclose(f);
    return 0;
}

/* measured against predicted shard cost, a row per shard */
static int write_scatter(const plot_ctx *c, const double *pred, const double *meas, int64_t nscatter, char *err,
                         size_t errlen)
{
    FILE *f;
    if (!(f = fopen(c->path[F_SCATTER], "w"))) { snprintf(err, errlen, "%s: %s", c->path[F_SCATTER], strerror(errno)); return -1; }
    for (int64_t i = 0; i < nscatter; i++) fprintf(f, "%.9g %.9g\n", meas[i], pred[i]);
    fclose(f);
    return 0;
}

/* the script's balance and speedup panels */
static void script_summary(FILE *f, const plot_ctx *c, const char *label)
{
    fprintf(f, "set title \"Balance (%s costs): mean ± std, clipped to 0-100 %%\"\nset ylabel \"balance (%%)\"\n"
               "set yrange [0:105]\n", label);
    fprintf(f, "plot \"%s\" using 1:3:xtic(2) with boxes lc rgb \"#4c72b0\", \"\" using 1:3:4:5 with yerrorbars lc rgb \"black\" pt 0\n",
            c->path[F_SUMMARY]);
    /* the intervals decide the range; when they span more than AS_EVAL_LOG_RATIO (few tasks,
     * or one wild one) a log axis keeps the bars readable */
    int spd_log = c->spd_top > 0 && c->spd_top > AS_EVAL_LOG_RATIO * c->spd_bottom;
    fprintf(f, "set title \"Speedup over random (%s): geomean, 95 %% CI%s\"\nset ylabel \"speedup (x)\"\n", label,
            spd_log ? ", log scale" : "");
    if (spd_log) fprintf(f, "set logscale y\nset format y \"%%g\"\nset yrange [%.9g:%.9g]\n", c->spd_bottom / 1.5, c->spd_top * 1.5);
    else if (c->spd_top > 0) fprintf(f, "set yrange [0:%.9g]\n", 1.08 * c->spd_top);
    else fprintf(f, "set yrange [0:*]\n");
    fprintf(f, "plot \"%s\" using 1:6:xtic(2) with boxes lc rgb \"#55a868\", \"\" using 1:6:7:8 with yerrorbars lc rgb \"black\" pt 0, "
               "1 with lines lc rgb \"gray\" dt 2\nunset logscale y\nset format y\n", c->path[F_SUMMARY]);
}

/* the bars' colours, one per algorithm of the task, distinct (gnuplot's default cycle has 8,
   and the demo compares 10 or more); past them the colours come round again with a fill
   pattern, so no two algorithms' bars look alike */
static const char *const BAR_COLOURS[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
};
enum { N_BAR_COLOURS = sizeof BAR_COLOURS / sizeof BAR_COLOURS[0] };

/* the script's panel of the task's per-shard costs, one cluster of bars per shard, each
   algorithm in its own colour (solid, no border: a shard's bars are thin), the key below
   the bars, not over them */
static void script_bars(FILE *f, const plot_ctx *c, int64_t task, const char *label)
{
    char span[96];
    snprintf(span, sizeof span, ", log scale: the costs span %.0fx", c->logy ? c->cmax / c->cmin : 0);
    fprintf(f, "set title \"Task %" PRId64 ": cost per shard (%s)%s\"\nset ylabel \"ms\"\nset xlabel \"shard\"\nset xtics norotate\n"
               "set style data histogram\nset style histogram clustered gap 1\nset boxwidth 0.9 relative\n"
               "set key below maxcols 2 samplen 1.5\n"
               "set offsets 0,0,0,0\n", task, label, c->logy ? span : "");
    if (c->logy) fprintf(f, "set logscale y\nset format y \"%%g\"\nset yrange [%.9g:%.9g]\n", c->cmin / 2, c->cmax * 2);
    else fprintf(f, "set yrange [0:*]\n");
    fprintf(f, "plot ");
    for (int64_t i = 0; i < c->nb; i++) {
        fprintf(f, "%s\"%s\" using %" PRId64 ":xtic(1) lc rgb \"%s\"", i ? ", " : "", c->path[F_BARS], i + 2,
                BAR_COLOURS[i % N_BAR_COLOURS]);
        if (i >= N_BAR_COLOURS) fprintf(f, " fs pattern %" PRId64 " border -1", 1 + (i / N_BAR_COLOURS - 1) % 7);
        else fprintf(f, " fs solid 0.85 noborder");
        fprintf(f, " title ");
        gp_str(f, c->bars[i]->alg);
    }
    fprintf(f, "\nunset style data\nunset logscale y\nset format y\nset key off\nset xlabel \"\"\n");
}

/* the script: two panels (balance, speedup), then the bars and the scatter where there are any */
static int write_script(const plot_ctx *c, const char *out, int64_t task, const char *label, int64_t nscatter, char *err,
                        size_t errlen)
{
    FILE *f;
    if (!(f = fopen(c->path[F_SCRIPT], "w"))) { snprintf(err, errlen, "%s: %s", c->path[F_SCRIPT], strerror(errno)); return -1; }
    int panels = 2 + (c->nb > 0) + (nscatter > 0);
    gp_terminal(f, out, 1200, panels > 2 ? 900 : 450);
    fprintf(f, "set datafile missing \"NaN\"\nset multiplot layout %d,2\nset grid ytics\nset style fill solid 0.6 border -1\n"
               "set boxwidth 0.6\nset xtics rotate by -30\nset key off\nset offsets 0.5,0.5,0,0\n",
            panels > 2 ? 2 : 1);
    script_summary(f, c, label);
    if (c->nb > 0) script_bars(f, c, task, label);
    if (nscatter > 0) {
        fprintf(f, "set title \"Cost model: predicted vs measured shard cost\"\nset xlabel \"measured (ms)\"\nset ylabel \"predicted (ms)\"\n"
                   "set xtics norotate\nset autoscale\nset offsets 0,0,0,0\nset size ratio -1\n");
        fprintf(f, "plot \"%s\" using 1:2 with points pt 7 ps 0.5 lc rgb \"#c44e52\", x with lines lc rgb \"gray\"\nset size noratio\n",
                c->path[F_SCATTER]);
    }
    fprintf(f, "unset multiplot\n");
    if (fclose(f)) { snprintf(err, errlen, "%s: %s", c->path[F_SCRIPT], strerror(errno)); return -1; }
    return 0;
}

int as_eval_plot(const char *out, const as_planrec_full *p, int64_t n, const as_eval_alg *a, int64_t na,
                 int64_t task, const char *label, const double *pred, const double *meas, int64_t nscatter,
                 char *err, size_t errlen)
{
    char dir[] = "/tmp/as-eval-plot-XXXXXX";
    if (!mkdtemp(dir)) { snprintf(err, errlen, "temporary directory: %s", strerror(errno)); return -1; }
    plot_ctx c = { .bars = NULL };
    const char *names[NF] = { "summary.dat", "bars.dat", "scatter.dat", "plot.gp" };
    for (int i = 0; i < NF; i++) snprintf(c.path[i], sizeof c.path[i], "%s/%s", dir, names[i]);
    int rc = -1;
    if (write_summary(&c, a, na, err, errlen)) goto out;
    pick_bars(&c, p, n, a, na, task);
    if (write_bars(&c, err, errlen)) goto out;
    if (nscatter > 0 && write_scatter(&c, pred, meas, nscatter, err, errlen)) goto out;
    if (write_script(&c, out, task, label, nscatter, err, errlen)) goto out;
    rc = gp_run(c.path[F_SCRIPT], err, errlen);
out:
    free(c.bars);
    if (rc == 0 || !strstr(err, "script kept")) {
        for (int i = 0; i < NF; i++) unlink(c.path[i]);
        rmdir(dir);
    }
    return rc;
}

/* ---- the training curve ----------------------------------------------------------------- */

int as_eval_plot_curve(const char *out, const as_eval_train *t, int64_t n, char *err, size_t errlen)
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
    gp_terminal(f, out, 1100, 900);
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
