/* replay.c - run a fuzz target without libFuzzer (any C compiler; `make fuzz-replay`,
 * part of `make asan`).
 *
 *   replay-<target> [-m N] [-s SEED] PATH...
 *
 * Every PATH (a file, or a directory of files) is given to LLVMFuzzerTestOneInput, then N
 * deterministic mutants of it (default 48; splitmix64 from SEED and the file's name): cuts
 * at a random length, random bytes overwritten, "interesting" values (00, ff, 7f, 80, and
 * 32-bit ones) written at random offsets, a block duplicated. Prints "replay-<target>: N
 * inputs from K files in T s" on stderr. A crash is the sanitizer's report; before it, and
 * when a target calls exit(), the input is saved to $TMPDIR/replay-crash-<pid>.bin and
 * named, so `replay-<target> FILE` reproduces it.
 */
#include "common.h"
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#endif
#ifdef REPLAY_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

static const char *prog = "replay";
static const uint8_t *cur;        /* the input being run, for the crash report */
static size_t cur_n;
static char cur_name[1200];
static int in_target;

static void save_current(const char *why)
{
    if (!cur_name[0]) return;
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/replay-crash-%ld.bin", dir && *dir ? dir : "/tmp", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (f) {
        if (cur_n) fwrite(cur, 1, cur_n, f);
        fclose(f);
    }
    fprintf(stderr, "%s: %s on input %s (%zu bytes), saved as %s\n", prog, why, cur_name, cur_n, f ? path : "(not saved)");
}

#ifdef REPLAY_ASAN
static void on_death(void) { save_current("sanitizer error"); }
#endif

static void on_exit_hook(void)
{
    if (in_target) {
        save_current("the target called exit()");
        _exit(99);
    }
}

static void run(const uint8_t *d, size_t n, const char *name)
{
    cur = d;
    cur_n = n;
    snprintf(cur_name, sizeof cur_name, "%s", name);
    in_target = 1;
    LLVMFuzzerTestOneInput(d, n);
    in_target = 0;
}

/* mutant k of seed (in a buffer of cap >= 2 * n + 64 bytes); returns its length */
static size_t mutate(const uint8_t *seed, size_t n, uint8_t *m, uint64_t *rs)
{
    memcpy(m, seed, n);
    if (!n) { m[0] = (uint8_t)as_splitmix64(rs); return 1; }
    static const uint32_t interesting[] = { 0, 0xff, 0x7f, 0x80, 0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu, 1, 64 };
    size_t len = n;
    int ops = 1 + (int)(as_splitmix64(rs) % 3);
    for (int k = 0; k < ops; k++) {
        uint64_t r = as_splitmix64(rs);
        size_t at = (size_t)(as_splitmix64(rs) % len);
        switch (r % 5) {
        case 0:   /* cut */
            len = at ? at : 1;
            break;
        case 1:   /* random bytes */
            for (int j = 0; j < 1 + (int)(r >> 8) % 4 && at + (size_t)j < len; j++) m[at + (size_t)j] = (uint8_t)as_splitmix64(rs);
            break;
        case 2: { /* an interesting byte */
            m[at] = (uint8_t)interesting[(r >> 8) % 4];
            break;
        }
        case 3: { /* an interesting 32-bit little-endian value */
            uint32_t v = interesting[(r >> 8) % (sizeof interesting / sizeof *interesting)];
            for (int j = 0; j < 4 && at + (size_t)j < len; j++) m[at + (size_t)j] = (uint8_t)(v >> (8 * j));
            break;
        }
        default: { /* duplicate a block (the buffer has room for doubling once) */
            size_t blk = 1 + (size_t)((r >> 8) % 64);
            if (at + blk > len) blk = len - at;
            if (len + blk > 2 * n + 64) break;
            memmove(m + at + blk, m + at, len - at);
            len += blk;
            break;
        }
        }
    }
    return len;
}

static int nfiles;
static long ninputs;

static int run_file(const char *path, int nmut, uint64_t seed)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno)); return -1; }
    size_t cap = 1 << 16, n = 0;
    uint8_t *d = malloc(cap);
    for (;;) {
        if (n == cap) d = realloc(d, cap *= 2);
        size_t r = fread(d + n, 1, cap - n, f);
        if (!r) break;
        n += r;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { fprintf(stderr, "%s: %s: read error\n", prog, path); free(d); return -1; }
    /* an exact-size copy, so that reading past the end is caught */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, d, n);
    run(exact, n, path);
    free(exact);
    uint64_t rs = seed;
    for (const char *c = strrchr(path, '/') ? strrchr(path, '/') + 1 : path; *c; c++) rs = (rs ^ (uint8_t)*c) * 0x100000001b3ull;
    uint8_t *m = malloc(2 * n + 64);
    char name[1200];
    for (int k = 0; k < nmut; k++) {
        size_t len = mutate(d, n, m, &rs);
        uint8_t *x = malloc(len);
        memcpy(x, m, len);
        snprintf(name, sizeof name, "%s (mutant %d, -s %llu)", path, k, (unsigned long long)seed);
        run(x, len, name);
        free(x);
    }
    free(m);
    free(d);
    nfiles++;
    ninputs += 1 + nmut;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    prog = slash ? slash + 1 : argv[0];
    int nmut = 48, rc = 0;
    uint64_t seed = 1;
    atexit(on_exit_hook);
#ifdef REPLAY_ASAN
    __sanitizer_set_death_callback(on_death);
#endif
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) { nmut = atoi(argv[++i]); continue; }
        if (!strcmp(argv[i], "-s") && i + 1 < argc) { seed = strtoull(argv[++i], NULL, 10); continue; }
        npaths++;
        struct stat st;
        if (stat(argv[i], &st)) { fprintf(stderr, "%s: %s: %s\n", prog, argv[i], strerror(errno)); rc = 1; continue; }
        if (!S_ISDIR(st.st_mode)) { if (run_file(argv[i], nmut, seed)) rc = 1; continue; }
        DIR *dir = opendir(argv[i]);
        if (!dir) { fprintf(stderr, "%s: %s: %s\n", prog, argv[i], strerror(errno)); rc = 1; continue; }
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (nn + 1) * sizeof *names);
            names[nn] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
            sprintf(names[nn++], "%s/%s", argv[i], e->d_name);
        }
        closedir(dir);
        qsort(names, nn, sizeof *names, cmp_str);   /* a fixed order: reproducible */
        for (size_t k = 0; k < nn; k++) {
            if (run_file(names[k], nmut, seed)) rc = 1;
            free(names[k]);
        }
        free(names);
    }
    if (!npaths) {
        fprintf(stderr, "usage: %s [-m MUTANTS] [-s SEED] FILE|DIR...\n", prog);
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "%s: %ld inputs from %d files in %.2f s\n", prog, ninputs, nfiles,
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    if (!nfiles) { fprintf(stderr, "%s: no input files\n", prog); rc = 1; }
    return rc;
}
