/* fuzz_torchsave.c - the torch.save reader (lib/torch/torchsave.c with lib/torch/pickle.c): gzip and
 * spooling, the zip walker (ZIP64 included), the legacy format, the torch pickle hooks, the
 * object-graph walk and element reads through any strides. Input: a (possibly gzip'd)
 * torch.save file. Limits are tighter than the defaults so a mutant cannot make gigabytes. */
#include "fuzz.h"
#include "torchsave.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fz_memfd(data, size, path, sizeof path);
    if (fd < 0) return 0;
    pt_limits lim = { (uint64_t)64 << 20, 100.0, 4096 };
    pt_file *f = pt_open_limits(path, &lim, err, sizeof err);
    close(fd);
    if (!f) {
        if (!err[0]) abort();   /* a failure always says why */
        return 0;
    }
    (void)pt_root_kind(f);
    (void)pt_format(f);
    int n = pt_ntensors(f), ns = pt_nstorages(f);
    int64_t iv[64];
    double dv[64];
    uint8_t raw[64 * 8];
    for (int i = 0; i < n && i < 64; i++) {
        const pt_tensor *t = pt_get(f, i);
        if (!t || t->storage < 0 || t->storage >= ns || pt_find(f, t->path) < 0) abort();
        int64_t k = t->numel < 64 ? t->numel : 64;
        /* the first, the last and a middle run of elements, in the three modes */
        if (pt_read_i64(f, i, 0, k, iv, err, sizeof err) && !err[0]) abort();
        if (pt_read_f64(f, i, t->numel - k, k, dv, err, sizeof err) && !err[0]) abort();
        if (pt_read_raw(f, i, (t->numel - k) / 2, k, raw, err, sizeof err) && !err[0]) abort();
        /* out of range reads are refused */
        if (!pt_read_i64(f, i, t->numel, 1, iv, err, sizeof err)) abort();
    }
    pt_close(f);
    return 0;
}
