/* reccount.h - records counted by kind (as-show -c): one count per kind, in order of first
 * appearance, for any number of kinds of any length. An open-addressing table of positions
 * (FNV-1a of the name, linear probing, at most half full); kind names are copied whole, so
 * they need not outlive the record they came from. */
#ifndef AS_RECCOUNT_H
#define AS_RECCOUNT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *name;             /* NUL-terminated copy (a kind holding a NUL is counted by len) */
    size_t len;
    uint64_t n;             /* records of this kind */
} as_reccount_kind;

typedef struct {
    as_reccount_kind *k;    /* [n] in order of first appearance */
    size_t n, cap;
    size_t *slot;           /* [nslot] position + 1, 0 = empty; nslot a power of two */
    size_t nslot;
} as_reccount;

/* count one record of kind name[0..len); start from a zeroed as_reccount */
void as_reccount_add(as_reccount *c, const char *name, size_t len);
/* the kinds' names and the table; NULL: nothing. c is left empty (zeroed) */
void as_reccount_free(as_reccount *c);

#endif
