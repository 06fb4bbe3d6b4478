/* stream.h - the record stream between autoshard tools.
 *
 * A stream is one zstd stream (one or more frames) of concatenated msgpack records. Every
 * record is a map with a string field "kind". The first record of a stream is a header
 * {"kind":"header","schema":"autoshard","version":1,"tool":...}; concatenating streams
 * (cat a b) gives a valid stream, so further headers may appear anywhere. Large numeric
 * arrays are maps {"dtype":"int32","shape":[n,...],"data":<bin, little-endian>}.
 * docs/FORMAT.md is the contract.
 *
 * Reading is robust by construction: not-zstd input, empty input, truncated frames,
 * truncated or malformed records, unknown schema versions, records over the size cap and
 * arrays whose length disagrees with dtype x shape are errors with a one-line message
 * naming the input and the record number. Writing checks every write.
 */
#ifndef AS_STREAM_H
#define AS_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#include "msgobj.h"   /* the typed field getters and array maps every record reader uses */

#define AS_SCHEMA "autoshard"
#define AS_SCHEMA_VERSION 1
/* default cap on one record's encoded size; env AS_MAX_RECORD (bytes, suffixes K/M/G) overrides */
#define AS_RECORD_CAP_DEFAULT ((size_t)2 << 30)

/* ---- reading ------------------------------------------------------------------------ */

typedef struct as_reader as_reader;

typedef struct {
    msgpack_object obj;     /* the record: a map; valid until the next as_reader_next */
    const char *raw;        /* its encoded bytes, for pass-through */
    size_t rawlen;
    const char *kind;       /* value of "kind" (not NUL-terminated) */
    size_t kindlen;
    uint64_t index;         /* 1-based record number within the input */
} as_record;

/* path NULL or "-" reads stdin. Returns NULL (and prints "as-x: FILE: strerror") if the
 * file cannot be opened: for the tests, which read back what they wrote; the tools read
 * through as_read_records, which returns the message instead. */
as_reader *as_reader_open(const char *path);
/* Reader over an already-open FILE (not closed by as_reader_close); name for messages. */
as_reader *as_reader_from_file(FILE *f, const char *name);
/* 1: a record; 0: clean end of input; -1: error, message in as_reader_error() */
int as_reader_next(as_reader *r, as_record *rec);
const char *as_reader_error(const as_reader *r);   /* "FILE: record 3: ..." */
const char *as_reader_name(const as_reader *r);
void as_reader_close(as_reader *r);
/* The record loop of a filter tool: every record of files[0..nfiles) in order ("-" and
 * nfiles == 0: standard input), given to fn with its reader (for as_reader_name in
 * messages). Returns 0 when all were read; -1 with err: a file that cannot be opened
 * ("FILE: strerror"), a bad stream (as_reader_error's message), or fn's nonzero return
 * (fn wrote err), which stops the loop. */
typedef int (*as_record_fn)(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen);
int as_read_records(char *const *files, int nfiles, as_record_fn fn, void *ctx, char *err, size_t errlen);
size_t as_record_cap(void);

int as_rec_is(const as_record *rec, const char *kind);

/* ---- writing ------------------------------------------------------------------------ */

typedef struct as_writer as_writer;

/* path NULL or "-" writes stdout; a file is written under a temporary name and renamed
 * into place by as_writer_close (lib/records/output.h: the temporary appears with the first
 * compressed byte and is removed on any error exit and on SIGINT/SIGTERM/SIGHUP). level: zstd level (0 = default 3); workers: zstd threads (a libzstd
 * without threads compresses in the calling thread).
 * On failure prints and exits 3. */
as_writer *as_writer_open(const char *path, int level, int workers);
/* the header record: tool name and the command line (argc/argv may be 0/NULL) */
void as_writer_header(as_writer *w, const char *tool, int argc, char **argv);
/* the same with nextra more key/value pairs packed by extra (as-rl: the run's id) */
void as_writer_header_extra(as_writer *w, const char *tool, int argc, char **argv, int nextra,
                            void (*extra)(msgpack_packer *, void *), void *ctx);
/* packer for the next record; pack exactly one map, then call as_writer_end_record */
msgpack_packer *as_writer_pk(as_writer *w);
void as_writer_end_record(as_writer *w);
/* an already-encoded record, passed through unchanged */
void as_writer_raw(as_writer *w, const void *p, size_t n);
/* finish the zstd frame, flush, close and rename into place; prints and exits 3 on error */
void as_writer_close(as_writer *w);
/* drop the output: remove the temporary, PATH keeps its old content; frees w */
void as_writer_abort(as_writer *w);

/* Pack key + array map like as_pack_kv_array, but stream the data straight into the
 * compressor instead of copying it into the record buffer (for large arrays). Only for the
 * packer returned by as_writer_pk(w); the record continues normally afterwards. */
void as_writer_kv_array(as_writer *w, const char *k, as_dtype dt, const void *data,
                        int ndim, const int64_t *shape);

/* helpers for packing */
void as_pack_str(msgpack_packer *pk, const char *s);
void as_pack_kv_str(msgpack_packer *pk, const char *k, const char *v);
void as_pack_kv_i64(msgpack_packer *pk, const char *k, int64_t v);
void as_pack_kv_f64(msgpack_packer *pk, const char *k, double v);
/* key, then a msgpack array of n doubles (small lists; read back with as_obj_f64_list) */
void as_pack_kv_f64_list(msgpack_packer *pk, const char *k, const double *v, int n);
/* key, then an array map {"dtype","shape","data"}; data little-endian host layout */
void as_pack_kv_array(msgpack_packer *pk, const char *k, as_dtype dt, const void *data,
                      int ndim, const int64_t *shape);

#endif
