/* fuzz_pickle.c - the restricted pickle interpreter (lib/torch/pickle.c) on its own, with
 * permissive hooks (every global allowed, persistent ids and calls returned as objects), so
 * that every opcode path is reachable; the torch hooks are fuzzed by fuzz_torchsave.
 * Input: pickle bytes, possibly several pickles one after another. */
#include "fuzz.h"
#include "pickle.h"

#include <stdlib.h>

static as_pickle_obj *find_class(as_pickle *p, void *ctx, const char *module, const char *name)
{
    (void)ctx;
    if (!strcmp(module, "os")) return as_pickle_fail(p, "global '%s %s' is not allowed", module, name);
    return as_pickle_global(p, module, name, 1);
}

static as_pickle_obj *persistent_load(as_pickle *p, void *ctx, as_pickle_obj *pid)
{
    (void)p; (void)ctx;
    return pid;
}

static as_pickle_obj *call(as_pickle *p, void *ctx, as_pickle_obj *callable, as_pickle_obj *args)
{
    (void)ctx; (void)callable;
    if (args->kind == AS_PK_TUPLE && args->u.c.n == 0) return as_pickle_obj_new(p, AS_PK_DICT);
    return args;
}

/* walk what was built (bounded: depth and visits), reading every field */
static size_t touch(const as_pickle_obj *o, int depth, size_t *visits)
{
    if (!o || depth > 32 || ++*visits > 100000) return 0;
    size_t s = (size_t)o->kind;
    switch (o->kind) {
    case AS_PK_STR: case AS_PK_BYTES: case AS_PK_GLOBAL:
        s += o->u.s.len + (o->u.s.len ? (uint8_t)o->u.s.p[o->u.s.len - 1] : 0) + (uint8_t)o->u.s.p[o->u.s.len];
        break;
    case AS_PK_TUPLE: case AS_PK_LIST: case AS_PK_SET: case AS_PK_DICT:
        for (uint32_t i = 0; i < o->u.c.n; i++) s += touch(o->u.c.v[i], depth + 1, visits);
        break;
    default: break;
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_pickle_hooks hooks = { NULL, find_class, persistent_load, call };
    as_pickle *p = as_pickle_new(&hooks);
    if (!p) return 0;
    uint64_t pos = 0;
    for (int k = 0; k < 8 && pos < size; k++) {
        uint64_t next = 0;
        as_pickle_obj *o = as_pickle_load(p, data + pos, size - pos, -1, 0, 0, &next);
        if (!o) {
            const char *e = as_pickle_error(p);
            if (!e || strncmp(e, "pickle: ", 8)) abort();   /* errors are one "pickle: " line */
            break;
        }
        size_t visits = 0;
        volatile size_t sink = touch(o, 0, &visits);
        (void)sink;
        if (next == 0 || next > size - pos) abort();       /* STOP was consumed, inside the input */
        pos += next;
    }
    as_pickle_free(p);
    return 0;
}
