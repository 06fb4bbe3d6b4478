/* comm.h - the bytes an item of a plan (a table or a piece of one, by its features) moves
 * between GPUs per iteration, and the time they take: the owner's side of the all-to-all
 * that every plan's shard pays (split.h charges it in the split search, refine.h in the
 * local search, plan records carry it per shard, as-eval charges it).
 *
 * Two models of that time (as_comm_model):
 *   bandwidth   every byte at one rate, G GiB/s (--comm-gbps G; TorchRec's planner's own
 *               model, 600 GiB/s within a host). A shard's bytes / G.
 *   alpha-beta  each collective TorchRec runs for a sharding type charged alpha per call
 *               plus its bytes over that collective's bus bandwidth beta (--comm-model):
 *                 table-wise, column-wise  3 all-to-alls (ids and pooled outputs forward,
 *                                          their gradients backward)
 *                 row-wise                 1 all-to-all (ids), 2 ring collectives
 *                                          (reduce-scatter of the partial sums forward,
 *                                          all-gather of their gradients backward)
 *                 data-parallel            1 all-reduce (the gradients)
 *               A collective is global: every rank takes part and pays its alpha when the
 *               plan has that sharding type anywhere, whatever it holds. Bytes: all-to-all
 *               and ring bytes x (K - 1) / K (1/K of them stays on the rank, nccl-tests'
 *               bus bandwidth: docs/PERFORMANCE.md there); the all-reduce bytes are already
 *               what a rank sends in the ring (2 (K - 1) / K x the gradients).
 *
 * The built-in alpha-beta model "nvlink8", one host of 8 NVLink 4 GPUs (H100 SXM), every
 * constant from a published NCCL source (docs/RESULTS.md "Communication by sharding type"):
 *   all-to-all  alpha 10.5 us: nccl-tests on 8 Hopper GPUs of one NVSwitch host, 10.3-11.1
 *               us from 128 B to 4 KiB (deepseek-ai/DeepEP issue 303, H20);
 *               beta 370 GB/s: NCCL's effective NVLink 4 bandwidth for collectives other
 *               than all-reduce on 8 H100 (NVIDIA, NVIDIA/nccl-tests issue 212; 365-370 GB/s
 *               ring on 2-8 GPUs, NVIDIA/nccl issue 1455)
 *   ring (reduce-scatter, all-gather)  alpha 10.8 us: NCCL's own latency model for 8 ranks
 *               on NVLink, LL protocol: base 6.6 + 7 steps x 0.6 us (NVIDIA/nccl
 *               src/graph/tuning.cc, baseLatencies and hwLatencies, at 5067397);
 *               beta 370 GB/s (as above)
 *   all-reduce  alpha 15.0 us: the same model, ring LL, 6.6 + 14 x 0.6 us;
 *               beta 480 GB/s: NVLink SHARP all-reduce bus bandwidth on 8 H100 (NVIDIA,
 *               nccl-tests issue 212; 420-480 GB/s on 5-8 GPUs, nccl issue 1455)
 * Alphas are small-message times, betas large-message rates: the two ends of the curve, the
 * model's shape. They hold for K <= 8 ranks of one host; a plan of more ranks is refused.
 * A user's own cluster: --comm-model A/B,A/B,A/B, alpha us / beta GB/s for the all-to-all,
 * the ring collectives and the all-reduce (nccl-tests' alltoall_perf, reduce_scatter_perf,
 * all_reduce_perf: the smallest size's time, the largest's busbw), any K. */
#ifndef AS_COMM_H
#define AS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "featurize.h"

#define AS_COMM_GBPS 600.0   /* one host of NVLink GPUs, TorchRec's planner's intra-node figure */
#define AS_COMM_GBPS_MIN 1e-3   /* a bandwidth model's rate: 0 (none) or in [MIN, MAX] GiB/s */
#define AS_COMM_GBPS_MAX 1e6
#define AS_COMM_NAME_MAX 128    /* bytes of a model's name with its NUL (a record's comm_model) */

/* the sharding types, as TorchRec runs them: each has its own distributions */
typedef enum { AS_SH_TW, AS_SH_CW, AS_SH_RW, AS_SH_DP, AS_NSH } as_shtype;
/* the collectives: all-to-all, ring (reduce-scatter / all-gather), all-reduce */
typedef enum { AS_COLL_A2A, AS_COLL_RING, AS_COLL_AR, AS_NCOLL } as_coll;

typedef struct {
    int ab;                     /* 0: bandwidth (gbps); 1: alpha-beta */
    double gbps;                /* bandwidth: GiB/s; <= 0: nothing charged */
    double alpha_us[AS_NCOLL];  /* alpha-beta: each call's latency, us */
    double beta_gbs[AS_NCOLL];  /* alpha-beta: bus bandwidth, GB/s (10^9 bytes) */
    int64_t max_ranks;          /* alpha-beta: the most ranks it holds for (0: any) */
    char name[AS_COMM_NAME_MAX]; /* "600 GiB/s", "nvlink8", or the canonical A/B,A/B,A/B */
} as_comm_model;

/* the bandwidth model at gbps GiB/s (<= 0: none) */
as_comm_model as_comm_bandwidth(double gbps);
/* 1 when m charges anything */
int as_comm_on(const as_comm_model *m);
/* Parse --comm-model's value: "nvlink8" (the built-in, above) or "A/B,A/B,A/B" (alpha us in
 * [0, 1e6], beta GB/s in (0, 1e6], for the all-to-all, ring and all-reduce; strtod's numbers,
 * spaces and tabs allowed around each and around the value). m->name is the canonical form,
 * what a plan record's comm_model holds: "nvlink8", or the six numbers each in its shortest
 * %g form that reads back exactly, joined by '/' and ',' with no space (" 1e1/370, 3/4,5/6"
 * is "10/370,3/4,5/6"); parsing it again gives the same model and the same name. A model
 * whose canonical form is longer than AS_COMM_NAME_MAX - 1 bytes (only numbers of very many
 * significant digits) is refused, never cut. 0, or -1 with err */
int as_comm_model_parse(const char *s, as_comm_model *m, char *err, size_t errlen);
/* The one reader of a plan record's communication charge (as-plan --repair and --export):
 * comm_gbps (absent: 0) a number, 0 or in [AS_COMM_GBPS_MIN, AS_COMM_GBPS_MAX], into *gbps;
 * comm_model (absent: *has_model 0) a string that as_comm_model_parse takes, into *m
 * (*has_model 1). 0, or -1 with err naming the field ("'comm_gbps' = -5 is not 0 (not
 * charged) or a bandwidth in [0.001, 1e+06] GiB/s"); never a silent 0. */
int as_comm_record_read(const msgpack_object *rec, double *gbps, as_comm_model *m, int *has_model, char *err,
                        size_t errlen);
/* -1 with err when m does not hold for K ranks (nvlink8: K > 8); else 0 */
int as_comm_model_check(const as_comm_model *m, int64_t K, char *err, size_t errlen);

/* item f's bytes: *in its ids (lookups x 8), *out its pooled outputs and their gradients
 * (2 x batch x dim x 4; a row piece's are full-width partial sums) */
void as_comm_bytes(const as_features *f, double *in, double *out);
/* the milliseconds item f's bytes (in + out) take at gbps GiB/s (0 when gbps <= 0) */
double as_comm_ms(const as_features *f, double gbps);
/* the sharding type of each item of a plan it[0..n) into type[n]: a whole table table-wise;
 * the pieces of a table whose row ranges differ row-wise; other pieces column-wise (a
 * piece alone says neither: its rows and dim are its own) */
void as_comm_types(const as_features *const *it, int64_t n, as_shtype *type);

/* One shard's communication time (ms) in a plan of K ranks: b[s] its bytes of sharding type s
 * (AS_SH_TW..RW: its items' own bytes plus its share of everyone's; AS_SH_DP: what it sends
 * in the all-reduce), has[s] whether the plan has type s on any shard. parts (NULL: not
 * wanted) gets each type's time. The alpha-beta model at K <= 1: nothing moves, 0 (the
 * bandwidth model charges the bytes whatever K, as it always has). */
double as_comm_shard_ms(const as_comm_model *m, int64_t K, const double b[AS_NSH], const int has[AS_NSH], double parts[AS_NSH]);

/* The one definition of a shard's communication in a plan of K ranks (the planners' objective,
 * lib/plan/objective.h, and as-eval's charge): own[s] the bytes of its items of sharding type s
 * (table-, column-, row-wise), all[s] their sum over every shard, ar the bytes it sends in the
 * all-reduce of the data-parallel tables, has[s] whether the plan has type s (has[AS_SH_DP]:
 * data-parallel tables): as_comm_shard_ms of b[s] = own[s] + all[s] / K (its side of each
 * collective and its share of everyone's) and b[AS_SH_DP] = ar. */
double as_comm_plan_shard_ms(const as_comm_model *m, int64_t K, const double own[AS_NSH], const double all[AS_NSH], double ar,
                             const int has[AS_NSH], double parts[AS_NSH]);

/* one item's bytes of its type as a shard's time without alphas: b x its collective's
 * factor / rate (the bandwidth model: b / G). What a local search moving items can weigh. */
double as_comm_item_ms(const as_comm_model *m, int64_t K, as_shtype s, double b);

/* the sharding types' names: "table-wise", "column-wise", "row-wise", "data-parallel" */
extern const char *const as_comm_type_name[AS_NSH];

#endif
