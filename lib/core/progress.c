/* progress.c - progress on stderr; see progress.h */
#include "progress.h"
#include "common.h"

#include <stdio.h>
#include <unistd.h>

void as_progress_begin(as_progress *p, int on, const char *label, double total)
{
    p->on = on;
    p->label = label;
    p->total = total;
    p->t0 = p->last = as_now();
}

/* "m:ss" or "h:mm:ss" */
static void fmt_dur(char *buf, size_t len, double s)
{
    long v = (long)(s + 0.5);
    if (v >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else snprintf(buf, len, "%ld:%02ld", v / 60, v % 60);
}

void as_progress_eta(char *buf, size_t len, double elapsed, double done, double total)
{
    buf[0] = 0;
    if (!(total > 0) || !(done > 0) || !(elapsed > 0) || done >= total) return;
    char d[24];
    fmt_dur(d, sizeof d, elapsed * (total - done) / done);
    snprintf(buf, len, ", ETA %s", d);
}

void as_progress_update(as_progress *p, double done)
{
    if (!p->on) return;
    double t = as_now();
    /* a terminal gets ~5 updates a second on one line; a log file a line every 10 s */
    int tty = isatty(2);
    if (t - p->last < (tty ? 0.2 : 10.0)) return;
    p->last = t;
    const char *lead = tty ? "\r" : "", *end = tty ? " " : "\n";
    if (p->total > 0) {
        char eta[48];
        as_progress_eta(eta, sizeof eta, t - p->t0, done, p->total);
        fprintf(stderr, "%s%s: %s %.0f/%.0f (%.1f%%) %.1fs%s%s", lead, as_prog, p->label, done, p->total, 100.0 * done / p->total,
                t - p->t0, eta, end);
    } else
        fprintf(stderr, "%s%s: %s %.0f %.1fs%s", lead, as_prog, p->label, done, t - p->t0, end);
    fflush(stderr);
}

void as_progress_end(as_progress *p)
{
    if (!p->on) return;
    if (isatty(2)) fprintf(stderr, "\r%s: %s done in %.1fs%30s\n", as_prog, p->label, as_now() - p->t0, "");
    else fprintf(stderr, "%s: %s done in %.1fs\n", as_prog, p->label, as_now() - p->t0);
}
