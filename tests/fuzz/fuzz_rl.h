/* fuzz_rl.h - the tiny training set of the checkpoint seeds (mkcorpus.c) and of the targets
 * that plan or resume with what they loaded (fuzz_policy.c, fuzz_checkpoint.c): FZ_T tables
 * (ids 0..FZ_T-1) in FZ_NTASK tasks on 2 shards. Dimension letters: T tables, K shards. */
#ifndef AS_FUZZ_RL_H
#define AS_FUZZ_RL_H

#include "featurize.h"
#include "rl.h"

#include <string.h>

enum { FZ_T = 6, FZ_NTASK = 3, FZ_TASK_T = 4, FZ_K = 2 };

/* tables f[FZ_T] (fp: pointers to them) and tasks[FZ_NTASK] of FZ_TASK_T tables each:
 * task i holds tables i, i+1, i+2, i+3; ft[FZ_NTASK * FZ_TASK_T] is their storage */
static inline void fz_rl_data(as_features *f, const as_features **ft, as_rl_task *tasks)
{
    for (int i = 0; i < FZ_T; i++) {
        memset(&f[i], 0, sizeof f[i]);
        f[i].id = i;
        f[i].dim = 16 << (i % 3);
        f[i].rows = 100 + 50 * i;
        f[i].batch = 64;
        f[i].lookups = 64 * (1 + i);
        f[i].pooling = 1.0 + i;
        f[i].bytes_fp16 = f[i].rows * f[i].dim * 2;
        f[i].bytes_fp32 = 2 * f[i].bytes_fp16;
        f[i].size_gib = (double)f[i].bytes_fp16 / 1073741824.0;
        f[i].bins[i % 4] = 1;
    }
    for (int t = 0; t < FZ_NTASK; t++) {
        for (int j = 0; j < FZ_TASK_T; j++) ft[t * FZ_TASK_T + j] = &f[t + j];
        tasks[t] = (as_rl_task){ t, ft + t * FZ_TASK_T, FZ_TASK_T, FZ_K, 0 };
    }
}

#endif
