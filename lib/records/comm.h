/* comm.h - the bytes an item of a plan (a table or a piece of one, by its features) moves
 * between GPUs per iteration, and the time they take: the communication every plan's shard
 * pays (lib/plan/objective.h charges it in every planner, plan records carry its bytes per
 * shard, as-eval charges it).
 *
 * What a shard moves, by sharding type (as TorchRec runs them):
 *   table-wise, column-wise  3 all-to-alls: the ids in, the pooled outputs forward, their
 *                            gradients backward
 *   row-wise                 1 all-to-all (the ids), a reduce-scatter of the partial sums
 *                            forward and an all-gather of their gradients backward
 *   data-parallel            1 all-reduce of the gradients
 *   table-row-wise           (TorchRec's table_row_wise: a table's row blocks on the L GPUs
 *                            of one host) 1 all-to-all (the ids), a reduce-scatter of the
 *                            partial sums within the host, then an all-to-all of the
 *                            host's 1/L of them across hosts, forward; the all-to-all and an
 *                            all-gather within the host backward. Told by its placement
 *                            (as-eval: the plan's row pieces of a table all on one host of
 *                            the model's L GPUs); our planners do not make it
 * A collective is global: every rank takes part, and pays a call's latency when the plan has
 * that sharding type anywhere, whatever it holds. Shard k's message of each call, in
 * nccl-tests' terms (the bytes each rank's buffer holds): for the ids, max(its own items'
 * ids, everyone's ids / K) (it receives its tables' ids and sends its batch's share: a link
 * carries both directions at once, so the larger side sets the time); for the outputs and
 * the gradients, half of max(its items' outputs and gradients, everyone's / K) each; for
 * the all-reduce, the gradients of the data-parallel tables.
 *
 * The models of a call's time (as_comm_model; --comm-model SPEC, --comm-gbps G):
 *   bandwidth   every byte at one rate, G GiB/s, summed over both sides (TorchRec's
 *               planner's old single figure, 600 GiB/s within a host); no latency
 *   A/B,A/B,A/B alpha-beta: each call alpha us plus its message x f / beta, beta the bus
 *               bandwidth in GB/s of the all-to-all, the ring collectives (reduce-scatter,
 *               all-gather) and the all-reduce (f = (K - 1) / K, the all-reduce's 2 (K - 1)
 *               / K: nccl-tests' busbw, its docs/PERFORMANCE.md); any K
 *   nvlink8     that model on one host of 8 NVLink 4 GPUs (H100 SXM), published constants:
 *                 all-to-all  alpha 10.5 us: nccl-tests on 8 Hopper GPUs of one NVSwitch
 *                             host, 10.3-11.1 us from 128 B to 4 KiB (deepseek-ai/DeepEP
 *                             issue 303, H20); beta 370 GB/s: NCCL's effective NVLink 4
 *                             bandwidth for collectives other than all-reduce on 8 H100
 *                             (NVIDIA, NVIDIA/nccl-tests issue 212; 365-370 GB/s ring on 2-8
 *                             GPUs, NVIDIA/nccl issue 1455)
 *                 ring        alpha 10.8 us: NCCL's own latency model for 8 ranks on NVLink,
 *                             LL protocol: 6.6 + 7 steps x 0.6 us (NVIDIA/nccl
 *                             src/graph/tuning.cc at 5067397); beta 370 GB/s
 *                 all-reduce  alpha 15.0 us: the same model, 6.6 + 14 x 0.6 us; beta 480
 *                             GB/s: NVLink SHARP all-reduce busbw on 8 H100 (nccl-tests
 *                             issue 212; 420-480 GB/s on 5-8 GPUs, nccl issue 1455)
 *               at most 8 ranks
 *   h100-ib     hosts of 8 H100 (nvlink8 within a host) joined by one 400 Gb/s InfiniBand
 *               NIC per GPU (AS_COMM_IB_*: constants and sources in comm.c); K <= 8, or
 *               a multiple of 8 ranks: an all-to-all's message splits into what stays in
 *               the host ((L - 1) / K of it, over NVLink) and what crosses hosts ((K - L)
 *               / K, over the NICs), the two at once, the slower setting the time; the
 *               ring collectives and the all-reduce run at the NICs' measured busbw
 *   nccl:FILE[,FILE...]  the user's own cluster: nccl-tests' output of alltoall_perf and
 *               of reduce_scatter_perf, all_gather_perf or all_reduce_perf (ncclperf.h:
 *               each call its measured time at its message, interpolated between the
 *               measured sizes; a file's collective from its content or name, or named:
 *               a2a=FILE, rs=FILE, ag=FILE, ar=FILE). A collective not given comes from
 *               those that are: a reduce-scatter as the all-gather and back, either as
 *               half an all-reduce of the same bytes, an all-reduce as the two; the
 *               all-to-all must be given. Holds for exactly the ranks the files ran on
 *   torchrec[:L] TorchRec's own planner's estimate (its EmbeddingPerfEstimator's
 *               communication terms, meta-pytorch/torchrec 376cac6, planner/estimator/):
 *               each shard pays its own items' outputs and gradients over one bandwidth
 *               (600 GiB/s when the plan's K ranks fit one host of L, default K; else
 *               12.5 GiB/s), row-wise pieces a batched copy of their outputs besides
 *               (2.455 x the bytes over 897 GiB/s), data-parallel tables their all-reduce
 *               (table bytes x (2n - 1) / n over 12.5 GiB/s x L, n = min(K / L, 2), twice
 *               beyond two hosts) and their optimizer (9.22 x the bytes over 448.5 GiB/s);
 *               the ids are not charged (TorchRec leaves them out of its total)
 * Any of them followed by @bw=X, @a2a-bw=X, @lat=Y (joined by ','): every collective's
 * bandwidth (a call of S bytes takes the time of S / X), the all-to-all's alone, or every
 * call's latency (the smallest message's time) times X, X, Y: what as-eval's range of a
 * choice (--table range) evaluates, and a user can plan under.
 */
#ifndef AS_COMM_H
#define AS_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "featurize.h"
#include "ncclperf.h"

#define AS_COMM_GBPS 600.0   /* one host of NVLink GPUs, TorchRec's planner's intra-node figure */
#define AS_COMM_GBPS_MIN 1e-3   /* a bandwidth model's rate: 0 (none) or in [MIN, MAX] GiB/s */
#define AS_COMM_GBPS_MAX 1e6
#define AS_COMM_NAME_MAX 1024   /* bytes of a model's name with its NUL (a record's comm_model) */

/* the sharding types, as TorchRec runs them: each has its own distributions */
typedef enum { AS_SH_TW, AS_SH_CW, AS_SH_RW, AS_SH_DP, AS_SH_TWRW, AS_NSH } as_shtype;
typedef enum { AS_COMM_BANDWIDTH, AS_COMM_AB, AS_COMM_HOSTS, AS_COMM_NCCL, AS_COMM_TORCHREC } as_comm_kind;

typedef struct {
    int ab;                     /* 1: charged by collectives (every kind but the bandwidth) */
    as_comm_kind kind;
    double gbps;                /* bandwidth: GiB/s; <= 0: nothing charged */
    double alpha_us[AS_NCOLL];  /* alpha-beta (h100-ib: within a host): a call's latency, us */
    double beta_gbs[AS_NCOLL];  /* ... its bus bandwidth, GB/s (10^9 bytes) */
    double xalpha_us[AS_NCOLL]; /* h100-ib: across hosts */
    double xbeta_gbs[AS_NCOLL];
    int64_t local;              /* h100-ib, torchrec: GPUs a host (0: torchrec's K) */
    const as_nccl_table *tab[AS_NCOLL];   /* nccl: each collective's table, NULL: not given */
    int64_t ranks;              /* nccl: the ranks its tables ran on */
    int64_t max_ranks;          /* the most ranks it holds for (0: any) */
    double bw, a2a_bw, lat;     /* the @ factors: 1 unless given */
    char name[AS_COMM_NAME_MAX]; /* "600 GiB/s", "nvlink8", ...: the canonical spec */
} as_comm_model;

/* A shard's load in a plan, what its communication is computed from: by sharding type
 * (table-, column-, row-wise), its own items' ids (as_comm_bytes in) and outputs with their
 * gradients (out), everyone's (the sums over the shards), the bytes it sends in the
 * all-reduce of the data-parallel items (as_plan_dp_comm_bytes: 2 (K - 1) / K x their
 * gradients), and which types the plan has (has[AS_SH_DP]: data-parallel items) */
typedef struct {
    double own_in[AS_NSH], own_out[AS_NSH];
    double all_in[AS_NSH], all_out[AS_NSH];
    double ar;
    int has[AS_NSH];
    int64_t local;      /* the GPUs of a host table-row-wise pieces share (0: none) */
} as_comm_load;

/* the bandwidth model at gbps GiB/s (<= 0: none) */
as_comm_model as_comm_bandwidth(double gbps);
/* 1 when m charges anything */
int as_comm_on(const as_comm_model *m);
/* Parse --comm-model's value (above): nvlink8, h100-ib, torchrec[:L], nccl:FILE[,FILE...]
 * (the files read and checked now: an error names the file and line), or A/B,A/B,A/B (alpha
 * us in [0, 1e6], beta GB/s in (0, 1e6]; strtod's numbers, spaces and tabs allowed around
 * each), each with an optional @bw=X,a2a-bw=X,lat=Y (X in (0, 1e6], Y in [0, 1e6]).
 * m->name is the canonical form, what a plan record's comm_model holds: the numbers each in
 * its shortest %g form that reads back exactly, no spaces, nccl's files each with its
 * collective (nccl:a2a=FILE,rs=FILE), the factors other than 1 in the order bw, a2a-bw,
 * lat; parsing it again gives the same model and the same name. A canonical form longer
 * than AS_COMM_NAME_MAX - 1 bytes is refused, never cut. 0; -1 with err (the spec is wrong);
 * -2 with err "FILE:LINE: ..." (an nccl-tests file cannot be read or is not a whole run: bad
 * data, a tool's exit 1) */
int as_comm_model_parse(const char *s, as_comm_model *m, char *err, size_t errlen);
/* m with its factors set (bw, a2a_bw, lat: > 0, >= 0) and its name made canonical again */
as_comm_model as_comm_scaled(const as_comm_model *m, double bw, double a2a_bw, double lat);
/* The one reader of a plan record's communication charge (as-plan --repair and --export):
 * comm_gbps (absent: 0) a number, 0 or in [AS_COMM_GBPS_MIN, AS_COMM_GBPS_MAX], into *gbps;
 * comm_model (absent: *has_model 0) a string that as_comm_model_parse takes, into *m
 * (*has_model 1). 0, or -1 with err naming the field; never a silent 0. */
int as_comm_record_read(const msgpack_object *rec, double *gbps, as_comm_model *m, int *has_model, char *err,
                        size_t errlen);
/* the GPUs of a host m knows (h100-ib, torchrec:L), else 0 */
int64_t as_comm_local(const as_comm_model *m);
/* -1 with err when m does not hold for K ranks (nvlink8: K > 8; h100-ib: K > 8 not a
 * multiple of 8; nccl: K not its ranks); else 0 */
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

/* the time (us) of one call of collective c over K ranks, a message of S bytes (above) */
double as_comm_call_us(const as_comm_model *m, int64_t K, as_coll c, double S);
/* The one definition of a shard's communication (ms) in a plan of K ranks, from its load
 * (the planners' objective, lib/plan/objective.h, and as-eval's charge); parts (NULL: not
 * wanted) gets each sharding type's time. The collectives' models at K <= 1: nothing moves,
 * 0 (the bandwidth model charges the bytes whatever K, as it always has). */
double as_comm_plan_shard_ms(const as_comm_model *m, int64_t K, const as_comm_load *l, double parts[AS_NSH]);

/* one item's bytes of its type (in, out; data-parallel: out its all-reduce bytes) as a
 * shard's time without latencies, linear: each call's time per byte between no message and
 * 1 GB. What a local search moving items can weigh (exact for the bandwidth and alpha-beta
 * models on the shard whose side is the larger; an estimate for measured tables) */
double as_comm_item_ms(const as_comm_model *m, int64_t K, as_shtype s, double in, double out);

/* what m charges, in words, for a report ("at 600 GiB/s", "by nvlink8 (...)", ...) */
void as_comm_words(const as_comm_model *m, char *buf, size_t len);
/* the same from a name as a record's comm_model holds (NULL: the bandwidth gbps) */
void as_comm_words_of(const char *name, double gbps, char *buf, size_t len);

/* the sharding types' names: "table-wise", "column-wise", "row-wise", "data-parallel",
 * "table-row-wise" */
extern const char *const as_comm_type_name[AS_NSH];

#endif
