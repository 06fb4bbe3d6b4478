/* fuzz_comm.c - the communication models (lib/records/comm.h): --comm-model's parser
 * (as_comm_model_parse) and a plan record's communication charge (as_comm_record_read, the
 * reader of comm_gbps and comm_model for as-plan --repair and --export). Input: a mode byte;
 * with its bit 1 set, the spec's text follows (as a command line gives it, up to its first
 * NUL); else a stream of records (bit 0 as for `stream`, fuzz.h: the stream as it is, or raw
 * msgpack records compressed here), each read as a plan record's charge. A rejected input
 * must come with a message; an accepted spec must keep the parser's promises: its name is
 * canonical (no space, shorter than AS_COMM_NAME_MAX, parsed again the same model and the
 * same name), its numbers in range, and a shard's time under it finite and >= 0; an accepted
 * record's comm_gbps is 0 or in [AS_COMM_GBPS_MIN, AS_COMM_GBPS_MAX]. */
#include "fuzz.h"
#include "comm.h"
#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the promises of an accepted model m */
static void check_model(const as_comm_model *m)
{
    char err[1024];
    const size_t n = strnlen(m->name, sizeof m->name);
    if (n == 0 || n >= sizeof m->name || strpbrk(m->name, " \t\n\r")) abort();
    as_comm_model again;
    if (as_comm_model_parse(m->name, &again, err, sizeof err) || strcmp(again.name, m->name) || again.ab != m->ab ||
        memcmp(again.alpha_us, m->alpha_us, sizeof m->alpha_us) || memcmp(again.beta_gbs, m->beta_gbs, sizeof m->beta_gbs) ||
        again.max_ranks != m->max_ranks || again.kind != m->kind || again.bw != m->bw || again.a2a_bw != m->a2a_bw ||
        again.lat != m->lat)
        abort();
    for (int c = 0; c < AS_NCOLL && (m->kind == AS_COMM_AB || m->kind == AS_COMM_HOSTS); c++)
        if (!(m->alpha_us[c] >= 0 && m->alpha_us[c] <= 1e6 && m->beta_gbs[c] > 0 && m->beta_gbs[c] <= 1e6)) abort();
    /* a shard of every type's bytes on 1, 8 and 9 ranks (nvlink8 holds for 8 at most) */
    as_comm_load l = { .own_in = { 1e9, 2e6, 3e3 }, .own_out = { 5e3, 6e9, 7e2 }, .all_in = { 2e9, 2e6, 9e4 },
                       .all_out = { 1e4, 1e10, 7e2 }, .ar = 4e12, .has = { 1, 1, 1, 1 } };
    static const int64_t ks[] = { 1, 8, 9 };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        err[0] = 0;
        if (as_comm_model_check(m, ks[i], err, sizeof err)) {
            if (!err[0] || !m->ab) abort();
            continue;
        }
        double parts[AS_NSH];
        const double t = as_comm_plan_shard_ms(m, ks[i], &l, parts);
        if (!isfinite(t) || t < 0) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    char err[1024], path[64];
    err[0] = 0;
    if (data[0] & 2) {
        char *s = malloc(size);
        if (!s) return 0;
        memcpy(s, data + 1, size - 1);
        s[size - 1] = 0;
        as_comm_model m;
        if (as_comm_model_parse(s, &m, err, sizeof err)) {
            if (!err[0]) abort();
        } else {
            check_model(&m);
        }
        free(s);
        return 0;
    }
    setenv("AS_MAX_RECORD", "1M", 0);
    int fd = fz_stream_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    as_reader *r = as_reader_open(path);
    if (r) {
        as_record rec;
        while (as_reader_next(r, &rec) == 1) {
            double g = -1;
            as_comm_model m;
            int has = -1;
            err[0] = 0;
            if (as_comm_record_read(&rec.obj, &g, &m, &has, err, sizeof err)) {
                if (!err[0]) abort();
            } else {
                if (!(g == 0 || (g >= AS_COMM_GBPS_MIN && g <= AS_COMM_GBPS_MAX)) || (has != 0 && has != 1)) abort();
                if (has) check_model(&m);
            }
        }
        as_reader_close(r);
    }
    close(fd);
    return 0;
}
