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

/* One file's records printed to out or, with -c, counted. The loop is its own, not
 * as_read_records': a file that cannot be opened is reported at once, whatever is still
 * buffered for out printed after the message at exit, while a bad record is reported
 * after out is flushed; as_read_records' one error return cannot tell the two apart. */
static void show_file(FILE *out, const char *path, const show_args *a, as_reccount *counts)
{
    as_reader *r = as_reader_open(path);
    if (!r) exit(AS_EXIT_DATA);
    as_record rec;
    int rc;
    while ((rc = as_reader_next(r, &rec)) == 1) {
        if (!wanted(a, &rec)) continue;
        if (a->count) {
            as_reccount_add(counts, rec.kind, rec.kindlen);
            continue;
        }
        as_json_print(out, &rec.obj, a->full, a->head);
        fputc('\n', out);
    }
    if (rc < 0) {
        /* print what came before, then the error */
        fflush(out);
        as_die(AS_EXIT_DATA, "%s", as_reader_error(r));
    }
    as_reader_close(r);
}

int main(int argc, char **argv)
{
    as_cli cli;
    as_cli_init(&cli, argc, argv, "as-show", "as-show [options] [FILE...]", HELP);
    show_args a;
    parse_args(&cli, argc, argv, &a);
    FILE *out = as_cli_open_text(&cli);
    char *none[] = { "-" };
    char **files = optind < argc ? argv + optind : none;
    int nfiles = optind < argc ? argc - optind : 1;
    as_reccount counts = { 0 };   /* -c */
    for (int fi = 0; fi < nfiles; fi++) show_file(out, files[fi], &a, &counts);
    for (size_t i = 0; i < counts.n; i++) {
        fwrite(counts.k[i].name, 1, counts.k[i].len, out);
        fprintf(out, "\t%llu\n", (unsigned long long)counts.k[i].n);
    }
    as_reccount_free(&counts);
    as_cli_close_text(&cli, out);
    return 0;
}
