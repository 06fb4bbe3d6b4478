/* synth.c - a MetaSyn-like synthetic pool of embedding tables (see synth.h, docs/SYNTH.md).
 * Dimension letters: B batch, L pooling, E rows (hash size), T tables.
 *
 * Each table t is made in three independent PRNG streams derived from (seed, t):
 *   stream 3t   table parameters: hash size E, mean pooling factor L, head exponent s,
 *               tail exponent s2 and knee K (never dependent on B or T);
 *   stream 3t+1 bag lengths: geometric with mean L (so some bags are empty);
 *   stream 3t+2 indices: a broken power law over ranks 0..E-1 (rank r has weight
 *               (r+1)^-s up to the knee, then falls off as (r+1)^-s2), mapped to rows by a
 *               bijective affine permutation of [0, E).
 * So a smaller batch yields the first bags of the same table. Sampling is O(1) per lookup:
 * ranks are grouped into cells (the first AS_SYN_HOT ranks one cell each, then cells
 * 1/AS_SYN_CELL_DIV of their start rank wide, sampled uniformly inside), and one alias table
 * over the few thousand cells picks a cell. Memory is one table's offsets and indices.
 * The constants below were fitted (docs/SYNTH.md) so that the 856-table pool at batch
 * 65536 reproduces MetaSyn's published hash sizes, pooling factors and reuse histograms.
 */
#include "synth.h"
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- calibration constants (docs/SYNTH.md explains each) ------------------------------ */
#ifndef AS_SYN_PARAM
#define AS_SYN_PARAM static const  /* a calibration harness may #define it away */
#endif
#define AS_SYN_EMAX 12543670.0  /* largest MetaSyn hash size */
#define AS_SYN_HOT 2048         /* ranks sampled individually */
#define AS_SYN_CELL_DIV 32      /* tail cell width = start rank / this */

/* hash size: E = min(EMAX, ceil(EMAX * E_OVER * u^E_POW)), u uniform (0,1]; ~4% of tables
 * sit at the clamp, mean ~4.1M, and small tables (down to 1 row) are rare but present */
AS_SYN_PARAM double syn_e_over = 1.10;
AS_SYN_PARAM double syn_e_pow = 2.42;
/* pooling: empty with probability L_EMPTY, else a Lomax power law
 * L = L_SCALE * (u^(-1/L_ALPHA) - 1) clamped to L_MAX */
AS_SYN_PARAM double syn_l_empty = 0.03;
AS_SYN_PARAM double syn_l_scale = 10.9;
AS_SYN_PARAM double syn_l_alpha = 1.5;
AS_SYN_PARAM double syn_l_max = 193.0;
/* small tables get short bags: L *= min(1, (E / LE_REF)^LE_POW) (E before row_scale) */
AS_SYN_PARAM double syn_le_ref = 1e4;
AS_SYN_PARAM double syn_le_pow = 0.5;
/* head (Zipf) exponent: s = S_LO + (S_HI - S_LO) * u^S_POW */
AS_SYN_PARAM double syn_s_lo = 0.735;
AS_SYN_PARAM double syn_s_hi = 0.886;
AS_SYN_PARAM double syn_s_pow = 1.66;
/* broken power law: rank r (x = r+1) has weight x^-s below the knee K and continues with
 * the steeper exponent s2 = s + S2_LO + (S2_HI - S2_LO) u above it; K is log-uniform in
 * [K_LO, K_HI], times (L / 15)^K_LPOW (L before pool_scale), times row_scale */
AS_SYN_PARAM double syn_s2_lo = 0.99;
AS_SYN_PARAM double syn_s2_hi = 1.12;
AS_SYN_PARAM double syn_k_lo = 13700;
AS_SYN_PARAM double syn_k_hi = 117000;
AS_SYN_PARAM double syn_k_lpow = 1.19;

void as_synth_defaults(as_synth_cfg *c)
{
    c->tables = 856;
    c->batch = 65536;
    c->seed = 0;
    c->row_scale = 1.0;
    c->pool_scale = 1.0;
}

static int cfg_ok(const as_synth_cfg *c)
{
    return c && c->tables > 0 && c->batch > 0 && c->batch <= ((int64_t)1 << 40) &&
           c->row_scale > 0 && isfinite(c->row_scale) && c->row_scale <= 1e3 &&
           c->pool_scale >= 0 && isfinite(c->pool_scale) && c->pool_scale <= 1e3;
}

/* (0, 1] */
static double u01(as_rng *r) { return 1.0 - as_rng_uniform(r); }

int as_synth_table_params(const as_synth_cfg *c, int64_t t, as_synth_params *p)
{
    if (!cfg_ok(c) || !p || t < 0 || t >= c->tables) return -EINVAL;
    as_rng r;
    as_rng_seed(&r, c->seed, 3 * (uint64_t)t);
    /* a fixed number of draws in a fixed order, so each parameter has its own uniform */
    double ue = u01(&r), ul0 = u01(&r), ul = u01(&r), us = u01(&r), uk = u01(&r), us2 = u01(&r);

    double e = ceil(AS_SYN_EMAX * syn_e_over * pow(ue, syn_e_pow));
    if (e > AS_SYN_EMAX) e = AS_SYN_EMAX;
    const double e0 = e;
    e = ceil(e * c->row_scale - 1e-9);
    if (e < 1) e = 1;
    if (e > INT32_MAX) e = INT32_MAX;

    double l = 0;
    if (ul0 >= syn_l_empty) {
        l = syn_l_scale * (pow(ul, -1.0 / syn_l_alpha) - 1.0);
        if (l > syn_l_max) l = syn_l_max;
        if (e0 < syn_le_ref) l *= pow(e0 / syn_le_ref, syn_le_pow);
    }
    double k = syn_k_lo * pow(syn_k_hi / syn_k_lo, uk);
    if (l > 0) k *= pow(l / 15.0, syn_k_lpow);
    k *= c->row_scale;

    p->hash = (int64_t)e;
    p->pooling = l * c->pool_scale;
    p->zipf = syn_s_lo + (syn_s_hi - syn_s_lo) * pow(us, syn_s_pow);
    p->zipf2 = p->zipf + syn_s2_lo + (syn_s2_hi - syn_s2_lo) * us2;
    p->knee = k < 1 ? 1 : k;
    return 0;
}

/* ---- rank cells and the alias table ---------------------------------------------------- */

typedef struct {
    uint32_t row0;    /* the row of the cell's first rank (perm(lo); lo before that) */
    uint32_t width;   /* ranks in the cell */
    uint32_t alias;   /* cell taken when the coin fails */
    uint32_t thresh;  /* keep this cell when the low 32 random bits are below it; cells that
                       * always keep have alias = self, so UINT32_MAX works for them */
} syn_cell;

/* integral of x^-s over [a, b] */
static double pow_int(double a, double b, double s)
{
    if (b <= a) return 0;
    if (fabs(s - 1) < 1e-9) return log(b / a);
    return (pow(b, 1 - s) - pow(a, 1 - s)) / (1 - s);
}

/* weight of rank r is f(r+1): f(x) = x^-s for x <= k, k^(s2-s) x^-s2 above */
static double rank_weight(double x, const as_synth_params *p)
{
    return x <= p->knee ? pow(x, -p->zipf) : pow(p->knee, p->zipf2 - p->zipf) * pow(x, -p->zipf2);
}

/* sum of the weights of ranks [lo, hi); midpoint-integral approximation for wide cells */
static double cell_weight(double lo, double hi, const as_synth_params *p)
{
    if (hi - lo == 1) return rank_weight(lo + 1, p);
    double a = lo + 0.5, b = hi + 0.5, k = p->knee, w = 0;
    if (a < k) w += pow_int(a, b < k ? b : k, p->zipf);
    if (b > k) w += pow(k, p->zipf2 - p->zipf) * pow_int(a > k ? a : k, b, p->zipf2);
    return w;
}

/* cells covering ranks [0, e); returns the count, fills lo/width/weight when non-NULL */
static int64_t make_cells(int64_t e, const as_synth_params *p, syn_cell *cells, double *w)
{
    int64_t n = 0, lo = 0;
    while (lo < e) {
        int64_t width = lo < AS_SYN_HOT ? 1 : lo / AS_SYN_CELL_DIV;
        if (width > e - lo) width = e - lo;
        if (cells) {
            cells[n].row0 = (uint32_t)lo;
            cells[n].width = (uint32_t)width;
            w[n] = cell_weight((double)lo, (double)(lo + width), p);
        }
        n++;
        lo += width;
    }
    return n;
}

/* Vose's alias method over n cells with weights w (clobbered) */
static int build_alias(syn_cell *cells, double *w, int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += w[i];
    int64_t *small = malloc((size_t)n * sizeof *small), *large = malloc((size_t)n * sizeof *large);
    if (!small || !large) { free(small); free(large); return -ENOMEM; }
    int64_t ns = 0, nl = 0;
    for (int64_t i = 0; i < n; i++) {
        w[i] = w[i] * (double)n / sum;
        if (w[i] < 1.0) small[ns++] = i; else large[nl++] = i;
    }
    while (ns && nl) {
        int64_t a = small[--ns], g = large[nl - 1];
        cells[a].alias = (uint32_t)g;
        cells[a].thresh = (uint32_t)(w[a] * 4294967296.0 >= 4294967295.0 ? 4294967295u : w[a] * 4294967296.0);
        w[g] -= 1.0 - w[a];
        if (w[g] < 1.0) { nl--; small[ns++] = g; }
    }
    while (nl) { int64_t g = large[--nl]; cells[g].alias = (uint32_t)g; cells[g].thresh = UINT32_MAX; }
    while (ns) { int64_t a = small[--ns]; cells[a].alias = (uint32_t)a; cells[a].thresh = UINT32_MAX; }
    free(small);
    free(large);
    return 0;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

/* ---- one table ---------------------------------------------------------------------- */

int as_synth_table_gen(const as_synth_cfg *c, int64_t t, as_synth_table *out)
{
    if (!out) return -EINVAL;
    memset(out, 0, sizeof *out);
    as_synth_params p;
    int rc = as_synth_table_params(c, t, &p);
    if (rc) return rc;
    rc = as_synth_gen(&p, c->batch, c->seed, 3 * (uint64_t)t, 0, out);
    out->id = t;
    return rc;
}

/* bag lengths into out->offsets (B+1): geometric on {0,1,...} with mean L, or L each
 * (fixed), drawn from stream + 1 of seed; returns the lookups in all */
static int64_t bag_lengths(as_synth_table *out, const as_synth_params *pp, int64_t B, uint64_t seed, uint64_t stream,
                           int fixed)
{
    const as_synth_params p = *pp;
    as_rng r;
    as_rng_seed(&r, seed, stream + 1);
    int64_t n = 0;
    out->offsets[0] = 0;
    if (fixed) {
        for (int64_t b = 0; b < B; b++) {
            n += (int64_t)p.pooling;
            out->offsets[b + 1] = n;
        }
    } else if (p.pooling > 0) {
        double lq = log(p.pooling / (1.0 + p.pooling)); /* log(1 - success probability) */
        double cap = 64.0 * p.pooling + 64.0;
        for (int64_t b = 0; b < B; b++) {
            double len = floor(log(u01(&r)) / lq);
            if (!(len <= cap)) len = cap;
            n += (int64_t)len;
            out->offsets[b + 1] = n;
        }
    } else {
        for (int64_t b = 0; b < B; b++) out->offsets[b + 1] = 0;
    }
    return n;
}

/* the E rows' cells with their alias table (*cells, *nc), their first rows permuted: rank ->
 * row = (a * rank + E - 1) mod E with gcd(a, E) = 1 (*a drawn from r), so the hottest rank
 * lands on row E-1 and the measured rows is E in practice. 0 or a negative errno */
static int row_cells(const as_synth_params *p, int64_t E, as_rng *r, uint64_t *a, syn_cell **cells, int64_t *nc)
{
    uint64_t ue = (uint64_t)E;
    *a = 1;
    if (E > 2) {
        do *a = ue / 4 + as_rng_below(r, ue / 2 + 1); while (gcd_u64(*a, ue) != 1);
    }
    *nc = make_cells(E, p, NULL, NULL);
    syn_cell *c = malloc((size_t)*nc * sizeof *c);
    double *w = malloc((size_t)*nc * sizeof *w);
    if (!c || !w) { free(c); free(w); return -ENOMEM; }
    make_cells(E, p, c, w);
    int rc = build_alias(c, w, *nc);
    free(w);
    if (rc) { free(c); return rc; }
    for (int64_t i = 0; i < *nc; i++)
        c[i].row0 = (uint32_t)(((unsigned __int128)*a * c[i].row0 + ue - 1) % ue);
    *cells = c;
    return 0;
}

/* the n lookups into out->indices, drawn from r through the nc cells (rows permuted by a,
 * E rows); out->rows: the largest row + 1 */
static void draw_lookups(as_synth_table *out, const syn_cell *cells, int64_t nc, uint64_t a, int64_t E, as_rng *r, int64_t n)
{
    const double inv_e = 1.0 / (double)E;
    const uint64_t unc = (uint64_t)nc;
    int32_t *idx = out->indices;
    int32_t maxrow = 0;
    /* one 64-bit draw per lookup: the high half times the cell count gives the cell (integer
     * part) and the alias coin (fraction, resolution cells/2^32); the low half gives the
     * offset inside the cell (0 for a single rank). Branch-free: mod E via a double
     * reciprocal whose quotient is off by at most one, fixed by two conditional moves. */
    const int64_t se = E;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = as_rng_next(r);
        uint64_t prod = (x >> 32) * unc;
        uint64_t ci = prod >> 32;
        uint32_t pick = (uint32_t)prod < cells[ci].thresh ? (uint32_t)ci : cells[ci].alias;
        const syn_cell *cl = &cells[pick];
        uint64_t off = ((x & 0xffffffffu) * cl->width) >> 32;
        uint64_t v = cl->row0 + off * a;
        int64_t rr = (int64_t)v - (int64_t)((double)(int64_t)v * inv_e) * se;
        rr += rr < 0 ? se : 0;
        rr -= rr >= se ? se : 0;
        idx[i] = (int32_t)rr;
        maxrow = (int32_t)rr > maxrow ? (int32_t)rr : maxrow;
    }
    out->rows = (int64_t)maxrow + 1;
}

int as_synth_gen(const as_synth_params *pp, int64_t B, uint64_t seed, uint64_t stream, int fixed, as_synth_table *out)
{
    if (!out) return -EINVAL;
    memset(out, 0, sizeof *out);
    if (!pp || B <= 0 || B > ((int64_t)1 << 40) || pp->hash < 1 || pp->hash > INT32_MAX || !(pp->pooling >= 0) ||
        !isfinite(pp->pooling) || !(pp->zipf >= 0) || !(pp->zipf2 >= pp->zipf) || !(pp->knee >= 1) ||
        (fixed && pp->pooling != floor(pp->pooling)))
        return -EINVAL;
    const as_synth_params p = *pp;
    const int64_t E = p.hash;

    out->batch = B;
    out->offsets = as_huge_alloc((size_t)(B + 1) * sizeof *out->offsets);
    if (!out->offsets) return -ENOMEM;
    int64_t n = bag_lengths(out, &p, B, seed, stream, fixed);
    out->lookups = n;
    out->indices = as_huge_alloc((size_t)n * sizeof *out->indices);
    if (!out->indices) { as_synth_free(out); return -ENOMEM; }
    if (n == 0) { out->rows = 1; return 0; } /* nothing measured: one row */

    as_rng r;
    as_rng_seed(&r, seed, stream + 2);
    uint64_t a;
    syn_cell *cells;
    int64_t nc;
    int rc = row_cells(&p, E, &r, &a, &cells, &nc);
    if (rc) { as_synth_free(out); return rc; }
    draw_lookups(out, cells, nc, a, E, &r, n);
    free(cells);
    return 0;
}

void as_synth_free(as_synth_table *tb)
{
    if (!tb) return;
    free(tb->offsets);
    free(tb->indices);
    tb->offsets = NULL;
    tb->indices = NULL;
}
