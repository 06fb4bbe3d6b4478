/* evaltext.h - the formats of as-eval's tables (text, markdown, CSV), and a label or name (a
 * plan's alg, its split) as one field of them. */
#ifndef AS_EVALTEXT_H
#define AS_EVALTEXT_H

#include <stdio.h>

typedef enum { AS_EVAL_TEXT, AS_EVAL_MARKDOWN, AS_EVAL_CSV } as_eval_format;

/* as_eval_csv_field writes s as an RFC 4180 CSV field (as it is, or in double quotes with its quotes doubled when
 * it holds a comma, a quote, CR or LF); as_eval_md_cell as markdown table text ('|' and '\'
 * escaped with '\'). The names' rule (as_name_bad) keeps control characters out of them. */
void as_eval_csv_field(FILE *f, const char *s);
void as_eval_md_cell(FILE *f, const char *s);

#endif
