/* as-show - print any autoshard stream as JSON lines, one record per line. */
#include "cli.h"
#include "common.h"
#include "json.h"
#include "reccount.h"
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

/* the command line */
typedef struct {
    int full, head, noheader, count;
    const char *kinds[32];          /* -k KIND */
    int nkinds;
} show_args;

static void parse_args(as_cli *cli, int argc, char **argv, show_args *a)
{
    static const struct option opts[] = {
        { "full", no_argument, 0, OPT_FULL },
        { "head", required_argument, 0, OPT_HEAD },
        { "kind", required_argument, 0, 'k' },
        { "no-header", no_argument, 0, OPT_NOHEADER },
        { "count", no_argument, 0, 'c' },
        AS_CLI_COMMON_OPTIONS
    };
    *a = (show_args){ .head = 8 };
    int opt;
    while ((opt = getopt_long(argc, argv, AS_CLI_COMMON_SHORT "k:c", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_FULL: a->full = 1; break;
        case OPT_HEAD: a->head = (int)as_cli_i64(cli, "--head", optarg, 0, 1000000); break;
        case 'k':
            if (a->nkinds == 32) as_cli_usage(cli, "too many --kind options");
            a->kinds[a->nkinds++] = optarg;
            break;
        case OPT_NOHEADER: a->noheader = 1; break;
        case 'c': a->count = 1; break;
        default:
            if (!as_cli_common(cli, opt, optarg)) as_cli_usage(cli, "unknown option");
        }
    }
    as_cli_finish(cli);
}

/* the record is one to show: not a header left out, of a kind asked for */
static int wanted(const show_args *a, const as_record *rec)
{
    if (a->noheader && as_rec_is(rec, "header")) return 0;
    if (!a->nkinds) return 1;
    int want = 0;
    for (int i = 0; i < a->nkinds; i++) want |= as_rec_is(rec, a->kinds[i]);
    return want;
}

/* what a record's step needs */
typedef struct {
    FILE *out;
    const show_args *a;
    as_reccount *counts;
} show_ctx;

/* one record (as_record_fn) printed to out or, with -c, counted */
static int show_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    (void)r, (void)err, (void)errlen;
    show_ctx *x = ctx;
    if (!wanted(x->a, rec)) return 0;
    if (x->a->count) {
        as_reccount_add(x->counts, rec->kind, rec->kindlen);
        return 0;
    }
    as_json_print(x->out, &rec->obj, x->a->full, x->a->head);
    fputc('\n', x->out);
    return 0;
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-show", "as-show [options] [FILE...]", HELP);
    show_args a;
    parse_args(&cli, argc, argv, &a);
    FILE *out = as_cli_open_text(&cli);
    as_reccount counts = { 0 };   /* -c */
    show_ctx x = { out, &a, &counts };
    char err[1024];
    if (as_read_records(argv + optind, argc - optind, show_rec, &x, err, sizeof err)) {
        /* print what came before, then the error */
        fflush(out);
        as_die(AS_EXIT_DATA, "%s", err);
    }
    for (size_t i = 0; i < counts.n; i++) {
        fwrite(counts.k[i].name, 1, counts.k[i].len, out);
        fprintf(out, "\t%llu\n", (unsigned long long)counts.k[i].n);
    }
    as_reccount_free(&counts);
    as_cli_close_text(&cli, out);
    return 0;
}
