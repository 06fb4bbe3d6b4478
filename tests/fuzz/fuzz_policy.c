/* fuzz_policy.c - the policy and cost-model file loaders (as_policy_load, as_costmodel_load:
 * a record stream whose `policy` / `model` records are checked field by field before any
 * parameter is used). Input: a mode byte, then a policy or model file or its raw msgpack
 * records (fuzz.h). */
#include "fuzz.h"
#include "policy.h"
#include "costmodel.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setenv("AS_MAX_RECORD", "64M", 0);
    char path[64], err[1024];
    size_t n;
    uint8_t *bytes = fz_stream_bytes(data, size, &n);
    if (!bytes) return 0;
    int fd = fz_memfd(bytes, n, path, sizeof path);
    free(bytes);
    if (fd < 0) return 0;
    as_policy *p = NULL;
    as_costmodel *cm = NULL;
    err[0] = 0;
    if (as_policy_load(path, &p, &cm, err, sizeof err) == 0) {
        if (!p || !cm) abort();
        int64_t np;
        (void)as_policy_params(p, &np);
        (void)as_costmodel_device(cm);
        as_policy_free(p);
        as_costmodel_free(cm);
    } else if (!err[0]) abort();
    as_costmodel *m = NULL;
    err[0] = 0;
    if (as_costmodel_load(&m, path, err, sizeof err) == 0) as_costmodel_free(m);
    else if (!err[0]) abort();
    close(fd);
    return 0;
}
