/* progress.h - progress of a long run on stderr: a terminal gets ~5 updates a second on one
 * line, a log file a line every 10 s; with a known total the line ends with an ETA. A
 * foundation (layer 1): stage code reports progress through it without the command line,
 * which decides whether it is on (cli.h, as_progress_start). */
#ifndef AS_PROGRESS_H
#define AS_PROGRESS_H

#include <stddef.h>

typedef struct {
    int on;
    const char *label;
    double total, t0, last;
} as_progress;
/* on: print anything at all; total 0: unknown */
void as_progress_begin(as_progress *p, int on, const char *label, double total);
void as_progress_update(as_progress *p, double done);
void as_progress_end(as_progress *p);
/* ", ETA m:ss" (or h:mm:ss) for the rest of total at the rate so far (elapsed s for done);
 * "" when it cannot be estimated (nothing done yet, no total, finished) */
void as_progress_eta(char *buf, size_t len, double elapsed, double done, double total);

#endif
