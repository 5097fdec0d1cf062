/* Register-tiled GEMM for prefill (many activation rows at once).
 *
 * Activations are quantized by the same quantize_row as the vec_dot path
 * (Q8_0 or Q8_K), then packed once per matmul into the layout below; weights
 * are decoded on the fly, a few rows at a time, into the same layout as
 * unsigned bytes u with w = d_g * (u - o) or d_g * u - m_g per group g of 16
 * elements. A tile of weight rows x activation rows then costs one dpbusd,
 * one conversion and two float ops per pair and 64 elements, with no
 * per-pair sign or offset work: the offsets and mins are one float dot per
 * pair over the groups (w_m . x_sum) at the end.
 *
 * Layout of one 64-element step: the four groups of 16 are interleaved by
 * 4-byte lanes (lane 4q + g holds elements 4q..4q+3 of group g), so the
 * per-lane scales are one broadcast 128-bit vector [d_0 d_1 d_2 d_3]. */
#ifndef NPL_GEMM_H
#define NPL_GEMM_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/vec_dot.h"

enum {
    NPL_GEMM_MAX_K = 8192,  /* longer rows take the vec_dot path (decoded rows live on the stack) */
};

/* Packed activations: m rows of k (padded to kp, a multiple of 64). */
typedef struct {
    int64_t m, k, kp, ng; /* ng: groups of 16 per row, padded to a multiple of 16 */
    int8_t *qs;           /* [m][kp] quants, interleaved per step (AVX-512) or plain (AMX) */
    float *d;             /* [m][kp / 16] scale per group */
    float *sum;           /* [m][ng] d * sum of the group's quants (zero past kp / 16) */
} npl_gemm_x;

static inline int64_t npl_gemm_kp(int64_t k) { return (k + 63) & ~(int64_t)63; }
static inline int64_t npl_gemm_ng(int64_t k) { return ((npl_gemm_kp(k) / 16) + 15) & ~(int64_t)15; }

/* Bytes for npl_gemm_x_init, including 64 for alignment; rows are counted
 * up to a multiple of 16 (AMX tiles read, and ignore, up to 15 more). */
static inline size_t npl_gemm_x_size(int64_t m, int64_t k) {
    const int64_t kp = npl_gemm_kp(k), m16 = (m + 15) & ~(int64_t)15;
    return (size_t)(m16 * (kp + kp / 16 * 4 + npl_gemm_ng(k) * 4) + 3 * 64);
}

static inline void npl_gemm_x_init(npl_gemm_x *xp, void *mem, int64_t m, int64_t k) {
    uintptr_t p = ((uintptr_t)mem + 63) & ~(uintptr_t)63;
    xp->m = m;
    xp->k = k;
    xp->kp = npl_gemm_kp(k);
    xp->ng = npl_gemm_ng(k);
    xp->qs = (int8_t *)p;
    const int64_t m16 = (m + 15) & ~(int64_t)15;
    p = (p + (uintptr_t)(m16 * xp->kp) + 63) & ~(uintptr_t)63;
    xp->d = (float *)p;
    p = (p + (uintptr_t)(m16 * xp->kp / 16 * 4) + 63) & ~(uintptr_t)63;
    xp->sum = (float *)p;
}

/* Packs activation row r from one row of the weight type's vec_dot_type. */
typedef void (*npl_gemm_pack_fn)(const npl_gemm_x *xp, int64_t r, const void *xq_row);
/* y[c * ldy + r] = dot(weight row r, activation row c) for r in [r0, r1) and
 * every packed row c; w_row is the byte size of a weight row. */
typedef void (*npl_gemm_rows_fn)(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,
                                 float *y, int64_t ldy);

typedef struct {
    npl_gemm_pack_fn pack;
    npl_gemm_rows_fn rows;
} npl_gemm_kernels;

/* The GEMM for weights of type t at an ISA no higher than `want` and what
 * this CPU has, or NULL (then use vec_dot). */
const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t);
/* Internal: the AMX kernels (x86/amx), or NULL. */
const npl_gemm_kernels *npl_gemm_get_amx(npl_type t);
/* Internal: the AVX2 kernels (x86/avx2/gemm_avx2.c: the AVX2 vec_dot
 * kernels' arithmetic, bit for bit), or NULL. */
const npl_gemm_kernels *npl_gemm_get_avx2(npl_type t);
/* The AVX-512 family without AMX reads these types in AVX2's order: its
 * vec_dot, GEMV and packed weights are AVX2's or keep AVX2's bits, so a row
 * keeps one order (for the 32-element blocks, plain C's). Its AVX-512 VNNI
 * GEMMs in that order (x86/avx512/gemm_avx512_q5_0.c: q5_0, q4_0 and q8_0,
 * 16 rows as dpbusd lanes; gemm_avx512_k.c: q4_K, q6_K) ran 327 / 200+
 * GMAC/s a core against the AVX-512 tile's 118-140 on an AMD EPYC Zen 5,
 * q8_0 134 against 49-60 on a Zen 4 (bench/gemm_bench.c); that tile, which
 * had an order of its own, is gone. */
static inline int npl_avx512_takes_avx2(npl_type t) {
    return t == NPL_TYPE_Q4_0 || t == NPL_TYPE_Q5_0 || t == NPL_TYPE_Q8_0 || t == NPL_TYPE_Q4_K || t == NPL_TYPE_Q6_K;
}
/* Internal: the AVX-512 VNNI q4_K / q6_K GEMM in AVX2's order, over the
 * file's rows or (packed) wpack.h's copy, or NULL. */
const npl_gemm_kernels *npl_gemm_get_avx512_k(npl_type t, int packed);
/* Internal: the AVX-512 VNNI q5_0 / q4_0 / q4_1 GEMM in AVX2's order
 * (plain C's bits) over the file's rows (x86/avx512/gemm_avx512_q5_0.c),
 * or NULL. */
const npl_gemm_kernels *npl_gemm_get_avx512_b32(npl_type t);
/* Internal: its q4_1 kernels (x86/avx2/gemm_avx2_q4_1.c). */
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1(void);
/* Internal: aarch64's i8mm kernels (arm/i8mm/gemm_i8mm.c: the dotprod
 * vec_dot kernels' arithmetic, bit for bit), or NULL. */
const npl_gemm_kernels *npl_gemm_get_i8mm(npl_type t);

#endif
