/* fuzz_convert.c - the MetaSyn / prototype converter (lib/data/convert.c) on whatever
 * lib/torch/torchsave.c accepts: the validation of offsets, lengths and indices, the refusal of
 * expanded and overlapping data tensors, table records written to /dev/null; then --dump's
 * text. Input: a (possibly gzip'd) torch.save file. */
#include "fuzz.h"
#include "convert.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024];
    int fd = fz_memfd(data, size, path, sizeof path);
    if (fd < 0) return 0;
    pt_limits lim = { (uint64_t)64 << 20, 100.0, 4096 };
    pt_file *f = pt_open_limits(path, &lim, err, sizeof err);
    close(fd);
    if (!f) return 0;
    int64_t dims[2] = { 16, 32 };
    as_convert_opts o = { .dims = dims, .ndims = 2, .seed = 7, .source = "fuzz" };
    as_writer *w = as_writer_open("/dev/null", 1, 0);
    as_progress prog;
    memset(&prog, 0, sizeof prog);
    err[0] = 0;
    int64_t n = as_convert_torch(f, &o, w, &prog, err, sizeof err);
    if (n < 0 && !err[0]) abort();
    as_writer_close(w);
    /* --dump's text: only for small tensors, to keep a run short (the text grows with the
       elements, and AS_DUMP_FREE_ELEMENTS are allowed any file) */
    int64_t elems = 0;
    for (int i = 0; i < pt_ntensors(f) && elems <= 4096; i++) elems += pt_get(f, i)->numel > 4096 ? 4097 : pt_get(f, i)->numel;
    FILE *out = elems <= 4096 ? fopen("/dev/null", "w") : NULL;
    if (out) {
        err[0] = 0;
        if (as_convert_dump(f, out, err, sizeof err) && !err[0]) abort();
        fclose(out);
    }
    pt_close(f);
    return 0;
}
