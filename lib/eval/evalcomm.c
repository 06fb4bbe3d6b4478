/* evalcomm.c - the communication of each plan's slowest rank by sharding type; see evalcomm.h */
#include "evalcomm.h"

#include <inttypes.h>
#include <math.h>

int as_eval_comm_parts(const as_planrec_full *q, int64_t k, const as_comm_model *m, double ms[AS_NSH])
{
    double t;
    for (int s = 0; s < AS_NSH; s++) ms[s] = 0;
    if (!as_comm_on(m)) return -1;
    return as_eval_comm_ms(q, k, m, &t, ms);
}

/* the rank of the highest known cost, or -1 (a cost unknown) */
static int64_t slowest(const as_planrec_full *q)
{
    int64_t s = -1;
    for (int64_t k = 0; k < q->K; k++) {
        if (!isfinite(q->cost[k])) return -1;
        if (s < 0 || q->cost[k] > q->cost[s]) s = k;
    }
    return s;
}

static void row(FILE *f, as_eval_format fmt, const as_planrec_full *q, int64_t s, double kern, const double ms[AS_NSH])
{
    double c = 0;
    for (int t = 0; t < AS_NSH; t++) c += ms[t];
    const double pct = kern + c > 0 ? 100.0 * c / (kern + c) : NAN;
    if (fmt == AS_EVAL_CSV) {
        fprintf(f, "%" PRId64 ",%" PRId64 ",", q->run, q->task);
        as_eval_csv_field(f, q->alg);
        fprintf(f, ",%" PRId64 ",%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4g\n", s, kern, ms[0], ms[1], ms[2], ms[3], ms[4], pct);
    } else if (fmt == AS_EVAL_MARKDOWN) {
        fprintf(f, "| %" PRId64 " | %" PRId64 " | ", q->run, q->task);
        as_eval_md_cell(f, q->alg);
        fprintf(f, " | %" PRId64 " | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.1f |\n", s, kern, ms[0], ms[1], ms[2], ms[3], ms[4],
                pct);
    }
    else
        fprintf(f, "%4" PRId64 " %5" PRId64 "  %-32s %5" PRId64 " %10.4f %11.4f %11.4f %10.4f %13.4f %14.4f %7.1f\n", q->run,
                q->task, q->alg, s, kern, ms[0], ms[1], ms[2], ms[3], ms[4], pct);
}

void as_eval_print_comm(FILE *f, as_eval_format fmt, const as_planrec_full *p, int64_t n, const as_comm_model *m)
{
    if (!as_comm_on(m)) {
        if (fmt != AS_EVAL_CSV)
            fprintf(f, "%scommunication by sharding type: not modelled (--comm-gbps 0)\n\n", fmt == AS_EVAL_MARKDOWN ? "" : "# ");
        return;
    }
    char how[AS_COMM_NAME_MAX + 160];
    as_comm_words(m, how, sizeof how);
    if (fmt == AS_EVAL_CSV)
        fprintf(f, "run,task,alg,rank,kernel_ms,table_wise_ms,column_wise_ms,row_wise_ms,data_parallel_ms,table_row_wise_ms,"
                   "comm_pct\n");
    else if (fmt == AS_EVAL_MARKDOWN)
        fprintf(f, "**Communication of each plan's slowest rank, by sharding type**, modelled %s: table- and "
                   "column-wise all-to-alls, row pieces' ids and reduce-scattered partial sums, data-parallel "
                   "tables' all-reduce, table-row-wise pieces' reduce-scatter within their host and all-to-all "
                   "across\n\n| run | task | alg | rank | kernel (ms) | table-wise (ms) | column-wise (ms) | "
                   "row-wise (ms) | data-parallel (ms) | table-row-wise (ms) | communication (%%) |\n"
                   "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                how);
    else
        fprintf(f, "# communication of each plan's slowest rank, by sharding type, modelled %s\n"
                   "%4s %5s  %-32s %5s %10s %11s %11s %10s %13s %14s %7s\n", how, "run", "task", "alg", "rank", "kernel ms",
                "table-wise", "column-wise", "row-wise", "data-parallel", "table-row-wise", "comm %");
    int64_t none = 0;
    for (int64_t j = 0; j < n; j++) {
        const as_planrec_full *q = &p[j];
        const int64_t s = q->feasible ? slowest(q) : -1;
        double ms[AS_NSH];
        if (s < 0 || as_eval_comm_parts(q, s, m, ms)) { none++; continue; }
        const double kern = q->cost[s] - (q->comm_ms ? q->comm_ms[s] : 0);
        row(f, fmt, q, s, kern, ms);
    }
    if (fmt != AS_EVAL_CSV) {
        if (none) fprintf(f, "%s%" PRId64 " plan%s left out: infeasible, a rank's cost unknown, or no communication bytes\n",
                          fmt == AS_EVAL_MARKDOWN ? "\n" : "# ", none, none == 1 ? "" : "s");
        fputc('\n', f);
    }
}
