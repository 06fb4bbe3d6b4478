/* as-show - print any autoshard stream as JSON lines, one record per line. */
#include "cli.h"
#include "common.h"
#include "json.h"
#include "stream.h"

#include <stdlib.h>
#include <string.h>

static const char HELP[] =
    "Print autoshard record streams as JSON lines, one record per line, headers included.\n"
    "Large arrays are summarised as dtype, shape and their first values unless --full.\n"
    "Reads the named streams in order (standard input when none or '-').\n"
    "\n"
    "Options:\n"
    "      --full          print every value of every array\n"
    "      --head N        values shown per summarised array (default 8)\n"
    "  -k, --kind KIND     print only records of this kind (repeatable)\n"
    "      --no-header     leave header records out\n"
    "  -c, --count         print the number of records per kind instead of the records\n";

enum { OPT_FULL = AS_OPT_TOOL_BASE, OPT_HEAD, OPT_NOHEADER };

/* -c: records per kind, in order of first appearance, for any number of kinds of any
 * length (an open-addressing table of positions; kind names are copied whole) */
typedef struct { char *name; size_t len; uint64_t n; } kind_count;
typedef struct {
    kind_count *k;
    size_t n, cap;
    size_t *slot;          /* position + 1, 0 = empty; nslot a power of two */
    size_t nslot;
} kind_counts;

static uint64_t kind_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a */
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 0x100000001b3ULL; }
    return h;
}

static void kind_count_add(kind_counts *c, const char *name, size_t len)
{
    if (2 * (c->n + 1) > c->nslot) {
        size_t ns = c->nslot ? 2 * c->nslot : 64;
        free(c->slot);
        c->slot = as_calloc(ns, sizeof *c->slot);
        c->nslot = ns;
        for (size_t i = 0; i < c->n; i++) {
            size_t j = kind_hash(c->k[i].name, c->k[i].len) & (ns - 1);
            while (c->slot[j]) j = (j + 1) & (ns - 1);
            c->slot[j] = i + 1;
        }
    }
    size_t j = kind_hash(name, len) & (c->nslot - 1);
    for (; c->slot[j]; j = (j + 1) & (c->nslot - 1)) {
        kind_count *k = &c->k[c->slot[j] - 1];
        if (k->len == len && !memcmp(k->name, name, len)) { k->n++; return; }
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->k = as_realloc(c->k, c->cap * sizeof *c->k);
    }
    kind_count *k = &c->k[c->n];
    k->name = as_malloc(len + 1);
    memcpy(k->name, name, len);
    k->name[len] = 0;
    k->len = len;
    k->n = 1;
    c->slot[j] = ++c->n;
}

static void kind_counts_free(kind_counts *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->k[i].name);
    free(c->k);
    free(c->slot);
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-show", "as-show [options] [FILE...]", HELP);
    static const struct option opts[] = {
        { "full", no_argument, 0, OPT_FULL },
        { "head", required_argument, 0, OPT_HEAD },
        { "kind", required_argument, 0, 'k' },
        { "no-header", no_argument, 0, OPT_NOHEADER },
        { "count", no_argument, 0, 'c' },
        AS_CLI_COMMON_OPTIONS
    };
    int full = 0, head = 8, noheader = 0, count = 0;
    const char *kinds[32];
    int nkinds = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT "k:c", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_FULL: full = 1; break;
        case OPT_HEAD: head = (int)as_cli_i64(&cli, "--head", optarg, 0, 1000000); break;
        case 'k':
            if (nkinds == 32) as_cli_usage(&cli, "too many --kind options");
            kinds[nkinds++] = optarg;
            break;
        case OPT_NOHEADER: noheader = 1; break;
        case 'c': count = 1; break;
        default:
            if (!as_cli_common(&cli, opt, optarg)) as_cli_usage(&cli, "unknown option");
        }
    }
    as_cli_finish(&cli);
    FILE *out = as_cli_open_text(&cli);
    char *none[] = { "-" };
    char **files = optind < argc ? argv + optind : none;
    int nfiles = optind < argc ? argc - optind : 1;
    kind_counts counts = { 0 };
    for (int fi = 0; fi < nfiles; fi++) {
        as_reader *r = as_reader_open(files[fi]);
        if (!r) exit(AS_EXIT_DATA);
        as_record rec;
        int rc;
        while ((rc = as_reader_next(r, &rec)) == 1) {
            if (noheader && as_rec_is(&rec, "header")) continue;
            if (nkinds) {
                int want = 0;
                for (int i = 0; i < nkinds; i++) want |= as_rec_is(&rec, kinds[i]);
                if (!want) continue;
            }
            if (count) {
                kind_count_add(&counts, rec.kind, rec.kindlen);
                continue;
            }
            as_json_print(out, &rec.obj, full, head);
            fputc('\n', out);
        }
        if (rc < 0) {
            /* print what came before, then the error */
            fflush(out);
            as_die(AS_EXIT_DATA, "%s", as_reader_error(r));
        }
        as_reader_close(r);
    }
    for (size_t i = 0; i < counts.n; i++) {
        fwrite(counts.k[i].name, 1, counts.k[i].len, out);
        fprintf(out, "\t%llu\n", (unsigned long long)counts.k[i].n);
    }
    kind_counts_free(&counts);
    as_cli_close_text(&cli, out);
    return 0;
}
