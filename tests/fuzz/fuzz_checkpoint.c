/* fuzz_checkpoint.c - as-rl's checkpoint reader (as_rl_load_checkpoint: the policy record
 * with its optimiser and run state, the cost model, the rl_buffer of measured shards, the
 * header's run id, the train records), then what --resume does with an accepted one: one
 * learner update of model rewards on the tiny tasks of fuzz_rl.h with the checkpoint's
 * hyperparameters (batch, cost steps and selection tasks capped so an input stays fast).
 * Input: a mode byte, then a checkpoint file or its raw msgpack records (fuzz.h). */
#include "fuzz.h"
#include "fuzz_rl.h"
#include "policy.h"
#include "costmodel.h"
#include "rl.h"

#include <stdlib.h>

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setenv("AS_MAX_RECORD", "64M", 0);
    char path[64], err[1024];
    int fd = fz_stream_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    as_policy *p = NULL;
    as_costmodel *cm = NULL;
    as_rl_state *st = NULL;
    err[0] = 0;
    if (as_rl_load_checkpoint(path, &p, &cm, &st, err, sizeof err)) {
        if (!err[0] || p || cm || st) abort();
        close(fd);
        return 0;
    }
    if (!p || !cm || !st || as_rl_state_run_id(st) < 1) abort();
    const as_rl_hparams *hp = as_rl_state_hparams(st);
    const as_policy_info *in = as_policy_cmeta(p);
    as_features f[FZ_T];
    const as_features *ft[FZ_NTASK * FZ_TASK_T];
    as_rl_task tasks[FZ_NTASK];
    fz_rl_data(f, ft, tasks);
    as_rl_cfg c;
    memset(&c, 0, sizeof c);
    c.actors = 1;
    c.seed = hp->seed;
    c.lr = hp->lr; c.entropy = hp->entropy; c.baseline = hp->baseline; c.clip = hp->clip;
    c.batch = (int)min64(hp->batch, 4);
    c.imitate = hp->imitate;
    c.cost_steps = (int)min64(hp->cost_steps, 2);
    c.cost_batch = 8;
    c.buffer = hp->buffer;
    c.select_every = hp->select_every;
    c.select_tasks = min64(hp->select_tasks, 2);
    c.episodes = in->episodes + c.batch;   /* one update */
    c.feat = f;
    c.nfeat = FZ_T;
    err[0] = 0;
    int rc = as_rl_train(p, cm, tasks, FZ_NTASK, &c, st, err, sizeof err);
    if (rc < -1 || rc > 1 || (rc == -1 && !err[0])) abort();
    if (rc == 0 && as_policy_cmeta(p)->episodes != c.episodes) abort();
    as_rl_state_free(st);
    as_policy_free(p);
    as_costmodel_free(cm);
    close(fd);
    return 0;
}
