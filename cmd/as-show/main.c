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
    struct { char name[64]; uint64_t n; } counts[256];
    int ncounts = 0;
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
                int i;
                for (i = 0; i < ncounts; i++)
                    if (strlen(counts[i].name) == rec.kindlen && !memcmp(counts[i].name, rec.kind, rec.kindlen)) break;
                if (i == ncounts && ncounts < 256) {
                    size_t n = rec.kindlen < 63 ? rec.kindlen : 63;
                    memcpy(counts[i].name, rec.kind, n);
                    counts[i].name[n] = 0;
                    counts[i].n = 0;
                    ncounts++;
                }
                if (i < ncounts) counts[i].n++;
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
    for (int i = 0; i < ncounts; i++) fprintf(out, "%s\t%llu\n", counts[i].name, (unsigned long long)counts[i].n);
    as_cli_close_text(&cli, out);
    return 0;
}
