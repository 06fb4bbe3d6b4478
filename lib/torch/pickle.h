/* pickle.h - a small, restricted Python pickle interpreter (protocols 0-5) for hostile input.
 *
 * It builds a plain object graph (none, bool, int, float, str, bytes, tuple, list, dict, set,
 * globals) and never executes anything: GLOBAL/STACK_GLOBAL, BINPERSID/PERSID and
 * REDUCE/NEWOBJ are handed to caller hooks, which decide what a global means and may refuse
 * it. BUILD pops its state and leaves the object unchanged. INST, OBJ, EXT1/2/4 and the
 * out-of-band buffer opcodes are rejected.
 *
 * Every length is checked against the bytes that remain; the stack, the mark stack, the memo,
 * the number of objects, container items and string bytes are capped (AS_PICKLE_MAX_*), so a
 * claimed length never turns into a huge allocation. The interpreter is a loop (no recursion).
 * Input comes from memory or from a byte range of a file descriptor (read with pread in
 * chunks, so a pickle embedded in a large file is never loaded whole).
 *
 * Errors: functions return NULL / -1 and as_pickle_error() gives one line starting with
 * "pickle: "; nothing prints or exits. Objects live until as_pickle_free().
 */
#ifndef AS_PICKLE_H
#define AS_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#define AS_PICKLE_MAX_OBJECTS  (1 << 22)   /* objects created in one as_pickle context */
#define AS_PICKLE_MAX_STACK    (1 << 22)   /* value stack entries */
#define AS_PICKLE_MAX_MARKS    (1 << 16)   /* nested MARKs */
#define AS_PICKLE_MAX_MEMO     (1 << 22)   /* highest memo index + 1 */
#define AS_PICKLE_MAX_ITEMS    (1 << 24)   /* items in all containers together */
#define AS_PICKLE_MAX_STRBYTES ((size_t)1 << 28) /* bytes in all strings together */
#define AS_PICKLE_MAX_LINE     (1 << 20)   /* a text-opcode line (protocol 0) */

typedef enum {
    AS_PK_NONE, AS_PK_BOOL, AS_PK_INT, AS_PK_BIGINT, AS_PK_HUGEINT, AS_PK_FLOAT,
    AS_PK_STR, AS_PK_BYTES, AS_PK_TUPLE, AS_PK_LIST, AS_PK_DICT, AS_PK_SET, AS_PK_GLOBAL,
    AS_PK_USER   /* first kind free for hook-made objects (payload in u.x) */
} as_pickle_kind;

typedef struct as_pickle_obj as_pickle_obj;
struct as_pickle_obj {
    int kind;
    int tag;                                        /* GLOBAL: the hook's id for it */
    union {
        int64_t i;                                  /* BOOL (0/1), INT */
        __int128 big;                               /* BIGINT: fits 128 bits; HUGEINT: none */
        double f;                                   /* FLOAT */
        struct { char *p; size_t len; } s;          /* STR (UTF-8), BYTES; NUL-terminated;
                                                       GLOBAL: "module name" */
        struct { as_pickle_obj **v; uint32_t n, cap; } c; /* TUPLE, LIST, SET: items;
                                                       DICT: key, value, key, value ... (n even) */
        struct { int64_t a, b, c; } x;              /* USER kinds */
    } u;
};

typedef struct as_pickle as_pickle;

typedef struct {
    void *ctx;
    /* GLOBAL module name: return an object (usually made with as_pickle_global) or NULL after
     * as_pickle_fail(). NULL hook: every global is refused. */
    as_pickle_obj *(*find_class)(as_pickle *p, void *ctx, const char *module, const char *name);
    /* BINPERSID / PERSID */
    as_pickle_obj *(*persistent_load)(as_pickle *p, void *ctx, as_pickle_obj *pid);
    /* REDUCE (callable, args tuple) and NEWOBJ (cls, args tuple) */
    as_pickle_obj *(*call)(as_pickle *p, void *ctx, as_pickle_obj *callable, as_pickle_obj *args);
} as_pickle_hooks;

as_pickle *as_pickle_new(const as_pickle_hooks *hooks);  /* NULL when out of memory */
void as_pickle_free(as_pickle *p);                       /* frees every object too */

/* Run one pickle (up to and including STOP). The memo and stack start empty; objects of
 * earlier loads stay valid. Input: buf[0..len) when buf is non-NULL, else bytes
 * [start, end) of fd. *next (may be NULL) gets the position after STOP (relative to buf, or
 * the file offset). Returns the unpickled object, or NULL with the error set. */
as_pickle_obj *as_pickle_load(as_pickle *p, const void *buf, size_t len, int fd,
                              uint64_t start, uint64_t end, uint64_t *next);

const char *as_pickle_error(const as_pickle *p);
/* set the error (printf-style; "pickle: " is prepended); returns NULL for tail calls */
void *as_pickle_fail(as_pickle *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* a new object of this kind (payload zeroed), or NULL with the error set */
as_pickle_obj *as_pickle_obj_new(as_pickle *p, int kind);
/* a GLOBAL object naming "module name" with tag = id */
as_pickle_obj *as_pickle_global(as_pickle *p, const char *module, const char *name, int id);

/* helpers for hooks */
int as_pickle_is_str(const as_pickle_obj *o, const char *s);   /* STR equal to s */
const char *as_pickle_kind_name(int kind);                     /* "int", "tuple", ... */

#endif
