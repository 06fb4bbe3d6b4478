/* ncclperf.h - a collective's measured times, read from nccl-tests' own text output
 * (alltoall_perf, reduce_scatter_perf, all_gather_perf, all_reduce_perf), and the time of a
 * message of any size from them: what `--comm-model nccl:FILE[,FILE...]` charges
 * (lib/records/comm.h).
 *
 * The file is what the test printed, whole: its '#' header (the rank lines "#  Rank  N Group
 * ..." give the ranks it ran on), one data line per size, 13 columns
 *     size count type redop root   time algbw busbw #wrong   time algbw busbw #wrong
 * (bytes, elements, the data type, the reduction or "none", the root or -1, then out-of-place
 * and in-place: us, GB/s, GB/s, wrong elements or N/A; nccl-tests 2.13 and later), and its trailer "# Avg bus bandwidth
 * : X", which says the run ended (a file cut before it is refused: a partial table would
 * charge a plan's large messages at a small size's rate). Lines of NCCL_DEBUG=INFO ("NCCL
 * INFO") and empty lines are skipped; any other line is refused. Every line is checked: the
 * columns' count and kinds, sizes strictly increasing (one run in a file), times positive,
 * algbw = size / time (a file of other columns does not pass), #wrong 0 or N/A (a failed
 * run's table is refused), "Out of bounds values : 0 OK" where printed. An error names the
 * file and the line.
 *
 * The collective: from the line "# Collective test starting: NAME" nccl-tests prints, else
 * from the file's name (alltoall, all_to_all, reduce_scatter, all_gather, all_reduce, with or
 * without '_'), or as the caller says (comm.h: a2a=FILE, rs=FILE, ag=FILE, ar=FILE); the
 * two must agree where both are known.
 *
 * The time of a message of S bytes (nccl-tests' size: the bytes each rank's buffer holds:
 * all it sends in an all-to-all, its whole input of a reduce-scatter, its whole output of an
 * all-gather, the reduced buffer of an all-reduce) is the out-of-place time, interpolated
 * linearly between the two measured sizes around S; below the smallest, the line through the
 * two smallest (their alpha-beta fit: a run from 8 bytes gives its latency; one from 32 MiB
 * an estimate), never below the smallest's rate (its time scaled by S over its size); above
 * the largest, the largest's time scaled by S over its size (the largest's algbw).
 * A line "N: " before each line (srun --label) is read without it, and "NCCL version" lines
 * are skipped. */
#ifndef AS_NCCLPERF_H
#define AS_NCCLPERF_H

#include <stddef.h>
#include <stdint.h>

/* the collectives: all-to-all, reduce-scatter, all-gather, all-reduce */
typedef enum { AS_COLL_A2A, AS_COLL_RS, AS_COLL_AG, AS_COLL_AR, AS_NCOLL } as_coll;

#define AS_NCCL_MAX_POINTS 4096   /* data lines in one file */

typedef struct {
    as_coll coll;
    int64_t ranks;                 /* the rank lines' count */
    int64_t n;                     /* measured sizes */
    double *size, *us;             /* [n] bytes, strictly increasing; the out-of-place time, us */
} as_nccl_table;

/* the collectives' short names (a2a, rs, ag, ar) and nccl-tests' (alltoall, ...) */
extern const char *const as_coll_short[AS_NCOLL];
extern const char *const as_coll_test[AS_NCOLL];

/* Read path into t; coll: the collective the caller names it (-1: from the file). 0, or -1
 * with err "FILE:LINE: what is wrong" (LINE 0: the file as a whole) and t untouched. */
int as_nccl_read(const char *path, int coll, as_nccl_table *t, char *err, size_t errlen);
/* the same from text[0..len) (a file's content; path names it in messages) */
int as_nccl_parse(const char *path, const char *text, size_t len, int coll, as_nccl_table *t, char *err, size_t errlen);
void as_nccl_free(as_nccl_table *t);
/* the time (us) of a message of size bytes (>= 0), as above */
double as_nccl_us(const as_nccl_table *t, double size);

#endif
