/* reccount.c - records counted by kind; see reccount.h */
#include "reccount.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

static uint64_t kind_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a */
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 0x100000001b3ULL; }
    return h;
}

/* the slots rebuilt, twice as many (64 at first), when one more kind would fill half */
static void grow_slots(as_reccount *c)
{
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

void as_reccount_add(as_reccount *c, const char *name, size_t len)
{
    if (2 * (c->n + 1) > c->nslot) grow_slots(c);
    size_t j = kind_hash(name, len) & (c->nslot - 1);
    for (; c->slot[j]; j = (j + 1) & (c->nslot - 1)) {
        as_reccount_kind *k = &c->k[c->slot[j] - 1];
        if (k->len == len && !memcmp(k->name, name, len)) { k->n++; return; }
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->k = as_realloc(c->k, c->cap * sizeof *c->k);
    }
    as_reccount_kind *k = &c->k[c->n];
    k->name = as_malloc(len + 1);
    memcpy(k->name, name, len);
    k->name[len] = 0;
    k->len = len;
    k->n = 1;
    c->slot[j] = ++c->n;
}

void as_reccount_free(as_reccount *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) free(c->k[i].name);
    free(c->k);
    free(c->slot);
    memset(c, 0, sizeof *c);
}
