/* tasks.c - sharding tasks; see tasks.h. Dimension letters: T tables per task, K shards. */
#include "tasks.h"
#include "common.h"
#include "planrec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t id, bytes; } ent;

static int cmp_ent(const void *a, const void *b)
{
    int64_t x = ((const ent *)a)->id, y = ((const ent *)b)->id;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* draw k distinct entries of src[0..n) into dst (partial Fisher-Yates on scratch) */
static void draw(as_rng *r, const ent *src, int64_t n, int64_t k, ent *scratch, ent *dst)
{
    memcpy(scratch, src, (size_t)n * sizeof *src);
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + (int64_t)as_rng_below(r, (uint64_t)(n - i));
        ent t = scratch[i];
        scratch[i] = scratch[j];
        scratch[j] = t;
        dst[i] = scratch[i];
    }
}

static uint64_t set_hash(const int64_t *v, int64_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        uint64_t s = h ^ (uint64_t)v[i];
        h = as_splitmix64(&s);
    }
    return h;
}

void as_tasks_free(as_task *t, int64_t n)
{
    for (int64_t i = 0; t && i < n; i++) free(t[i].tables);
    free(t);
}

static void human(char *buf, size_t len, uint64_t b)
{
    if (b >= (1ULL << 30)) snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ULL << 30));
    else if (b >= (1ULL << 20)) snprintf(buf, len, "%.2f MiB", (double)b / (double)(1ULL << 20));
    else snprintf(buf, len, "%" PRIu64 " bytes", b);
}

/* the pool's entries sorted by id, malloc'd; NULL with err when an id appears twice */
static ent *pool_sorted(const int64_t *pool_ids, const int64_t *pool_bytes, int64_t npool, char *err, size_t errlen)
{
    ent *pool = as_malloc((size_t)npool * sizeof *pool);
    for (int64_t i = 0; i < npool; i++) { pool[i].id = pool_ids[i]; pool[i].bytes = pool_bytes[i]; }
    qsort(pool, (size_t)npool, sizeof *pool, cmp_ent);
    for (int64_t i = 1; i < npool; i++)
        if (pool[i].id == pool[i - 1].id) {
            snprintf(err, errlen, "table %" PRId64 " appears twice in the input", pool[i].id);
            free(pool);
            return NULL;
        }
    return pool;
}

/* what every task's draw shares */
typedef struct {
    as_rng r;
    const ent *pool;                /* [npool] by id */
    int64_t nseen, nunseen;         /* the seen part pool[0..nseen) (all, or the first half), the unseen after it */
    int64_t T, u;                   /* tables per task; of which unseen in a transfer setting's test task */
    int transfer;                   /* the transfer setting (c->unseen_ratio >= 0) */
    int64_t ntrain;                 /* training tasks, the first ones */
    ent *scratch, *pick;            /* [npool] draw's scratch; [T] the task's tables as drawn */
    uint64_t *hashes;               /* [ntasks] each task's set of tables hashed */
} drawer;

/* the tables of task i (its bytes, unseen count, ascending ids), drawn again until a test
 * task differs from every training task (as sets of tables); 0, or -1 with err after 1000
 * tries */
static int draw_task(drawer *d, as_task *tasks, int64_t i, char *err, size_t errlen)
{
    as_task *t = &tasks[i];
    const int64_t T = d->T, u = d->u;
    for (int attempt = 0;; attempt++) {
        if (!t->test || !d->transfer) {
            draw(&d->r, d->pool, d->nseen, T, d->scratch, d->pick);
            t->unseen = 0;
        } else {
            draw(&d->r, d->pool, d->nseen, T - u, d->scratch, d->pick);
            draw(&d->r, d->pool + d->nseen, d->nunseen, u, d->scratch, d->pick + (T - u));
            t->unseen = u;
        }
        t->bytes = 0;
        for (int64_t k = 0; k < T; k++) {
            t->tables[k] = d->pick[k].id;
            /* saturating: a sum past 2^64 bytes only ever meets "does not fit" below */
            if (__builtin_add_overflow(t->bytes, (uint64_t)d->pick[k].bytes, &t->bytes)) t->bytes = UINT64_MAX;
        }
        qsort(t->tables, (size_t)T, sizeof *t->tables, cmp_i64);
        d->hashes[i] = set_hash(t->tables, T);
        /* test tasks must differ from every training task (as sets of tables) */
        int dup = 0;
        if (t->test)
            for (int64_t j = 0; j < d->ntrain && !dup; j++)
                dup = d->hashes[j] == d->hashes[i] && !memcmp(tasks[j].tables, t->tables, (size_t)T * sizeof *t->tables);
        if (!dup) return 0;
        if (attempt == 1000) {
            snprintf(err, errlen, "cannot draw a test task unlike every training task: the pool is too small for %" PRId64 " tables per task", T);
            return -1;
        }
    }
}

/* task i (its tables as drawn in pick[0..T)) under the memory cap: its biggest table fits
 * a shard and all of it fits K shards; 0, or -1 with err */
static int check_cap(const as_task *t, const ent *pick, int64_t T, int64_t K, uint64_t cap, int64_t i, char *err,
                     size_t errlen)
{
    uint64_t biggest = 0, total;
    /* K x cap past 2^64 bytes holds any task */
    if (__builtin_mul_overflow(cap, (uint64_t)K, &total)) total = UINT64_MAX;
    int64_t big_id = -1;
    for (int64_t k = 0; k < T; k++)
        if ((uint64_t)pick[k].bytes > biggest) { biggest = (uint64_t)pick[k].bytes; big_id = pick[k].id; }
    char a[64], b[64];
    if (biggest > cap) {
        human(a, sizeof a, biggest);
        human(b, sizeof b, cap);
        snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " (%s) is larger than a shard's memory cap (%s)", i, big_id, a, b);
        return -1;
    } else if (t->bytes > total) {
        human(a, sizeof a, t->bytes);
        human(b, sizeof b, total);
        snprintf(err, errlen, "task %" PRId64 ": its %" PRId64 " tables need %s but %" PRId64 " shards x the cap hold %s",
                 i, T, a, K, b);
        return -1;
    }
    return 0;
}

int as_tasks_make(const as_task_cfg *c, const int64_t *pool_ids, const int64_t *pool_bytes, int64_t npool,
                  as_task **out, char *err, size_t errlen)
{
    *out = NULL;
    int64_t T = c->tables, K = c->shards > 0 ? c->shards : (c->tables / 10 > 0 ? c->tables / 10 : 1);
    int transfer = c->unseen_ratio >= 0;
    if (npool == 0) { snprintf(err, errlen, "the input holds no tables or features to build tasks from"); return -1; }
    ent *pool = pool_sorted(pool_ids, pool_bytes, npool, err, errlen);
    if (!pool) return -1;
    /* the seen part (all of the pool, or its first half) and the unseen part */
    int64_t nseen = transfer ? npool / 2 : npool, nunseen = npool - nseen;
    int64_t u = transfer ? (int64_t)(c->unseen_ratio * (double)T + 0.5) : 0;
    if (T > npool) {
        snprintf(err, errlen, "a task of %" PRId64 " tables needs at least that many in the pool, which has %" PRId64, T, npool);
        free(pool);
        return -1;
    }
    if (transfer && (T > nseen || T - u > nseen || u > nunseen)) {
        snprintf(err, errlen, "transfer setting: tasks of %" PRId64 " tables with %" PRId64 " unseen need %" PRId64
                 " seen and %" PRId64 " unseen tables, but the pool's halves hold %" PRId64 " and %" PRId64,
                 T, u, T > T - u ? T : T - u, u, nseen, nunseen);
        free(pool);
        return -1;
    }
    as_task *tasks = as_calloc((size_t)c->ntasks, sizeof *tasks);
    drawer d = { .pool = pool, .nseen = nseen, .nunseen = nunseen, .T = T, .u = u, .transfer = transfer,
                 .ntrain = c->ntasks - c->ntest, .scratch = as_malloc((size_t)npool * sizeof *d.scratch),
                 .pick = as_malloc((size_t)T * sizeof *d.pick), .hashes = as_malloc((size_t)c->ntasks * sizeof *d.hashes) };
    as_rng_seed(&d.r, c->seed, 0x7461736b73ULL);   /* "tasks" */
    int rc = 0;
    for (int64_t i = 0; i < c->ntasks && rc == 0; i++) {
        as_task *t = &tasks[i];
        t->id = i;
        t->test = i >= d.ntrain;
        t->shards = K;
        t->ntables = T;
        t->tables = as_malloc((size_t)T * sizeof *t->tables);
        rc = draw_task(&d, tasks, i, err, errlen);
        if (rc == 0 && c->mem_cap) rc = check_cap(t, d.pick, T, K, c->mem_cap, i, err, errlen);
    }
    free(d.scratch);
    free(d.pick);
    free(d.hashes);
    free(pool);
    if (rc) { as_tasks_free(tasks, c->ntasks); return -1; }
    *out = tasks;
    return 0;
}

void as_task_whole(as_task *t, const int64_t *ids, const int64_t *bytes, int64_t n, int64_t K)
{
    memset(t, 0, sizeof *t);
    t->test = 1;
    t->ntables = n;
    t->shards = K;
    t->tables = as_malloc((size_t)(n ? n : 1) * sizeof *t->tables);
    if (n) memcpy(t->tables, ids, (size_t)n * sizeof *t->tables);
    qsort(t->tables, (size_t)n, sizeof *t->tables, cmp_i64);
    for (int64_t i = 0; i < n; i++) t->bytes += (uint64_t)bytes[i];
}

void as_task_write(as_writer *w, const as_task_cfg *c, const as_task *t)
{
    as_taskrec r = { .id = t->id, .tables = t->tables, .ntables = t->ntables, .shards = t->shards, .mem_cap = c->mem_cap,
                     .bytes = t->bytes, .unseen = t->unseen, .seed = c->seed };
    snprintf(r.split, sizeof r.split, "%s", t->test ? "test" : "train");
    snprintf(r.setting, sizeof r.setting, "%s", c->unseen_ratio >= 0 ? "transfer" : "standard");
    as_taskrec_write(w, &r);
}
