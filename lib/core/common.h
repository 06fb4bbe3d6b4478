/* common.h - process-wide helpers shared by every autoshard tool and library file:
 * program name, diagnostics, exit codes, checked allocation, strict number parsing.
 * Dimension letters used across lib/: B batch, L pooling, D dim, E rows, T tables, K shards. */
#ifndef AS_COMMON_H
#define AS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define AS_VERSION "0.1.0"

/* exit codes, the same for every tool */
enum {
    AS_EXIT_OK = 0,
    AS_EXIT_DATA = 1,   /* bad input data / format */
    AS_EXIT_USAGE = 2,  /* bad command line */
    AS_EXIT_ENV = 3     /* environment: write error, out of memory, no device */
};

extern const char *as_prog;   /* "as-convert", ... set by as_set_prog() */
extern int as_verbosity;      /* 0 = -q, 1 = default, 2 = -v */

void as_set_prog(const char *argv0);

/* "as-x: msg\n" on stderr, msg through as_text_escape: a name or a file name in it never
 * reaches the terminal as commands or forged lines */
void as_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s as text safe for a terminal, a log line or a table cell into out (NUL-terminated, cut at
 * outlen - 1 bytes, never inside an escape): valid UTF-8 is copied, except the control
 * characters of the names' rule (as_name_bad, msgobj.h: C0, DEL, C1, U+2028, U+2029), which
 * become \n, \t, \r, \xHH (C0, DEL) or \uHHHH; a byte that is not valid UTF-8 becomes \xHH.
 * Returns out. */
char *as_text_escape(char *out, size_t outlen, const char *s);
/* print then exit(code): for the command-line layer (cmd/, cli.c, output.c and the stream
 * writer); the rest of lib/ returns -1 with a message instead (docs/ARCHITECTURE.md) */
_Noreturn void as_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* info / debug messages, silenced by -q / shown with -v */
/* malloc, 64-byte aligned, but blocks of 4 MiB and more are 2 MiB aligned and marked for transparent huge
 * pages (madvise: advice only): the first touch of a fresh 4 KiB page costs microseconds on a
 * VM, and random reads over GiBs of 4 KiB pages are bound by the TLB's page walks, which a
 * GPU's large pages do not pay. NULL when out of memory; released with free(). */
void *as_huge_alloc(size_t n);
void as_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void as_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Out of memory is the one failure lib/ does not return: as_oom prints "as-x: out of memory
 * (WHAT)" and exits AS_EXIT_ENV (3). Every allocation that cannot fail otherwise goes
 * through it: the wrappers below ("N bytes"), the zstd contexts ("zstd"). Code that can
 * recover (a workspace a benchmark may do without) calls malloc and returns -1 instead. */
_Noreturn void as_oom(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *as_malloc(size_t n);
void *as_calloc(size_t n, size_t size);
void *as_realloc(void *p, size_t n);
char *as_strdup(const char *s);
/* the calls of the wrappers above so far, in every thread (as_strdup counts as its
 * as_malloc): the tests count a function's allocations with it */
uint64_t as_alloc_count(void);

/* An arena: memory for one pass of a computation that runs again and again (the policy's
 * rollouts, its learner's trajectories), taken by bumping a pointer and given back all at
 * once. It grows by blocks while a pass needs more; as_arena_reset gives everything back
 * and, when the pass took more than one block, makes them one block of their size, so that
 * the next pass of at most that size allocates nothing. Pieces are 64-byte aligned. */
typedef struct as_arena_blk as_arena_blk;
typedef struct {
    as_arena_blk *blk;              /* the current block, its predecessors after it */
    size_t total;                   /* bytes of every block together */
} as_arena;
void *as_arena_take(as_arena *a, size_t n);        /* uninitialised */
void *as_arena_ztake(as_arena *a, size_t n);       /* zeroed */
void as_arena_reset(as_arena *a);
void as_arena_free(as_arena *a);                   /* back to an empty arena; NULL: nothing */

/* strict parsing: whole string (no leading or trailing white space), range-checked. return 0
 * ok, -1 bad */
int as_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int as_parse_f64(const char *s, double lo, double hi, double *out);
/* sizes with optional suffix: 123, 4K, 1.5M, 2G, 3GB, 1GiB (powers of 1024) */
int as_parse_size(const char *s, uint64_t *out);
/* comma-separated list of non-negative ints, e.g. "3,17,42" or "0-9,12"; *out malloc'd */
int as_parse_i64_list(const char *s, int64_t lo, int64_t hi, int64_t **out, size_t *n);

/* seeded PRNG: splitmix64 for seeding, xoshiro256** for streams */
typedef struct { uint64_t s[4]; } as_rng;
uint64_t as_splitmix64(uint64_t *state);
void as_rng_seed(as_rng *r, uint64_t seed, uint64_t stream);
uint64_t as_rng_next(as_rng *r);
double as_rng_uniform(as_rng *r);              /* [0,1) with 53 bits */
uint64_t as_rng_below(as_rng *r, uint64_t n);  /* unbiased in [0,n), n > 0 */

/* wall clock seconds (monotonic) */
double as_now(void);
/* peak resident set size of this process in bytes (0 if unknown) */
uint64_t as_peak_rss(void);

#endif
