/* test_evaltext.c - a label or name as one field of as-eval's tables (lib/eval/evaltext.h):
 * as_eval_csv_field's RFC 4180 quoting (in double quotes, its quotes doubled, only when it
 * holds a comma, a quote, CR or LF) and as_eval_md_cell's escapes ('|' and '\' behind '\'),
 * each compared byte for byte with what was written, to a memory stream and to a real file. */
#include "unit.h"

#include "evaltext.h"

#include <stdlib.h>
#include <string.h>

/* what fn writes of s, in memory (NUL-terminated; *len its bytes) */
static char *written(void (*fn)(FILE *, const char *), const char *s, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    fn(f, s);
    fclose(f);
    if (len) *len = n;
    return buf;
}

/* s as fn writes it equals want, byte for byte, with nothing after it */
static void same(void (*fn)(FILE *, const char *), const char *s, const char *want)
{
    size_t n;
    char *got = written(fn, s, &n);
    CHECK_EQ_I64(n, strlen(want));
    CHECK_STR(got, want);
    free(got);
}

TEST(evaltext_csv_plain_unquoted)
{
    same(as_eval_csv_field, "size-greedy", "size-greedy");
    same(as_eval_csv_field, "", "");
    /* what only markdown or a shell minds, and a space or tab: not quoted */
    same(as_eval_csv_field, "a|b\\c 'd'\te;f", "a|b\\c 'd'\te;f");
    same(as_eval_csv_field, "torchrec-own", "torchrec-own");
}

TEST(evaltext_csv_quoted)
{
    /* a comma */
    same(as_eval_csv_field, "own,json", "\"own,json\"");
    same(as_eval_csv_field, ",", "\",\"");
    /* a quote: doubled, in quotes */
    same(as_eval_csv_field, "say \"hi\"", "\"say \"\"hi\"\"\"");
    same(as_eval_csv_field, "\"", "\"\"\"\"");
    same(as_eval_csv_field, "\"\"", "\"\"\"\"\"\"");
    /* CR and LF: kept as they are, in quotes */
    same(as_eval_csv_field, "a\rb", "\"a\rb\"");
    same(as_eval_csv_field, "a\nb", "\"a\nb\"");
    same(as_eval_csv_field, "\r\n", "\"\r\n\"");
    /* all of them at once */
    same(as_eval_csv_field, "x,\"y\"\r\nz", "\"x,\"\"y\"\"\r\nz\"");
}

/* written after other text in one stream: the field alone is added, nothing before or after
 * it (no separator, no newline) */
TEST(evaltext_csv_into_a_file)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    fputs("1,", f);
    as_eval_csv_field(f, "a,b");
    fputc(',', f);
    as_eval_csv_field(f, "plain");
    fputc(',', f);
    as_eval_csv_field(f, "q\"");
    fputc('\n', f);
    const char want[] = "1,\"a,b\",plain,\"q\"\"\"\n";
    CHECK_EQ_I64(ftell(f), (long)strlen(want));
    rewind(f);
    char got[64] = { 0 };
    const size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    CHECK_EQ_I64(n, strlen(want));
    CHECK(memcmp(got, want, sizeof want - 1) == 0);
}

TEST(evaltext_md_cell)
{
    same(as_eval_md_cell, "size-greedy", "size-greedy");
    same(as_eval_md_cell, "", "");
    same(as_eval_md_cell, "|", "\\|");
    same(as_eval_md_cell, "\\", "\\\\");
    same(as_eval_md_cell, "a|b\\c", "a\\|b\\\\c");
    same(as_eval_md_cell, "||\\\\", "\\|\\|\\\\\\\\");
    /* what CSV quotes is plain text in markdown */
    same(as_eval_md_cell, "a,\"b\"`*_", "a,\"b\"`*_");
    /* after other text in one stream: nothing added around it */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    fputs("| ", f);
    as_eval_md_cell(f, "x|y");
    fputs(" | ", f);
    as_eval_md_cell(f, "z");
    fputs(" |\n", f);
    fclose(f);
    CHECK_EQ_I64(n, strlen("| x\\|y | z |\n"));
    CHECK_STR(buf, "| x\\|y | z |\n");
    free(buf);
}
