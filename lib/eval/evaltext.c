/* evaltext.c - a label or name as one field of as-eval's tables; see evaltext.h */
#include "evaltext.h"

#include <string.h>

void as_eval_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void as_eval_md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}
