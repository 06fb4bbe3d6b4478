/* json.h - print msgpack objects as JSON (used by as-show and the text outputs).
 * Array maps {"dtype","shape","data"} are printed summarised as dtype, shape and the first
 * values ("head") unless full is set, in which case "data" becomes the list of values.
 * Other bin values print as {"bin_bytes": n}. NaN and infinities print as null. */
#ifndef AS_JSON_H
#define AS_JSON_H

#include <stdio.h>
#include <msgpack.h>

void as_json_print(FILE *f, const msgpack_object *o, int full, int head);
void as_json_string(FILE *f, const char *s, size_t n);
void as_json_double(FILE *f, double v, int is_float32);

#endif
