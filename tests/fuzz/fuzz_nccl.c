/* fuzz_nccl.c - nccl-tests' output read (lib/records/ncclperf.h, --comm-model nccl:FILE). Input:
 * a mode byte (its low 3 bits: 0-3 the collective the caller names the file as, else none),
 * then the file's text. A rejected input must come with a message naming the file; an
 * accepted one must keep the reader's promises: at least one size, sizes strictly increasing,
 * times positive and finite, ranks at least one, a known collective (the named one when
 * named), and the time of any message finite, positive, the measured one at a measured size. */
#include "fuzz.h"
#include "ncclperf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    const int coll = (data[0] & 7) < AS_NCOLL ? (int)(data[0] & 7) : -1;
    char err[512];
    err[0] = 0;
    as_nccl_table t;
    if (as_nccl_parse("in.txt", (const char *)data + 1, size - 1, coll, &t, err, sizeof err)) {
        if (strncmp(err, "in.txt", 6)) abort();
        return 0;
    }
    if (t.n < 1 || t.ranks < 1 || (int)t.coll < 0 || t.coll >= AS_NCOLL || (coll >= 0 && (int)t.coll != coll)) abort();
    for (int64_t i = 0; i < t.n; i++) {
        if (!(t.us[i] > 0) || !isfinite(t.us[i]) || (i && !(t.size[i] > t.size[i - 1]))) abort();
        if (as_nccl_us(&t, t.size[i]) != t.us[i]) abort();
    }
    const double probe[] = { 0, 1, t.size[0] / 2, t.size[t.n - 1] * 3, 1e15 };
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
        const double v = as_nccl_us(&t, probe[i]);
        if (!isfinite(v) || v < 0) abort();
    }
    as_nccl_free(&t);
    return 0;
}
