/* fuzz_policy.c - the policy and cost-model file loaders (as_policy_load, as_costmodel_load:
 * a record stream whose `policy` / `model` records are checked field by field before any
 * parameter is used), then what as-plan does with an accepted policy: its plans of a tiny
 * task (fuzz_rl.h), greedy and the best of two candidates, through buffers sized from the
 * policy's dims and the cost model's widths. Input: a mode byte, then a policy or model file
 * or its raw msgpack records (fuzz.h). */
#include "planmodel.h"
#include "fuzz.h"
#include "fuzz_rl.h"
#include "policy.h"
#include "costmodel.h"
#include "rl.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setenv("AS_MAX_RECORD", "64M", 0);
    char path[64], err[1024];
    int fd = fz_stream_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    as_policy *p = NULL;
    as_costmodel *cm = NULL;
    err[0] = 0;
    if (as_policy_load(path, &p, &cm, err, sizeof err) == 0) {
        if (!p || !cm) abort();
        int64_t np;
        (void)as_policy_params(p, &np);
        (void)as_costmodel_device(cm);
        as_features f[FZ_T];
        const as_features *ft[FZ_NTASK * FZ_TASK_T];
        as_rl_task tasks[FZ_NTASK];
        fz_rl_data(f, ft, tasks);
        as_plan_model pm;
        as_plan_model_of(&pm, cm);
        int64_t assign[FZ_TASK_T];
        as_rollout ro = { .cm = &pm, .t = tasks[0].t, .n = FZ_TASK_T, .K = FZ_K, .assign = assign };
        err[0] = 0;
        if (as_policy_rollout(p, &ro, err, sizeof err)) abort();   /* a loaded policy plans */
        for (int i = 0; i < FZ_TASK_T; i++) if (assign[i] < 0 || assign[i] >= FZ_K) abort();
        as_policy_planner pl = { p, &pm, 2, 1 };
        if (as_policy_place(&pl, tasks[1].t, FZ_TASK_T, FZ_K, 0, assign, err, sizeof err)) abort();
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
