/* evalcomm.c - the communication of each plan's slowest rank by collective; see evalcomm.h */
#include "evalcomm.h"

#include <inttypes.h>
#include <math.h>

int as_eval_comm_parts(const as_eval_plan *q, int64_t k, double gbps, double ms[3])
{
    ms[0] = ms[1] = ms[2] = 0;
    if ((!q->comm_in && !q->comm_ar) || k < 0 || k >= q->K || !(gbps > 0)) return -1;
    const double bps = gbps * 1073741824.0 / 1e3;
    double all_tw = 0, all_rw = 0;
    for (int64_t j = 0; q->comm_in && j < q->K; j++) {
        const double rw = q->comm_rw ? q->comm_rw[j] : 0;
        all_rw += rw;
        all_tw += q->comm_in[j] + q->comm_out[j] - rw;
    }
    if (q->comm_in) {
        const double rw = q->comm_rw ? q->comm_rw[k] : 0;
        ms[0] = (q->comm_in[k] + q->comm_out[k] - rw + all_tw / (double)q->K) / bps;
        ms[1] = (rw + all_rw / (double)q->K) / bps;
    }
    ms[2] = q->comm_ar ? q->comm_ar[k] / bps : 0;
    return 0;
}

/* the rank of the highest known cost, or -1 (a cost unknown) */
static int64_t slowest(const as_eval_plan *q)
{
    int64_t s = -1;
    for (int64_t k = 0; k < q->K; k++) {
        if (!isfinite(q->cost[k])) return -1;
        if (s < 0 || q->cost[k] > q->cost[s]) s = k;
    }
    return s;
}

static void row(FILE *f, as_eval_format fmt, const as_eval_plan *q, int64_t s, double kern, const double ms[3])
{
    const double tot = kern + ms[0] + ms[1] + ms[2];
    const double pct = tot > 0 ? 100.0 * (ms[0] + ms[1] + ms[2]) / tot : NAN;
    if (fmt == AS_EVAL_CSV)
        fprintf(f, "%" PRId64 ",%" PRId64 ",%s,%" PRId64 ",%.6g,%.6g,%.6g,%.6g,%.4g\n", q->run, q->task, q->alg, s, kern,
                ms[0], ms[1], ms[2], pct);
    else if (fmt == AS_EVAL_MARKDOWN)
        fprintf(f, "| %" PRId64 " | %" PRId64 " | %s | %" PRId64 " | %.4f | %.4f | %.4f | %.4f | %.1f |\n", q->run, q->task,
                q->alg, s, kern, ms[0], ms[1], ms[2], pct);
    else
        fprintf(f, "%4" PRId64 " %5" PRId64 "  %-32s %5" PRId64 " %10.4f %12.4f %10.4f %11.4f %7.1f\n", q->run, q->task,
                q->alg, s, kern, ms[0], ms[1], ms[2], pct);
}

void as_eval_print_comm(FILE *f, as_eval_format fmt, const as_eval_plan *p, int64_t n, double gbps)
{
    if (!(gbps > 0)) {
        if (fmt != AS_EVAL_CSV)
            fprintf(f, "%scommunication by collective: not modelled (--comm-gbps 0)\n\n", fmt == AS_EVAL_MARKDOWN ? "" : "# ");
        return;
    }
    if (fmt == AS_EVAL_CSV)
        fprintf(f, "run,task,alg,rank,kernel_ms,all_to_all_ms,row_wise_ms,all_reduce_ms,comm_pct\n");
    else if (fmt == AS_EVAL_MARKDOWN)
        fprintf(f, "**Communication of each plan's slowest rank, by collective** (modelled at %g GiB/s: table- "
                   "and column-wise items' all-to-all, row pieces' ids and reduce-scattered partial sums, "
                   "data-parallel tables' all-reduce)\n\n| run | task | alg | rank | kernel (ms) | all-to-all (ms) | "
                   "row-wise (ms) | all-reduce (ms) | communication (%%) |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
                gbps);
    else
        fprintf(f, "# communication of each plan's slowest rank, by collective, modelled at %g GiB/s\n"
                   "%4s %5s  %-32s %5s %10s %12s %10s %11s %7s\n", gbps, "run", "task", "alg", "rank", "kernel ms",
                "all-to-all", "row-wise", "all-reduce", "comm %");
    int64_t none = 0;
    for (int64_t j = 0; j < n; j++) {
        const as_eval_plan *q = &p[j];
        const int64_t s = q->feasible ? slowest(q) : -1;
        double ms[3];
        if (s < 0 || as_eval_comm_parts(q, s, gbps, ms)) { none++; continue; }
        const double kern = q->cost[s] - (q->comm_ms ? q->comm_ms[s] : 0);
        row(f, fmt, q, s, kern, ms);
    }
    if (fmt != AS_EVAL_CSV) {
        if (none) fprintf(f, "%s%" PRId64 " plan%s left out: infeasible, a rank's cost unknown, or no communication bytes\n",
                          fmt == AS_EVAL_MARKDOWN ? "\n" : "# ", none, none == 1 ? "" : "s");
        fputc('\n', f);
    }
}
