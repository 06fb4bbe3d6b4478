/* planlabel.c - plan labels: the planners' names, the suffixes; see planlabel.h */
#include "planlabel.h"

#include <stdio.h>
#include <string.h>

static const char *const ALG_NAMES[AS_ALG_COUNT] = {
#define AS_PLANNER(E, name, ident) name,
#include "planners.def"
#undef AS_PLANNER
};

const char *as_alg_name(as_alg a)
{
    return (unsigned)a < AS_ALG_COUNT ? ALG_NAMES[a] : "?";
}

int as_alg_parse(const char *s, as_alg *out)
{
    for (int a = 0; a < AS_ALG_COUNT; a++)
        if (!strcmp(s, ALG_NAMES[a])) { *out = (as_alg)a; return 0; }
    return -1;
}

void as_plan_label_parse(const char *label, as_plan_label *l)
{
    memset(l, 0, sizeof *l);
    snprintf(l->base, sizeof l->base, "%s", label);
    char *plus = strchr(l->base, '+');
    if (plus) *plus = 0;
    l->known = !as_alg_parse(l->base, &l->alg);
    l->split = strstr(label, "+split") != NULL;
    l->replicated = strstr(label, "+dp") != NULL;
    l->refined = strstr(label, AS_REFINE_SUFFIX) != NULL;
    const char *m = strstr(label, "+measured");
    if (m) {
        m += strlen("+measured");
        int n = 0;
        for (; *m >= '0' && *m <= '9' && n < 1000000; m++) n = n * 10 + (*m - '0');
        l->measured = n > 1 ? n : 1;
    }
}

const char *as_plan_label_format(as_alg a, int split, int replicated, int refined, int measured, char *buf, size_t len)
{
    char m[32] = "";
    if (measured == 1) snprintf(m, sizeof m, "+measured");
    else if (measured > 1) snprintf(m, sizeof m, "+measured%d", measured);
    snprintf(buf, len, "%s%s%s%s%s", as_alg_name(a), split ? "+split" : "", replicated ? "+dp" : "",
             refined ? AS_REFINE_SUFFIX : "", m);
    return buf;
}

int as_alg_parse_label(const char *s, as_alg *out, int *refined)
{
    as_plan_label l;
    as_plan_label_parse(s, &l);
    *refined = 0;
    char want[96];
    if (!l.known || strcmp(as_plan_label_format(l.alg, 0, 0, l.refined, 0, want, sizeof want), s)) return -1;
    *out = l.alg;
    *refined = l.refined;
    return 0;
}

int as_plan_label_next(const char **p, char *tok, size_t len)
{
    const char *s = *p;
    if (!s || !*s) return 0;
    size_t n = s[0] == '=' ? strlen(s) : strcspn(s, ",");
    *p = s + n + (s[n] == ',');
    if (len) snprintf(tok, len, "%.*s", (int)n, s);
    return n < len ? 1 : -1;
}
