/* torchsave.h - read torch.save files in C, without Python.
 *
 * Formats: the zip format (PyTorch >= 1.6, ZIP64 included) and the legacy format
 * (magic number, protocol, sys_info, pickle, storage keys, raw storages), either plain or
 * gzip-compressed (.pt.gz, detected by magic bytes, not by name). A gzip or non-seekable
 * input (a pipe, "-" = stdin) is decompressed once into an unlinked temporary file in
 * $TMPDIR (default /tmp), so memory stays bounded whatever the file size.
 *
 * The pickle interpreter accepts only tensor rebuilds (torch._utils._rebuild_tensor_v2/_v3),
 * storage classes (torch.XStorage, torch.storage.UntypedStorage / TypedStorage), dtype
 * globals (torch.float32 ...) and collections.OrderedDict; containers are tuple, list, dict.
 * Anything else is rejected with a clear error and never executed. Ints, floats, strings,
 * bools and None may appear in containers (they are not tensors and are not listed).
 *
 * Every error is reported through the err buffer as one line (no trailing newline),
 * e.g. "zip: central directory entry 3 lies outside the file" or
 * "pickle: global 'os system' is not allowed"; the functions never print and never exit.
 */
#ifndef AS_TORCHSAVE_H
#define AS_TORCHSAVE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PT_BOOL, PT_UINT8, PT_INT8, PT_INT16, PT_INT32, PT_INT64,
    PT_FLOAT16, PT_BFLOAT16, PT_FLOAT32, PT_FLOAT64, PT_NDTYPES
} pt_dtype;

const char *pt_dtype_name(pt_dtype d);   /* "int32", "float16", "bool", ... (torch names) */
size_t pt_dtype_size(pt_dtype d);

#define PT_MAX_DIMS 8

typedef struct {
    char path[256];           /* where the tensor sits in the object, Python syntax relative to
                                 the root: "" for a bare tensor, "[0]", "['lS_indices'][3]" */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    int64_t stride[PT_MAX_DIMS];   /* in elements */
    int64_t storage_offset;        /* in elements */
    int storage;                   /* index of its storage (shared storages share it) */
    int64_t numel;                 /* product of shape */
} pt_tensor;

typedef struct pt_file pt_file;

/* Limits on what one input may make (docs/FORMAT.md, "Limits on torch.save input"), so a
 * small hostile file cannot turn into gigabytes of memory or of $TMPDIR. 0 = no limit.
 *   max_spool    bytes a gzip'd or piped input may take in $TMPDIR once decompressed
 *                (env AS_MAX_SPOOL, sizes with K/M/G/T suffixes; default 16G)
 *   max_ratio    gzip: decompressed bytes per compressed byte consumed, checked once the
 *                output passes PT_RATIO_FREE bytes (env AS_MAX_GZIP_RATIO; default 100)
 *   max_tensors  tensor rebuilds in the pickle and tensors listed from the object graph,
 *                where shared containers count once per path (env AS_MAX_TENSORS;
 *                default 65536) */
typedef struct {
    uint64_t max_spool;
    double max_ratio;
    int64_t max_tensors;
} pt_limits;

#define PT_DEFAULT_MAX_SPOOL ((uint64_t)16 << 30)  /* over twice the 2022 MetaSyn set (6.9 GB) */
#define PT_DEFAULT_MAX_RATIO 100.0
#define PT_DEFAULT_MAX_TENSORS 65536
#define PT_RATIO_FREE ((uint64_t)16 << 20)

/* the defaults, overridden by the environment variables above; -1 with err naming the
 * variable when one is malformed */
int pt_limits_init(pt_limits *l, char *err, size_t errlen);

/* Open and parse the structure (zip directory / legacy pickles, the object pickle, the
 * storages' sizes and locations). Storage bytes are not read. Bounds are checked: every
 * tensor's extent (offset, shape, strides) must lie inside its storage.
 * Returns NULL and fills err on failure. path "-" reads stdin. */
pt_file *pt_open(const char *path, char *err, size_t errlen);
/* pt_open with explicit limits (NULL: pt_limits_init's; pt_open fails on a malformed
 * environment variable) */
pt_file *pt_open_limits(const char *path, const pt_limits *lim, char *err, size_t errlen);
/* pt_open_limits, and *code (when not NULL) the exit status a failure deserves: AS_EXIT_ENV
 * (3) when the environment failed (gzip'd or piped input needs a temporary file in $TMPDIR,
 * which is missing or full; out of memory), AS_EXIT_USAGE (2) when a named path (not "-")
 * is not a regular file (a device or a FIFO: refused before reading, a FIFO without a writer
 * included), else AS_EXIT_DATA (1). Piped input (standard input) whose first two bytes are
 * not a torch.save file's (zip "PK", the legacy magic number's pickle, gzip) is refused
 * before it is spooled. */
pt_file *pt_open_code(const char *path, const pt_limits *lim, int *code, char *err, size_t errlen);
void pt_close(pt_file *f);
/* the size in bytes of the (decompressed) torch.save data */
uint64_t pt_size(const pt_file *f);

int pt_ntensors(const pt_file *f);
const pt_tensor *pt_get(const pt_file *f, int i);
/* index of the tensor whose path equals path, or -1 (a binary search: O(log n)) */
int pt_find(const pt_file *f, const char *path);
/* the kind of the root object: "tensor", "tuple", "list", "dict" (OrderedDict counts as dict) */
const char *pt_root_kind(const pt_file *f);
/* format description for --list headers: "zip", "zip64", "legacy", with " (gzip)" appended */
const char *pt_format(const pt_file *f);

/* Read logical elements [start, start+n) of tensor i in row-major order (whatever the
 * strides), converted to int64 (floats truncated toward zero; bool 0/1) or to double.
 * Efficient for large contiguous ranges (reads in chunks straight from the file).
 * Returns 0 on success, -1 with err filled (I/O error, short file). */
int pt_read_i64(pt_file *f, int i, int64_t start, int64_t n, int64_t *out, char *err, size_t errlen);
int pt_read_f64(pt_file *f, int i, int64_t start, int64_t n, double *out, char *err, size_t errlen);

/* Additions (not in the first contract):
 * pt_read_raw: like pt_read_i64 but copies the elements unconverted, pt_dtype_size(dtype)
 *   little-endian bytes each (bool as one 0/1 byte), e.g. int32 indices without widening.
 * pt_nstorages: number of distinct storages (pt_tensor.storage is in [0, pt_nstorages)).
 * Notes: pt_format says "zip64" only when the archive needs ZIP64 (a size, offset or count
 * saturated in the 32-bit fields), not merely because PyTorch wrote the ZIP64 records.
 * pt_root_kind is "other" for a root that is not a tensor or container. Reads on one
 * pt_file share a buffer: use one pt_file per thread. Float to int64 truncates toward zero,
 * saturates out-of-range values and maps NaN to 0. torch._utils._rebuild_parameter(_with_state)
 * is accepted too (a Parameter reads as its tensor). */
int pt_read_raw(pt_file *f, int i, int64_t start, int64_t n, void *out, char *err, size_t errlen);
int pt_nstorages(const pt_file *f);
/* bytes stored for storage s (its element count times its dtype's size), 0 for a bad s */
uint64_t pt_storage_bytes(const pt_file *f, int s);

#endif
