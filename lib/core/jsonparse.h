/* jsonparse.h - a strict JSON decoder (RFC 8259) into msgpack objects, so that JSON text
 * (a configuration file) reads with the accessors of stream.h (as_obj_get, as_obj_i64, ...).
 *
 * Mapping: object -> MSGPACK_OBJECT_MAP (STR keys, in the order of the text); array ->
 * ARRAY; string -> STR (UTF-8; \uXXXX escapes decoded, surrogate pairs joined, \u0000 kept
 * as an embedded NUL byte counted in the size); true/false -> BOOLEAN; null -> NIL; a number
 * without fraction or exponent that fits int64 -> POSITIVE_INTEGER (via.u64, >= 0; "-0" is
 * 0) or NEGATIVE_INTEGER (via.i64, < 0); any other number -> FLOAT64 (via.f64, strtod of the
 * token; the tools run in the C locale), an integer beyond int64 included.
 *
 * Strict: exactly one value with only whitespace (space, tab, CR, LF) around it; no
 * trailing commas, comments, single quotes, leading zeros, '+' signs, ".5" or "1.", NaN or
 * Infinity; numbers that overflow a double (1e400) are errors. In strings: control bytes
 * (< 0x20) and invalid escapes are errors, \u escapes must not leave a lone surrogate, raw
 * bytes must be valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
 * A NUL byte anywhere is an error. A key repeated within one object is an error, reported
 * when the object closes (at the second occurrence of the earliest repeat). Containers nest
 * at most AS_JSONP_MAX_DEPTH deep. The parser never reads past n bytes, does not recurse,
 * and works in time O(n log n) at worst (arrays and objects are collected on a growable
 * stack, then copied into the zone; repeated keys of a large object are found by sorting).
 */
#ifndef AS_JSONPARSE_H
#define AS_JSONPARSE_H

#include <stddef.h>
#include <msgpack.h>

#define AS_JSONP_MAX_DEPTH 64

/* Parse the n bytes of JSON text at text (need not be NUL-terminated) into *out; every
 * string, array and map of the result is allocated from zone, which the caller owns
 * (msgpack_zone_init / msgpack_zone_new) and frees when done with *out. Returns 0, or -1
 * with *out nil and a message in err (err may be NULL): "line L, column C: what is wrong",
 * L and C 1-based, C counted in bytes, naming the offending byte ("line 3, column 14:
 * expected ',' or '}' after a member"; "line 1, column 9: duplicate key \"name\""; for an
 * unterminated string, its opening quote; at the end of the input, the position after the
 * last byte). On error the zone may hold parts of the tree; they go with the zone. */
int as_jsonp_parse(const char *text, size_t n, msgpack_zone *zone, msgpack_object *out, char *err, size_t errlen);

#endif
