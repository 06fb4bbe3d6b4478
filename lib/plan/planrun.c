/* planrun.c - as-plan's stage (planrun.h). */
#include "planrun.h"

#include "common.h"
#include "mcfgrec.h"
#include "reclimits.h"
#include "planrec.h"
#include "refine.h"
#include "replicate.h"
#include "stats.h"
#include "comm.h"
#include "plantorchrec.h"
#include "planreport.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the views a plan of items (whole tables and pieces) needs: their features (*fi), table
 * ids (*ids) and pieces (*pieces, NULL: not wanted), malloc'd [n] */
static void item_views(const as_features *items, int64_t n, const as_features ***fi, int64_t **ids, as_piece **pieces)
{
    *fi = as_malloc((size_t)(n ? n : 1) * sizeof **fi);
    *ids = as_malloc((size_t)(n ? n : 1) * sizeof **ids);
    if (pieces) *pieces = as_malloc((size_t)(n ? n : 1) * sizeof **pieces);
    for (int64_t j = 0; j < n; j++) {
        (*fi)[j] = &items[j];
        (*ids)[j] = items[j].id;
        if (pieces) (*pieces)[j] = items[j].piece;
    }
}

/* torchrec's placement, made before as_plan_make (lib/plan/plantorchrec.h) */
static int fixed_place(void *ctx, const as_features *const *t, int64_t n, int64_t K, uint64_t cap, int64_t *assign,
                       char *err, size_t errlen)
{
    (void)t; (void)K; (void)cap; (void)err; (void)errlen;
    memcpy(assign, ctx, (size_t)n * sizeof *assign);
    return 0;
}

int as_plan_alg_list(int *want, int *n, const char *list, int has_model, int has_policy, char *err, size_t errlen)
{
    memset(want, 0, AS_ALG_COUNT * sizeof *want);
    *n = 0;
    char *s = as_strdup(list), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(s, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        as_alg a;
        if (!strcmp(tok, "all")) {
            /* every planner whose needs are given, but those that only run by name */
            for (int q = 0; q < AS_ALG_COUNT; q++) {
                const unsigned needs = as_planner_of((as_alg)q)->needs;
                if ((!(needs & AS_PLANNER_MODEL) || has_model) && (!(needs & AS_PLANNER_POLICY) || has_policy) &&
                    !(needs & AS_PLANNER_PLACEMENT))
                    want[q] = 1;
            }
        } else if (!as_alg_parse(tok, &a)) {
            const unsigned needs = as_planner_of(a)->needs;
            if ((needs & AS_PLANNER_MODEL) && !has_model) {
                snprintf(err, errlen, "--alg %s needs --model FILE", tok);
                rc = -1;
            } else if ((needs & AS_PLANNER_POLICY) && !has_policy) {
                snprintf(err, errlen, "--alg %s needs --policy FILE", tok);
                rc = -1;
            } else {
                want[a] = 1;
            }
        } else {
            snprintf(err, errlen, "--alg: unknown algorithm '%s'", tok);
            rc = -1;
        }
    }
    free(s);
    if (rc) return -1;
    for (int q = 0; q < AS_ALG_COUNT; q++) *n += want[q];
    if (!*n) { snprintf(err, errlen, "--alg: no algorithm given"); return -1; }
    return 0;
}

char *as_plan_help(const char *head, const char *tail)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) as_oom("the planners' help");
    fputs(head, f);
    for (int a = 0; a < AS_ALG_COUNT; a++) {
        /* the name in a column of 20, the help's lines after the first indented to it */
        fprintf(f, "  %-18s  ", as_alg_name((as_alg)a));
        for (const char *h = as_planner_of((as_alg)a)->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n') fprintf(f, "%22s", "");
        }
        fputc('\n', f);
    }
    fputs(tail, f);
    if (fclose(f)) as_oom("the planners' help");
    return buf;
}

typedef struct {
    as_plan_input *in;
    const char *split;
    as_writer *pass;
    int64_t cap;
} rd_ctx;

static int on_record(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    rd_ctx *x = ctx;
    as_plan_input *in = x->in;
    if (as_rec_is(rec, "header")) return 0;
    if (as_rec_is(rec, "features")) {
        if (as_featidx_read(&in->ft, rec, as_reader_name(r), err, errlen)) return -1;
    } else if (as_mcfgrec_is(&rec->obj)) {
        if (!in->local_size) {
            as_mcfgrec m;
            as_mcfgrec_read(&rec->obj, &m);
            in->local_size = m.local_size.v;
            snprintf(in->module_path, sizeof in->module_path, "%s", m.module_path.s ? m.module_path.s : "");
            as_mcfgrec_free(&m);
            if (in->local_size < 1) {
                snprintf(err, errlen, "%s: record %" PRIu64 ": model-config: local_size must be an integer >= 1",
                         as_reader_name(r), rec->index);
                return -1;
            }
        }
    } else if (as_taskrec_is(&rec->obj)) {
        as_taskrec t;
        char e2[768];
        if (as_taskrec_read(&rec->obj, &t, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
            return -1;
        }
        if (x->split && strcmp(t.split, x->split)) as_taskrec_free(&t);
        else {
            if (in->ntasks == x->cap) {
                x->cap = x->cap ? 2 * x->cap : 64;
                in->tasks = as_realloc(in->tasks, (size_t)x->cap * sizeof *in->tasks);
            }
            in->tasks[in->ntasks++] = t;
        }
    }
    if (x->pass) as_writer_raw(x->pass, rec->raw, rec->rawlen);
    return 0;
}

int as_plan_input_read(as_plan_input *in, char *const *files, int nfiles, const char *split, as_writer *pass,
                       char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    rd_ctx x = { in, split, pass, 0 };
    if (as_read_records(files, nfiles, on_record, &x, err, errlen)) return -1;
    /* features by id; the same table twice must agree (lib/records/featindex.h) */
    return as_featidx_build(&in->ft, err, errlen);
}

void as_plan_input_free(as_plan_input *in)
{
    if (!in) return;
    for (int64_t i = 0; i < in->ntasks; i++) as_taskrec_free(&in->tasks[i]);
    free(in->tasks);
    as_featidx_free(&in->ft);
    memset(in, 0, sizeof *in);
}

int as_plan_task_features(const as_plan_input *in, const as_taskrec *t, const as_features **f, char *err,
                          size_t errlen)
{
    for (int64_t i = 0; i < t->ntables; i++) {
        if (!(f[i] = as_featidx_get(&in->ft, t->tables[i]))) {
            snprintf(err, errlen, "task %" PRId64 ": table %" PRId64 " has no features record in the input", t->id,
                     t->tables[i]);
            return -1;
        }
    }
    return 0;
}

void as_plan_infeasible_msg(char *buf, size_t len, int64_t task, as_alg a, const as_plan *p, uint64_t cap)
{
    char list[256] = "";
    size_t o = 0;
    for (int64_t i = 0; i < p->ninfeasible && o < sizeof list - 24; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%" PRId64, i ? ", " : "", p->infeasible[i]);
    if (o >= sizeof list - 24 && p->ninfeasible > 1) snprintf(list + o, sizeof list - o, ", ...");
    char label[64];
    snprintf(buf, len, "task %" PRId64 ": %s: plan infeasible: %" PRId64 " table%s fit on no shard under the %" PRIu64
             "-byte cap (%s)", task, as_plan_alg_label(p, a, label, sizeof label), p->ninfeasible, p->ninfeasible == 1 ? "" : "s", cap, list);
}

/* write one plan of task m->task (an infeasible one with its line on stderr) and count it */
static void emit(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_meta *meta, const as_plan *pl,
                 const as_features **f, as_progress *p)
{
    const as_taskrec *t = meta->task;
    st->plan_ms += pl->plan_ms;
    if (!pl->feasible) {
        st->ninfeasible++;
        char msg[1024];
        as_plan_infeasible_msg(msg, sizeof msg, t->id, meta->alg, pl, meta->mem_cap);
        as_err("%s", msg);
    }
    /* with a model, each item's predicted cost alone: what makes a shard slow */
    as_plan_meta mi = *meta;
    double *ip = NULL;
    if (c->model && c->out != AS_PLAN_OUT_TORCHREC && pl->n > 0) {
        const as_plan_model *m = c->model;
        float *rep = as_malloc((size_t)m->rep * sizeof *rep);
        ip = as_malloc((size_t)pl->n * sizeof *ip);
        for (int64_t i = 0; i < pl->n; i++) {
            m->embed(m->ctx, f[i], rep);
            /* a data-parallel table's share on one shard (as_plan_dp_pred) */
            ip[i] = m->head(m->ctx, rep) / (pl->assign[i] == AS_DP ? (double)pl->shards : 1.0);
        }
        free(rep);
        mi.item_pred = ip;
    }
    /* the all-reduce of the data-parallel entries' gradients: every shard sends as much */
    for (int64_t i = 0; mi.items && i < pl->n; i++)
        if (pl->assign[i] == AS_DP) mi.dp_ar_bytes += as_plan_dp_comm_bytes(mi.items[i], pl->shards);
    if (c->out == AS_PLAN_OUT_STREAM) as_plan_write(c->w, pl, &mi);
    else if (c->out == AS_PLAN_OUT_TEXT) as_plan_print_text(c->text, pl, &mi, f);
    else if (as_plan_print_torchrec(c->text, pl, meta, f, c->tro)) {
        char label[64];
        as_err("task %" PRId64 ": %s: infeasible plan left out of the torchrec output", t->id,
               as_plan_alg_label(pl, meta->alg, label, sizeof label));
    }
    free(ip);
    st->nplans++;
    if (p) as_progress_update(p, (double)st->nplans);
}

/* one algorithm's plan of a task and the items it was made of */
typedef struct {
    as_plan pl;
    as_features *items;             /* the split's or TorchRec's items (tables and pieces); NULL: the task's tables */
    const as_features **fi;         /* the items' features: f itself for the task's tables */
    int64_t ni;                     /* how many */
    int64_t *ids;                   /* their table ids; NULL: the task's */
} task_plan;

static void task_plan_free(task_plan *ap, const as_features **f)
{
    if (ap->fi != f) free(ap->fi);
    free(ap->items);
    free(ap->ids);
}

/* A planner with its own items (as_planner.items: TorchRec's, which splits tables itself,
 * row_wise and column_wise, and places them): its items reach as_plan_make as a fixed
 * placement (pc's policy for the call); 0, or -1 with err */
static int own_items_plan(task_plan *ap, as_plan_run_stats *st, as_plan_cfg *pc, const as_plan_run_cfg *c,
                          const as_plan_input *in, const as_taskrec *t, const as_features **f, char *err, size_t errlen)
{
    char e2[768];
    as_plan_items_info tri;
    int64_t *tra = NULL;
    const char *name = as_alg_name(pc->alg);
    if (as_planner_of(pc->alg)->items(pc, &in->ft, f, t->ntables, &ap->items, &ap->ni, &tra, &tri, e2, sizeof e2)) {
        snprintf(err, errlen, "task %" PRId64 ": %s: %s", t->id, name, e2);
        return -1;
    }
    as_piece *pcs;
    item_views(ap->items, ap->ni, &ap->fi, &ap->ids, &pcs);
    as_plan_policy fixed = { tra, fixed_place, 0, NULL, NULL };   /* e.g. TorchRec's row_wise on rank i */
    pc->policy = &fixed;
    int rc = as_plan_make(&ap->pl, pc, ap->fi, ap->ni, e2, sizeof e2);
    free(tra);
    pc->policy = c->policy;
    if (rc) {
        snprintf(err, errlen, "task %" PRId64 ": %s: %s", t->id, name, e2);
        task_plan_free(ap, f);
        free(pcs);
        return -1;
    }
    ap->pl.plan_ms += tri.ms;   /* as_plan_make timed the copy only */
    ap->pl.pieces = pcs;
    st->own_row_wise += tri.row_wise;
    st->own_data_parallel += tri.data_parallel;
    st->own_column_wise += tri.column_wise;
    st->own_no_rows += tri.no_rows;
    return 0;
}

/* The split search's seed of task t (f: its tables): each table's split in TorchRec's plan of
 * it (as_tr_plan under pc's shards and cap): 0 whole or data parallel, -1 row_wise, c its c
 * column pieces. malloc'd [T]; NULL with err when TorchRec's planner fails. */
static int64_t *tr_seed(const as_plan_cfg *pc, const as_plan_run_cfg *c, const as_plan_input *in, const as_taskrec *t,
                        const as_features **f, char *err, size_t errlen)
{
    as_plan_cfg tc = *pc;
    tc.alg = AS_ALG_TORCHREC;
    tc.no_dp = c->no_dp;
    as_features *items = NULL;
    int64_t ni = 0, *tra = NULL;
    as_tr_info tri;
    if (as_tr_plan(&tc, &in->ft, f, t->ntables, &items, &ni, &tra, &tri, err, errlen)) return NULL;
    int64_t *seed = as_calloc((size_t)(t->ntables ? t->ntables : 1), sizeof *seed);
    /* items in task order, each table's pieces together */
    for (int64_t i = 0, j = 0; i < t->ntables && j < ni; i++) {
        int64_t m = 0, rows_split = 0;
        for (; j < ni && items[j].id == f[i]->id; j++, m++)
            rows_split |= !as_piece_whole(&items[j].piece) && items[j].dim == f[i]->dim;
        seed[i] = m < 2 ? 0 : rows_split ? -1 : m;
    }
    free(items);
    free(tra);
    return seed;
}

/* the split search's progress: the plans made so far and its share of the next */
typedef struct {
    as_progress *p;
    double done;
} split_prog;

static void split_progress(void *ctx, double frac)
{
    const split_prog *sp = ctx;
    as_progress_update(sp->p, sp->done + frac);
}

/* --split-tables: the split search's plan of its items (tables and pieces), seeded with seed
 * (tr_seed; NULL: none), its progress on p (NULL: none); 0, or -1 with err */
static int split_plan(task_plan *ap, as_plan_run_stats *st, const as_plan_cfg *pc, const as_plan_run_cfg *c,
                      const as_plan_input *in, const as_taskrec *t, const as_features **f, const int64_t *seed,
                      as_progress *p, char *err, size_t errlen)
{
    char e2[768];
    as_split_info info;
    as_split_cfg sc = *c->split_cfg;
    sc.seed = seed;
    split_prog sp = { p, (double)st->nplans };
    if (p) sc.progress = split_progress, sc.progress_ctx = &sp;
    if (as_split_search(pc, &sc, &in->ft, f, t->ntables, &ap->items, &ap->ni, &ap->pl, &info, e2, sizeof e2)) {
        snprintf(err, errlen, "task %" PRId64 ": %s: %s", t->id, as_alg_name(pc->alg), e2);
        return -1;
    }
    item_views(ap->items, ap->ni, &ap->fi, &ap->ids, &ap->pl.pieces);
    ap->pl.split = 1;
    ap->pl.comm_gbps = c->split_cfg->comm_gbps;
    if (c->split_cfg->comm_model && c->split_cfg->comm_model->ab) {
        ap->pl.comm_gbps = 0;
        ap->pl.comm_model = c->split_cfg->comm_model->name;
    }
    st->split_nodes += info.nodes;
    st->split_tables += info.split;
    st->split_cut += info.cut;
    st->split_seeded += info.seeded;
    return 0;
}

/* the plans of one task; f: its features */
/* what plan_alg plans: task t on K shards (tk: the task with K) under cap mcap */
typedef struct {
    const as_taskrec *t;
    const as_taskrec *tk;
    int64_t K;
    uint64_t mcap;
    const int64_t *seed;            /* the split search's seed (tr_seed), NULL: none */
    double seed_ms;                 /* the time it took (in every split plan's plan_ms) */
} task_cfg;

/* task x->t by planner a: made (or TorchRec's, or the split search's), replicated with
 * --replicate, refined with --refine, each plan emitted; 0 or -1 with err */
static int plan_alg(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const task_cfg *x, as_alg a,
                    const as_features **f, as_progress *p, char *err, size_t errlen)
{
    const as_taskrec *t = x->t;
    const unsigned needs = as_planner_of(a)->needs;
    /* a planner with its own items and placement (TorchRec's) is not split or replicated */
    const int own = (needs & AS_PLANNER_PLACEMENT) != 0;
    /* split plans: the split search's communication charge in the refinement too */
    const int charge = (c->split && !own) || c->refine_comm;
    as_plan_cfg pc = { .alg = a, .shards = x->K, .mem_cap = x->mcap, .seed = c->seed, .rng_stream = t->id,
                       .model = c->model, .policy = c->policy,
                       .comm_gbps = charge ? c->split_cfg->comm_gbps : 0,
                       .no_dp = c->no_dp,
                       .comm_model = charge ? c->split_cfg->comm_model : NULL };
    /* --replicate charges the split search's model, split plans or not */
    as_plan_cfg rc = pc;
    rc.comm_model = c->split_cfg ? c->split_cfg->comm_model : NULL;
    char e2[768];
    /* with --split-tables (or TorchRec's planner) the items are the split's: tables and
       pieces, the task copy lists their table ids */
    task_plan ap = { .fi = f, .ni = t->ntables };
    if (own) {
        if (own_items_plan(&ap, st, &pc, c, in, t, f, err, errlen)) return -1;
    } else if (c->split) {
        if (split_plan(&ap, st, &pc, c, in, t, f, x->seed, p, err, errlen)) return -1;
        ap.pl.plan_ms += x->seed_ms;
    } else if (as_plan_make(&ap.pl, &pc, f, t->ntables, e2, sizeof e2)) {
        snprintf(err, errlen, "task %" PRId64 ": %s: %s", t->id, as_alg_name(a), e2);
        return -1;
    }

    /* --replicate: with --refine the plan is refined first too, so that replication starts
       from the balanced plan (the refinement after it rebalances the rest; its record
       counts that one's steps) */
    int64_t made = 0;
    int rcode = c->replicate && !own &&
                ((c->refine && as_plan_refine(&ap.pl, &pc, ap.fi, ap.ni, c->refine_ms, c->refine_steps, e2, sizeof e2)) ||
                 as_plan_replicate(&ap.pl, &rc, ap.fi, ap.ni, c->split_cfg ? c->split_cfg->comm_gbps : AS_COMM_GBPS, &made,
                                   e2, sizeof e2));
    st->replicated += made;
    as_taskrec tki = *x->tk;
    if (ap.ids) {
        tki.tables = ap.ids;
        tki.ntables = ap.ni;
    }
    as_plan_meta meta = { .task = &tki, .alg = a, .seed = c->seed, .mem_cap = x->mcap, .world = c->world,
                          .model = c->model_path, .model_device = c->model_device,
                          .policy = needs & AS_PLANNER_POLICY ? c->policy_path : NULL,
                          .samples = (needs & AS_PLANNER_POLICY) && c->policy && c->policy->samples
                                         ? c->policy->samples(c->policy->ctx, t->ntables, x->K) : 0,
                          .items = ap.fi };
    /* with --refine: the algorithm's plan first when it is kept, then the refined one */
    for (int pass = c->refine && !c->keep_unrefined; !rcode && pass < 1 + (c->refine != 0); pass++) {
        /* the plans the cost model placed carry its quality */
        meta.model_quality = (needs & AS_PLANNER_MODEL) || (c->split && !own) || pass ? c->model_quality : NULL;
        if (pass && as_plan_refine(&ap.pl, &pc, ap.fi, ap.ni, c->refine_ms, c->refine_steps, e2, sizeof e2)) rcode = 1;
        else {
            if (pass && charge && !ap.pl.split && !ap.pl.replicated) {
                /* the refinement charged the communication: the record says which, as split plans' */
                ap.pl.comm_gbps = pc.comm_model && pc.comm_model->ab ? 0 : pc.comm_gbps;
                ap.pl.comm_model = pc.comm_model && pc.comm_model->ab ? pc.comm_model->name : NULL;
            }
            emit(st, c, &meta, &ap.pl, ap.fi, p);
        }
    }
    if (rcode) snprintf(err, errlen, "task %" PRId64 ": %s: %s", t->id, as_alg_name(a), e2);
    as_plan_free(&ap.pl);
    task_plan_free(&ap, f);
    return rcode ? -1 : 0;
}

static int plan_task(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const as_taskrec *t,
                     const as_features **f, as_progress *p, char *err, size_t errlen)
{
    int64_t K = c->shards ? c->shards : t->shards;
    if (c->world && (c->world < K || c->world % K)) {
        snprintf(err, errlen, "task %" PRId64 ": --world-size %" PRId64 " is not a multiple of its %" PRId64 " shards",
                 t->id, c->world, K);
        return -1;
    }
    if (c->split_cfg && (c->split || c->replicate) && as_comm_model_check(c->split_cfg->comm_model, K, err, errlen)) {
        char e2[600];
        snprintf(e2, sizeof e2, "%s", err);
        snprintf(err, errlen, "task %" PRId64 ": %s", t->id, e2);
        return -1;
    }
    as_taskrec tk = *t;
    tk.shards = K;
    task_cfg x = { .t = t, .tk = &tk, .K = K, .mcap = c->cap_given ? c->mem_cap : t->mem_cap };
    /* the split search starts from TorchRec's plan too (its row_wise and column_wise tables),
       so that a split plan is never predicted slower than the best of that start */
    int64_t *seed = NULL;
    const int sm = c->split ? c->split_cfg->seed_mode : AS_SPLIT_SEED_NONE;
    if (sm == AS_SPLIT_SEED_TORCHREC || (sm == AS_SPLIT_SEED_AUTO && t->ntables <= AS_SPLIT_SEED_AUTO_TABLES)) {
        const as_plan_cfg pc = { .shards = K, .mem_cap = x.mcap, .model = c->model };
        char e2[768];
        const double t0 = as_now();
        if (!(seed = tr_seed(&pc, c, in, t, f, e2, sizeof e2))) {
            snprintf(err, errlen, "task %" PRId64 ": the split search's start from TorchRec's plan: %s", t->id, e2);
            return -1;
        }
        x.seed_ms = (as_now() - t0) * 1e3;
    }
    x.seed = seed;
    int rc = 0;
    for (int a = 0; a < AS_ALG_COUNT && !rc; a++)
        if (c->want[a] && plan_alg(st, c, in, &x, (as_alg)a, f, p, err, errlen)) rc = -1;
    free(seed);
    return rc;
}

int as_plan_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, as_progress *p,
                char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    for (int64_t ti = 0; ti < in->ntasks; ti++) {
        const as_taskrec *t = &in->tasks[ti];
        const as_features **f = as_malloc((size_t)(t->ntables ? t->ntables : 1) * sizeof *f);
        int rc = as_plan_task_features(in, t, f, err, errlen) || plan_task(st, c, in, t, f, p, err, errlen);
        free(f);
        if (rc) return -1;
    }
    return 0;
}

/* ---- --repair: measured plans refined on their measured costs ---------------------------- */

/* a repaired plan written: its task, its label and the label of the plan it came from */
typedef struct {
    int64_t task;
    char label[96], from[96];
} repair_label;

typedef struct {
    as_plan_run_stats *st;
    const as_plan_run_cfg *c;
    const as_plan_input *in;
    as_repair_stats *rs;
    repair_label *done;     /* the repaired plans written, to refuse two under one label */
    int64_t ndone, capdone;
} repair_ctx;

static const as_taskrec *task_of(const as_plan_input *in, int64_t id)
{
    for (int64_t i = 0; i < in->ntasks; i++)
        if (in->tasks[i].id == id) return &in->tasks[i];
    return NULL;
}

/* the features of a plan record's items (whole tables and pieces) from in, malloc'd [n] in
 * *items; 0, or -1 with err naming the first item without features */
static int record_items(const as_plan_input *in, const as_planrec *pr, const char *label, as_features **items, char *err,
                        size_t errlen)
{
    *items = as_calloc((size_t)(pr->n ? pr->n : 1), sizeof **items);
    for (int64_t i = 0; i < pr->n; i++) {
        as_piece whole = { 0 };
        if (as_featidx_piece(&in->ft, pr->tables[i], pr->pieces ? &pr->pieces[i] : &whole, &(*items)[i])) {
            char nb[96];
            snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s has no features in the input (as-features%s)", pr->task,
                     label, as_piece_name(nb, sizeof nb, pr->tables[i], pr->pieces ? &pr->pieces[i] : &whole),
                     pr->pieces ? " --row-pieces for row pieces" : "");
            free(*items);
            *items = NULL;
            return -1;
        }
    }
    return 0;
}

/* a plan record's placement under cap (0: none): 0, or -1 with err naming the first shard
 * over it; why says whose cap it is */
static int record_cap(const as_planrec *pr, const as_features *items, uint64_t cap, const char *label, const char *why,
                      char *err, size_t errlen)
{
    if (!cap) return 0;
    uint64_t *used = as_calloc((size_t)(pr->shards ? pr->shards : 1), sizeof *used);
    int64_t over = -1;
    for (int64_t i = 0; i < pr->n; i++)
        if (pr->assign[i] >= 0) used[pr->assign[i]] += as_plan_table_bytes(&items[i]);
        else if (pr->assign[i] == AS_DP)
            for (int64_t k = 0; k < pr->shards; k++) used[k] += as_plan_dp_bytes(&items[i], pr->shards);
    for (int64_t k = 0; k < pr->shards && over < 0; k++)
        if (used[k] > cap) over = k;
    if (over >= 0)
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): shard %" PRId64 " holds %" PRIu64 " bytes, over the %" PRIu64
                 "-byte cap%s", pr->task, label, over, used[over], cap, why);
    free(used);
    return over >= 0 ? -1 : 0;
}

/* a plan label's algorithm (its part before the first '+'): 0, or -1 with err */
static int label_alg(const char *label, int64_t task, as_alg *alg, char *err, size_t errlen)
{
    as_plan_label l;
    as_plan_label_parse(label, &l);
    *alg = l.alg;
    if (!l.known) {
        snprintf(err, errlen, "plan of task %" PRId64 ": unknown algorithm '%s'", task, label);
        return -1;
    }
    return 0;
}

/* one measured plan record under repair, and what it owns */
typedef struct {
    as_planrec pr;
    char label[64];                 /* its alg */
    as_alg alg;                     /* the label's algorithm */
    int rounds;                     /* the measured rounds its label carries */
    const as_taskrec *t;              /* its task */
    double *meas, *scale;           /* [K] each shard's measured cost (NaN: none); measured / predicted */
    double comm;                    /* its comm_gbps (0: none) */
    as_comm_model cmodel;           /* its comm_model, when has_cmodel */
    int has_cmodel;
    as_mgate mq;                    /* its model_quality, when has_mq */
    int has_mq;
    as_features *items;             /* [n] its items' features: whole tables, or their pieces */
    const as_features **fi;         /* [n] views of items */
    int64_t *ids;                   /* [n] their table ids */
} measured_plan;

static void measured_plan_free(measured_plan *m)
{
    free(m->fi);
    free(m->ids);
    free(m->items);
    free(m->meas);
    free(m->scale);
    as_planrec_free(&m->pr);
}

static int label_wanted(const char *want, const char *label, as_alg alg, int foreign);

/* label_alg's error in err, for --repair without --alg, told what to pass: -1 */
static int repair_alg_hint(char *err, size_t errlen)
{
    char names[256] = "";
    for (int a = 0; a < AS_ALG_COUNT; a++) {
        const size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", a ? ", " : "", as_alg_name((as_alg)a));
    }
    const size_t l = strlen(err);
    snprintf(err + l, errlen - l, " (an imported plan's?): --repair rebuilds only the plans of our algorithms (%s); "
             "pass --alg with those to repair, e.g. --alg all,torchrec, or with labels, e.g. --alg "
             "cost-greedy+split: plans of other labels are then skipped", names);
    return -1;
}

/* whether to repair the record read into m: its task, its label's algorithm and rounds, its
 * shards; 0 repair, 1 skip it (counted), -1 with err */
static int measured_plan_select(repair_ctx *R, const msgpack_object *o, measured_plan *m, char *err, size_t errlen)
{
    const as_plan_run_cfg *c = R->c;
    const as_planrec *pr = &m->pr;
    m->t = pr->has_task ? task_of(R->in, pr->task) : NULL;
    if (!m->t || pr->unplaced || pr->n < 1) {   /* another split's task, or an infeasible plan */
        R->rs->skipped++;
        return 1;
    }
    as_obj_str(o, "alg", m->label, sizeof m->label);
    if (label_alg(m->label, pr->task, &m->alg, err, errlen)) {
        /* an imported plan (e.g. torchrec-own) is not among the planners a filter names */
        if (!c->repair_filter && !c->repair_labels) return repair_alg_hint(err, errlen);
        R->rs->skipped++;
        return 1;
    }
    as_plan_label l;
    as_plan_label_parse(m->label, &l);
    m->rounds = l.measured;
    if ((c->repair_filter && !c->want[m->alg]) || (c->repair_labels && !label_wanted(c->repair_labels, m->label, m->alg, 0)) ||
        (c->repair_round > 0 && m->rounds != c->repair_round - 1)) {
        R->rs->skipped++;
        return 1;
    }
    if (c->shards && c->shards != pr->shards) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): %" PRId64 " shards, --shards %" PRId64, pr->task, m->label,
                 pr->shards, c->shards);
        return -1;
    }
    return 0;
}

/* the measured costs as the strict reader (ep, as_planrec_full_read) read them: one per shard,
 * a number >= 0 or nil (a shard that failed: NaN), and the record's communication
 * bandwidth and model_quality; 0, or -1 with err */
static int measured_plan_costs(measured_plan *m, const msgpack_object *o, const as_planrec_full *ep, char *err, size_t errlen)
{
    const int64_t K = m->pr.shards;
    if (ep->cost_kind != 1 || ep->K != K) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): 'cost_ms' is not a list of %" PRId64 " costs", m->pr.task,
                 m->label, K);
        return -1;
    }
    m->meas = as_malloc((size_t)K * sizeof *m->meas);
    m->scale = as_malloc((size_t)K * sizeof *m->scale);
    memcpy(m->meas, ep->cost, (size_t)K * sizeof *m->meas);
    char e2[512];
    /* its communication charge: comm_gbps and comm_model (lib/records/comm.h), bad data refused */
    if (as_comm_record_read(o, &m->comm, &m->cmodel, &m->has_cmodel, e2, sizeof e2)) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", m->pr.task, m->label, e2);
        return -1;
    }
    /* the quality of the model that placed it, kept on the plan as it was measured */
    m->has_mq = ep->has_mq;
    if (ep->has_mq) m->mq = ep->mq;
    return 0;
}

/* each shard's measured / predicted kernel cost into scale; a shard without both (empty,
 * or not measured) takes the median of the others, 1 when there is none */
static void measured_scale(double *scale, const double *meas, const as_plan *pl, int64_t K)
{
    double *known = as_malloc((size_t)K * sizeof *known);
    int64_t nk = 0;
    for (int64_t k = 0; k < K; k++) {
        scale[k] = pl->count[k] && isfinite(meas[k]) && meas[k] > 0 && pl->pred[k] > 0 ? meas[k] / pl->pred[k] : NAN;
        if (isfinite(scale[k])) known[nk++] = scale[k];
    }
    const double med = nk ? as_stats_median(known, nk) : 1;
    for (int64_t k = 0; k < K; k++) if (!isfinite(scale[k])) scale[k] = med;
    free(known);
}

/* the record rebuilt as a fixed placement (keys 0, as autoshard's) into pl, with its
 * measured scales set in pc for the refinement; 0, or -1 with e2 */
static int rebuild(as_plan *pl, as_plan_cfg *pc, measured_plan *m, char *e2, size_t e2len)
{
    const int64_t K = m->pr.shards, n = m->pr.n;
    if (as_plan_make(pl, pc, m->fi, n, e2, e2len)) return -1;
    measured_scale(m->scale, m->meas, pl, K);
    pc->shard_scale = m->scale;
    as_plan_label l;
    as_plan_label_parse(m->label, &l);
    pl->split = l.split;
    pl->replicated = l.replicated;
    pl->comm_gbps = m->comm;
    pl->comm_model = m->has_cmodel ? m->cmodel.name : NULL;
    if (m->pr.pieces) {
        pl->pieces = as_malloc((size_t)n * sizeof *pl->pieces);
        memcpy(pl->pieces, m->pr.pieces, (size_t)n * sizeof *pl->pieces);
    }
    return 0;
}

/* a repaired plan counted, and its measured and expected slowest shard in the debug log */
static void repair_count(repair_ctx *R, const measured_plan *m, const as_plan *pl)
{
    double mmax = 0, after = 0;
    for (int64_t k = 0; k < m->pr.shards; k++) {
        if (isfinite(m->meas[k]) && m->meas[k] > mmax) mmax = m->meas[k];
        const double v = m->scale[k] * pl->pred[k];
        if (v > after) after = v;
    }
    R->rs->plans++;
    R->rs->steps += pl->refine.moves + pl->refine.swaps;
    R->rs->changed += pl->refine.moves + pl->refine.swaps > 0;
    as_debug("task %" PRId64 ": %s: measured slowest shard %.4f ms; after %" PRId64 " moves and %" PRId64
             " swaps on the measured costs, %.4f ms expected (kernel)", m->pr.task, m->label, mmax, pl->refine.moves,
             pl->refine.swaps, after);
}

/* the cover of a plan record's pieces against the tables' sizes in (every piece within its
 * table, every table covered to its last column and row); 0, or -1 with err */
static int record_cover(const as_plan_input *in, const as_planrec *pr, const char *label, char *err, size_t errlen)
{
    char e2[512];
    if (!as_featidx_check_cover(&in->ft, pr->tables, pr->pieces, pr->n, e2, sizeof e2)) return 0;
    snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", pr->task, label, e2);
    return -1;
}

/* one measured plan record (ep: as the strict reader read it): rebuilt on its items'
 * features, refined with each shard's measured / predicted scale, written as
 * ALG...+measured (one round more) */
static int repair_one(repair_ctx *R, const msgpack_object *o, const as_planrec_full *ep, char *err, size_t errlen)
{
    const as_plan_run_cfg *c = R->c;
    char e2[768];
    measured_plan m = { .label = "" };
    as_planrec_full_place(ep, &m.pr);
    int sel = measured_plan_select(R, o, &m, err, errlen);
    /* the measured costs, the cover against the tables' sizes, and the items' features:
       whole tables, or their pieces */
    if (sel || measured_plan_costs(&m, o, ep, err, errlen) || record_cover(R->in, &m.pr, m.label, err, errlen) ||
        record_items(R->in, &m.pr, m.label, &m.items, err, errlen)) {
        measured_plan_free(&m);
        return sel > 0 ? 0 : -1;
    }
    const int64_t K = m.pr.shards, n = m.pr.n;
    item_views(m.items, n, &m.fi, &m.ids, NULL);
    /* its cap: --mem-cap, else the plan's own (the cap it was made under), else its task's */
    const msgpack_object *co = as_obj_get(o, "mem_cap");
    const int own = co && co->type != MSGPACK_OBJECT_NIL;
    const uint64_t mcap = c->cap_given ? c->mem_cap : own ? ep->mem_cap : m.t->mem_cap;
    /* the measured plan under that cap */
    if (record_cap(&m.pr, m.items, mcap, m.label, c->cap_given ? " of --mem-cap" : own ? " of the plan" : " of its task",
                   err, errlen)) {
        measured_plan_free(&m);
        return -1;
    }
    as_plan_policy fixed = { m.pr.assign, fixed_place, 1, NULL, NULL };
    /* rebuilt as a fixed placement (keys 0, as autoshard's), refined the same way */
    as_plan_cfg pc = { .alg = AS_ALG_AUTOSHARD, .shards = K, .mem_cap = mcap, .seed = c->seed, .rng_stream = m.t->id,
                       .model = c->model, .policy = &fixed, .comm_gbps = m.comm,
                       .comm_model = m.has_cmodel ? &m.cmodel : NULL };
    as_plan pl;
    int rc = rebuild(&pl, &pc, &m, e2, sizeof e2);
    as_taskrec tki = *m.t;
    tki.shards = K;
    tki.tables = m.ids;
    tki.ntables = n;
    as_plan_meta meta = { .task = &tki, .alg = m.alg, .seed = c->seed, .mem_cap = mcap, .world = c->world,
                          .model = c->model_path, .model_device = c->model_device,
                          .policy = as_planner_of(m.alg)->needs & AS_PLANNER_POLICY ? c->policy_path : NULL, .items = m.fi,
                          .model_quality = c->model_quality };
    if (!rc && c->keep_unrefined) {
        /* the plan as it was measured, its label and its model's quality as they came, to
           measure beside the new one */
        as_plan_label l;
        as_plan_label_parse(m.label, &l);
        pl.refine.done = l.refined;
        pl.measured = m.rounds;
        as_plan_meta was = meta;
        was.model_quality = m.has_mq ? &m.mq : NULL;
        emit(R->st, c, &was, &pl, m.fi, NULL);
    }
    if (!rc) {
        rc = as_plan_refine(&pl, &pc, m.fi, n, c->refine_ms, c->refine_steps, e2, sizeof e2);
        if (rc) as_plan_free(&pl);
    }
    if (rc) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", m.pr.task, m.label, e2);
        measured_plan_free(&m);
        return -1;
    }
    pl.measured = m.rounds + 1;
    /* two plans of a task repaired under one label (e.g. ALG+split and ALG+split+refine both
       become ALG+split+refine+measured) could not be told apart downstream: refused */
    char lab[96];
    as_plan_alg_label(&pl, m.alg, lab, sizeof lab);
    for (int64_t i = 0; i < R->ndone; i++)
        if (R->done[i].task == m.pr.task && !strcmp(R->done[i].label, lab)) {
            snprintf(err, errlen, "plan of task %" PRId64 " (%s): its repair would be labelled %s, as the repair of %s of "
                     "the same task: pick one with --alg (e.g. --alg =%s)", m.pr.task, m.label, lab, R->done[i].from, m.label);
            as_plan_free(&pl);
            measured_plan_free(&m);
            return -1;
        }
    if (R->ndone == R->capdone) {
        R->capdone = R->capdone ? 2 * R->capdone : 16;
        R->done = as_realloc(R->done, (size_t)R->capdone * sizeof *R->done);
    }
    R->done[R->ndone].task = m.pr.task;
    snprintf(R->done[R->ndone].label, sizeof R->done[R->ndone].label, "%s", lab);
    snprintf(R->done[R->ndone].from, sizeof R->done[R->ndone].from, "%s", m.label);
    R->ndone++;
    repair_count(R, &m, &pl);
    emit(R->st, c, &meta, &pl, m.fi, NULL);
    as_plan_free(&pl);
    measured_plan_free(&m);
    return 0;
}

static int repair_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    repair_ctx *R = ctx;
    if (!as_planrec_is(&rec->obj)) return 0;
    /* every plan record through the one strict reader as-eval reads plans with */
    char e2[900];
    as_planrec_full ep;
    if (as_planrec_full_read(&rec->obj, &ep, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
        return -1;
    }
    char kind[32] = "";
    int rc = 0;
    if (as_obj_str(&rec->obj, "cost_kind", kind, sizeof kind) || strcmp(kind, "measured")) R->rs->unmeasured++;
    else if ((rc = repair_one(R, &rec->obj, &ep, e2, sizeof e2)))
        snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
    as_planrec_full_free(&ep);
    return rc;
}

int as_plan_repair_run(as_plan_run_stats *st, as_repair_stats *rs, const as_plan_run_cfg *c, const as_plan_input *in,
                       const char *file, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    memset(rs, 0, sizeof *rs);
    if (!c->model) { snprintf(err, errlen, "--repair needs a cost model"); return -1; }
    repair_ctx R = { st, c, in, rs, NULL, 0, 0 };
    char *files[1] = { (char *)file };
    const int rc = as_read_records(files, 1, repair_rec, &R, err, errlen);
    free(R.done);
    return rc;
}

/* ---- --export: chosen plans rebuilt and written for TorchRec or as text -------------------- */

typedef struct {
    as_plan_run_stats *st;
    const as_plan_run_cfg *c;
    const as_plan_input *in;
    int64_t exported, skipped;
} export_ctx;

/* label (of algorithm base; foreign: a label not of ours, an imported plan's) is one of the
   tokens of want (as_plan_label_next): a token with a '+', one that names no algorithm of ours
   (e.g. torchrec-own) or one written =LABEL (the last) matches that label exactly; an algorithm's name
   every label of that algorithm; want NULL: every label */
static int label_wanted(const char *want, const char *label, as_alg alg, int foreign)
{
    if (!want) return 1;
    const char *p = want;
    char tok[128];
    int hit = 0, rc;
    while (!hit && (rc = as_plan_label_next(&p, tok, sizeof tok))) {
        as_alg a;
        if (rc < 0) continue;   /* longer than any label */
        if (tok[0] == '=') hit = !strcmp(tok + 1, label);   /* to the end of want, commas and all */
        else if (strchr(tok, '+') || as_alg_parse(tok, &a)) hit = !strcmp(tok, label);
        else hit = !foreign && a == alg;
    }
    return hit;
}

int as_plan_emit_placed(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const as_planrec *pr,
                        const as_plan_placed *o, char *err, size_t errlen)
{
    return as_plan_emit_refined(st, c, in, pr, o, NULL, err, errlen);
}

int as_plan_emit_refined(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const as_planrec *pr,
                         const as_plan_placed *o, const as_plan_refined *rf, char *err, size_t errlen)
{
    char e2[768];
    const int64_t K = pr->shards, n = pr->n;
    as_features *items;
    if (record_cover(in, pr, o->label, err, errlen) || record_items(in, pr, o->label, &items, err, errlen)) return -1;
    const as_features **fi;
    int64_t *ids;
    item_views(items, n, &fi, &ids, NULL);
    int rc = record_cap(pr, items, o->mem_cap, o->label, o->cap_why, err, errlen);
    as_plan pl;
    if (!rc) {
        /* the placement as it is (an unplaced table stays unplaced: the plan is infeasible) */
        as_plan_policy fixed = { pr->assign, fixed_place, 1, NULL, NULL };
        as_plan_cfg pc = { .alg = AS_ALG_AUTOSHARD, .shards = K, .mem_cap = o->mem_cap, .seed = c->seed,
                           .rng_stream = pr->task, .model = c->model, .policy = &fixed, .comm_gbps = o->comm_gbps,
                           .comm_model = o->comm_model };
        if ((rc = as_plan_make(&pl, &pc, fi, n, e2, sizeof e2)))
            snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", pr->task, o->label, e2);
    }
    if (!rc) {
        as_plan_label l;
        as_plan_label_parse(o->label, &l);
        pl.split = l.split;
        pl.replicated = l.replicated;
        pl.refine.done = l.refined;
        if (l.refined && rf && rf->done) pl.refine = *rf;   /* its record's figures */
        pl.measured = l.measured;
        pl.comm_gbps = o->comm_gbps;
        pl.comm_model = o->comm_model ? o->comm_model->name : NULL;
        pl.plan_ms = o->plan_ms;   /* the planning time the plan came with, not the rebuild's */
        if (pr->pieces) {
            pl.pieces = as_malloc((size_t)n * sizeof *pl.pieces);
            memcpy(pl.pieces, pr->pieces, (size_t)n * sizeof *pl.pieces);
        }
        as_taskrec tki = { .id = pr->task, .tables = ids, .ntables = n, .shards = K, .mem_cap = o->mem_cap };
        snprintf(tki.split, sizeof tki.split, "%s", o->split ? o->split : "");
        /* placed elsewhere: no policy, no model_quality */
        as_plan_meta meta = { .task = &tki, .alg = o->alg, .seed = o->seed, .mem_cap = o->mem_cap, .world = o->world,
                              .model = c->model_path, .model_device = c->model_device, .items = fi,
                              .label = o->verbatim ? o->label : NULL };
        emit(st, c, &meta, &pl, fi, NULL);
        as_plan_free(&pl);
    }
    free(fi); free(ids); free(items);
    return rc;
}

/* one plan record (ep: as the strict reader read it) rebuilt and written */
static int export_one(export_ctx *X, const msgpack_object *o, const as_planrec_full *ep, char *err, size_t errlen)
{
    const as_plan_run_cfg *c = X->c;
    char e2[768], label[64] = "";
    as_planrec pr;
    as_planrec_full_place(ep, &pr);
    as_alg alg;
    snprintf(label, sizeof label, "%s", ep->alg);
    /* a label not of ours (an imported plan's, e.g. torchrec-own) is exported as it is */
    const int foreign = label_alg(label, pr.task, &alg, e2, sizeof e2) != 0;
    if (foreign) alg = AS_ALG_TORCHREC;
    if ((c->export_task >= 0 && pr.task != c->export_task) || !label_wanted(c->export_algs, label, alg, foreign)) {
        X->skipped++;
        as_planrec_free(&pr);
        return 0;
    }
    as_plan_placed pp = { label, alg, c->cap_given ? c->mem_cap : ep->mem_cap, c->cap_given ? " of --mem-cap" : " of the plan",
                          0, 0, c->seed, "", c->world, foreign, NULL };
    as_comm_model cm;
    int has_cm;
    if (as_comm_record_read(o, &pp.comm_gbps, &cm, &has_cm, e2, sizeof e2)) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", pr.task, label, e2);
        as_planrec_free(&pr);
        return -1;
    }
    pp.comm_model = has_cm ? &cm : NULL;
    as_obj_f64(o, "plan_ms", &pp.plan_ms);
    as_plan_refined rf;
    if (as_planrec_refine_read(o, &rf, e2, sizeof e2)) {
        snprintf(err, errlen, "plan of task %" PRId64 " (%s): %s", pr.task, label, e2);
        as_planrec_free(&pr);
        return -1;
    }
    pp.split = ep->split;   /* read by the names' rule (planrec.c) */
    int64_t seed = (int64_t)c->seed;
    as_obj_i64(o, "seed", &seed);
    pp.seed = (uint64_t)seed;
    int rc = as_plan_emit_refined(X->st, c, X->in, &pr, &pp, &rf, err, errlen);
    if (!rc) X->exported++;
    as_planrec_free(&pr);
    return rc;
}

static int export_rec(void *ctx, const as_reader *r, const as_record *rec, char *err, size_t errlen)
{
    if (!as_planrec_is(&rec->obj)) return 0;
    /* every plan record through the one strict reader as-eval reads plans with */
    char e2[900];
    as_planrec_full ep;
    int rc = as_planrec_full_read(&rec->obj, &ep, e2, sizeof e2);
    if (!rc) {
        rc = export_one(ctx, &rec->obj, &ep, e2, sizeof e2);
        as_planrec_full_free(&ep);
    }
    if (rc) snprintf(err, errlen, "%s: record %" PRIu64 ": %s", as_reader_name(r), rec->index, e2);
    return rc;
}

int as_plan_export_run(as_plan_run_stats *st, const as_plan_run_cfg *c, const as_plan_input *in, const char *file,
                       int64_t *exported, int64_t *skipped, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    export_ctx X = { st, c, in, 0, 0 };
    char *files[1] = { (char *)file };
    int rc = as_read_records(files, 1, export_rec, &X, err, errlen);
    *exported = X.exported;
    *skipped = X.skipped;
    return rc;
}
