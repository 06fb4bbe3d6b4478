/* reclimits.h - what one record may make, and the range-checked reading of record fields.
 *
 * Every field a record carries is checked once, when the record is parsed, by the parser of
 * its kind (table.c: table; featurize.c: features; planrec.c: task, plan; costrec.c: cost;
 * mcfgrec.c: model-config; costmodel.c: model; policy.c: policy; rl.c: rl_buffer), through
 * the getters below,
 * so a number that would overflow an allocation size or a product later is refused as bad
 * data (exit 1) with a message naming the field; the caller adds the input and the record.
 *
 * The limits bound what one (small) record can make a tool allocate or loop over. Each has
 * a default and an environment variable that changes it (up to a hard maximum, which keeps
 * the products of fields inside int64); docs/FORMAT.md lists them. Dimension letters: T
 * tables, K shards, E rows, D dim.
 */
#ifndef AS_RECLIMITS_H
#define AS_RECLIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

typedef enum {
    AS_LIM_TABLE_ID,    /* largest table id (ids index dense per-pool arrays) */
    AS_LIM_TABLES,      /* T: tables in one task, plan, shard or cost record */
    AS_LIM_SHARDS,      /* K: shards of one task or plan */
    AS_LIM_PAIRS,       /* T x K of one task or plan */
    AS_LIM_ROWS,        /* E: rows of one table */
    AS_LIM_DIM,         /* D: dim of one table */
    AS_LIM_OBJECTS,     /* msgpack objects in one record (the unpacker needs ~24 bytes each) */
    AS_LIM_COUNT
} as_limit_id;

/* rows x dim of one table (weight elements), fixed: keeps the weight bytes of a task (at
 * most 2^20 tables of 2^40 fp32 elements) inside int64 */
#define AS_MAX_TABLE_ELEMENTS ((int64_t)1 << 40)

/* the limit in force: the default, or the environment's value. A value that is not a count
 * in 1..hard maximum is a usage error (exit 2) that the command-line layer reports before
 * any work (as_limits_check, called by as_cli_finish and as_cli_lim); as_limit itself
 * never fails and uses the default for it. */
int64_t as_limit(as_limit_id l);
/* 0 when every limit's environment variable is unset, empty or a count in 1..hard maximum;
 * else -1 with err ("AS_MAX_SHARDS: '0' is not a count in 1..1048576 (the limit on ...)") */
int as_limits_check(char *err, size_t errlen);
int64_t as_limit_default(as_limit_id l);
const char *as_limit_env(as_limit_id l);     /* "AS_MAX_SHARDS", ... */
const char *as_limit_what(as_limit_id l);    /* "shards per task or plan", ... */
/* tests: forget the cached values so a changed environment is read again */
void as_limit_reset(void);

/* ---- range-checked fields: 0 ok; -1 with err ("'rows' = 5 is outside 1..4") ------------ */

/* a required integer field in [lo, hi] */
int as_field_i64(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 char *err, size_t errlen);
/* a required integer field in [lo, as_limit(l)]; the message names the limit's variable */
int as_field_lim(const msgpack_object *map, const char *key, int64_t lo, as_limit_id l, int64_t *out,
                 char *err, size_t errlen);
/* an optional integer field (absent or nil: *out untouched, returns 0) in [lo, hi] */
int as_field_i64_opt(const msgpack_object *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                     char *err, size_t errlen);
/* a required number (ints accepted), finite and in [lo, hi] */
int as_field_f64(const msgpack_object *map, const char *key, double lo, double hi, double *out,
                 char *err, size_t errlen);
/* an optional number (absent or nil: *out untouched, returns 0), finite and in [lo, hi] */
int as_field_f64_opt(const msgpack_object *map, const char *key, double lo, double hi, double *out,
                     char *err, size_t errlen);
/* an optional string field (absent: *out untouched, returns 0) equal to one of the NULL-ended
 * list names (a flag or a name like "model"/"bench"); out[len] */
int as_field_str_opt(const msgpack_object *map, const char *key, const char *const *names, char *out, size_t len,
                     char *err, size_t errlen);
/* a float32 array field of exactly n elements (an array map, shape [n]), every element finite
 * and in [lo, hi], copied into out[n] (model parameters, optimiser state) */
int as_field_f32_array(const msgpack_object *map, const char *key, int64_t n, float lo, float hi, float *out,
                       char *err, size_t errlen);
/* a msgpack array of exactly n finite numbers in [lo, hi] */
int as_field_f64_list(const msgpack_object *map, const char *key, int n, double lo, double hi, double *out,
                      char *err, size_t errlen);
/* a msgpack array of at most AS_LIM_TABLES table ids, each in 0..AS_LIM_TABLE_ID; *ids is
 * malloc'd (at least one element) */
int as_field_table_ids(const msgpack_object *map, const char *key, int64_t **ids, int64_t *n,
                       char *err, size_t errlen);
/* a table-id list from the command line ("3,17,42", "0-63", "0-9,12": as_parse_i64_list),
 * each id in 0..AS_LIM_TABLE_ID like the ids of records (an id above names no table any
 * tool reads); *ids malloc'd; 0, or -1 when s is not such a list */
int as_parse_table_ids(const char *s, int64_t **ids, size_t *n);
/* 1 when an id appears twice in ids[0..n) (*dup = the smallest such id), else 0; for lists
 * that name a set of tables (as-bench --reference: one shard holds a table once) */
int as_table_ids_duplicate(const int64_t *ids, size_t n, int64_t *dup);
/* a plan's entry held whole by every shard, each shard looking up its share of the batch
 * (data parallel, TorchRec's data_parallel): its `assign` value */
#define AS_DP (-2)
/* a plan's assignment: a msgpack array of exactly n ints, each a shard in 0..K-1, -1
 * (unplaced) or AS_DP (-2: data parallel, on every shard); *out malloc'd; *unplaced counts
 * the -1 */
int as_field_assign(const msgpack_object *map, const char *key, int64_t n, int64_t K, int64_t **out,
                    int64_t *unplaced, char *err, size_t errlen);

/* the weight bytes of a table of rows x dim elements of elt bytes; -1 (err set) when rows,
 * dim or their product is out of range. The one place rows x dim is multiplied. */
int as_table_bytes(int64_t rows, int64_t dim, int64_t elt, int64_t *out, char *err, size_t errlen);
/* T x K of a task or plan within AS_LIM_PAIRS; -1 with err */
int as_check_pairs(int64_t T, int64_t K, char *err, size_t errlen);


/* ---- fields as they stand: never refused, each with where it stood (for readers that read
 * every field of a record and leave the checks to each caller, lib/records/costrec.h) ----- */

/* where a field stood: absent, nil, a value of its type, or something else. Writers write a
 * value where AS_F_SET and nil otherwise (the fields that may be nil) */
typedef enum { AS_F_ABSENT = 0, AS_F_NIL, AS_F_SET, AS_F_OTHER } as_fhas;
/* a number (ints read as numbers, as_obj_f64): v when SET, else NAN */
typedef struct {
    double v;
    as_fhas has;
} as_fnum;
/* an integer within int64 (as_obj_i64; a bool: 0 or 1): v when SET, else 0 */
typedef struct {
    int64_t v;
    as_fhas has;
} as_fint;
/* a string: s when SET (read: malloc'd, NUL-terminated; a NUL inside ends it early; free with
 * as_fstr_free), else NULL */
typedef struct {
    const char *s;
    as_fhas has;
} as_fstr;
void as_fread_num(const msgpack_object *map, const char *key, as_fnum *f);
void as_fread_int(const msgpack_object *map, const char *key, as_fint *f);
void as_fread_bool(const msgpack_object *map, const char *key, as_fint *f);
void as_fread_str(const msgpack_object *map, const char *key, as_fstr *f);
/* the state of o, a field that is a value of its type when set (o NULL: absent) */
as_fhas as_fhas_of(const msgpack_object *o, int set);
void as_fstr_free(as_fstr *f);   /* a string read: freed, NULL */

#endif
