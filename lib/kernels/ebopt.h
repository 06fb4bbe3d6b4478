/* ebopt.h - the fused embedding-bag op (embbag.h) with the weight type of each table (fp32,
 * fp16, bf16) and the shard's optimizer (exact SGD, exact row-wise Adagrad, Adam): the CPU
 * reference, written from the math, that the fast CPU path and the CUDA kernels are to
 * match bit for bit (issue 40; as-bench does not time these yet). Dimension letters: B
 * batch, D dim, E rows, T tables.
 *
 * Layout: the shard is embbag.h's as_eb_shard, with w_off counted in 2-byte units of W: a
 * fp16 or bf16 table takes E_t * D_t units, a fp32 table 2 * E_t * D_t units starting at an
 * even unit (4-byte aligned), its elements the native-endian fp32 words there. The same
 * rule as embbag.h otherwise: regions inside [0, w_off[T]), no overlap, padding allowed and
 * never touched. dtype [T] (NULL: every table fp16, embbag.h's op exactly).
 *
 * Optimizer state: fp32, st_off [T+1] floats into one state buffer S, table t's at
 * S + st_off[t]: SGD none (st_off may be NULL); row-wise Adagrad one per row (E_t);
 * Adam two per element, first moments then second (2 * E_t * D_t). as_eb_opt_state gives
 * the count, as_eb_validate_typed checks the offsets (inside, no overlap).
 *
 * forward:  as embbag.h, each weight converted to fp32 from its table's type.
 * backward: G, the row's summed gradient, is embbag.h's canonical sum (lookups ascending,
 *           chunks of AS_EB_CHUNK summed from 0.0f, the chunk sums added left to right).
 *           Every operation below is one fp32 operation rounded to nearest even (no fused
 *           multiply-add), the new weight rounded once to its table's type (fp32: not at
 *           all; fp16 / bf16: round to nearest even). For every row r touched in the batch:
 *   exact SGD              w_j = R(w_j - (lr * G_j))
 *   exact row-wise Adagrad (FBGEMM's exact_rowwise_adagrad) q = the sum of G_j * G_j over
 *                          the row in the order a warp of 32 lanes sums it (as_eb_row_sumsq):
 *                          lane l's partial, from 0.0f, over j = l, l + 32, l + 64, ...
 *                          ascending; then five butterfly steps, for o = 16, 8, 4, 2, 1 every
 *                          lane's p_l = p_l + p_(l xor o) at once; q = p_0 (every lane holds
 *                          it: fp addition commutes). s_r = s_r + q / D;
 *                          m = lr / (sqrtf(s_r) + eps); w_j = R(w_j - (m * G_j))
 *   Adam                   (weight decay 0) m_j = b1 * m_j + (1 - b1) * G_j;
 *                          v_j = b2 * v_j + (1 - b2) * (G_j * G_j);
 *                          w_j = R(w_j - lr * ((m_j / c1) / (sqrtf(v_j / c2) + eps)))
 *                          evaluated as written, c1 = 1 - b1^t and c2 = 1 - b2^t computed
 *                          in double and rounded to fp32 once (as_eb_opt_prepare), t the
 *                          step (>= 1); (1 - b1), (1 - b2) are fp32 subtractions.
 * Rows not touched keep their weights and state (FBGEMM's exact optimizers update only the
 * rows a batch looks up).
 */
#ifndef AS_EBOPT_H
#define AS_EBOPT_H

#include <stddef.h>
#include <stdint.h>

#include "ebshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* as_eb_dtype, as_eb_optim, as_eb_opt and their names, units, state sizes and Adam's
 * constants (as_eb_opt_prepare): ebshard.h */

/* as_eb_validate (embbag.h) with the types and state above: w_off in units (a fp32 table's
 * region twice as long and at an even unit), st_off [T+1] non-decreasing with table t's
 * region of as_eb_opt_state floats (may be NULL for SGD). 0, or -1 with err */
int as_eb_validate_typed(const as_eb_shard *s, const uint8_t *dtype, as_eb_optim o, const int64_t *st_off, char *err,
                         size_t errlen);

/* weight e of table t (its type's element e, converted), and the store of a fp32 value
 * rounded to that type: what the references read and write */
float as_eb_weight_get(const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int32_t t, int64_t e);
void as_eb_weight_set(uint16_t *W, const as_eb_shard *s, const uint8_t *dtype, int32_t t, int64_t e, float v);

/* the row-wise Adagrad's sum of squares in the warp's order (above): as_eb_row_sumsq,
 * embbag.h, which the reference and the fast path share */

/* the naive single-threaded references (above); the shard validated first by the caller */
void as_eb_forward_typed_ref(float *out, const uint16_t *W, const as_eb_shard *s, const uint8_t *dtype);
void as_eb_backward_typed_ref(uint16_t *W, float *S, const float *grad, const as_eb_shard *s, const uint8_t *dtype,
                              const int64_t *st_off, const as_eb_opt *o);

#ifdef __cplusplus
}
#endif

#endif
