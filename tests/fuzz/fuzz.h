/* fuzz.h - shared pieces of the fuzz targets in tests/fuzz (see tests/fuzz/README.md).
 *
 * Each fuzz_<target>.c defines LLVMFuzzerTestOneInput for one decoder. The same file links
 * either with libFuzzer (clang -fsanitize=fuzzer: `make fuzz`) or with replay.c (any C
 * compiler: `make fuzz-replay`, part of `make asan`), which runs it over the checked-in
 * seed corpus tests/fuzz/corpus/<target>/ and deterministic mutants of every seed.
 * A target must not leak, must not print to stdout and must not exit: a hostile input is
 * answered by an error return of the decoder, never by a crash or an exit.
 */
#ifndef AS_FUZZ_H
#define AS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the input as an anonymous in-memory file, for decoders that take a path or a FILE:
 * returns the fd (close it after use) and fills path with /proc/self/fd/N, or -1 */
static inline int fz_memfd(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) { close(fd); return -1; }
        done += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) { close(fd); return -1; }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* Stream inputs start with a mode byte, so that mutations reach the records and not only
 * the compressed framing: odd = the rest is the stream as it is (zstd frames); even = the
 * rest is raw msgpack records, compressed here (zstd level 1) into one frame. Returns a
 * malloc'd buffer (free it) and its length in *outn; NULL when out of memory. */
#include <stdlib.h>
#include <zstd.h>
static inline uint8_t *fz_stream_bytes(const uint8_t *data, size_t size, size_t *outn)
{
    const uint8_t *p = size ? data + 1 : data;
    size_t n = size ? size - 1 : 0;
    if (!size || (data[0] & 1)) {
        uint8_t *b = malloc(n ? n : 1);
        if (b && n) memcpy(b, p, n);
        *outn = n;
        return b;
    }
    size_t cap = ZSTD_compressBound(n);
    uint8_t *b = malloc(cap);
    if (!b) return NULL;
    size_t r = ZSTD_compress(b, cap, p, n, 1);
    if (ZSTD_isError(r)) { free(b); return NULL; }
    *outn = r;
    return b;
}

/* fz_stream_bytes, then fz_memfd: the fuzzer's input as a stream file named in path (the
 * record readers open files by name). The descriptor (close it), or -1. */
static inline int fz_stream_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    size_t n;
    uint8_t *bytes = fz_stream_bytes(data, size, &n);
    if (!bytes) return -1;
    int fd = fz_memfd(bytes, n, path, len);
    free(bytes);
    return fd;
}

#endif
