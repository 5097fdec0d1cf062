/* Matmul with one activation row (decode) or a few: 16 weight rows side by
 * side as the 16 lanes of a vector.
 *
 * Per 64 elements, each of the 16 rows costs one dpbusd of its unsigned
 * quants against the activation quants; a transposing add tree then turns
 * the 16 products into one exact int32 sum per row and block, and a block
 * costs one scale product and one fma for all 16 rows. The float steps are
 * those of the AMX GEMM (x86/amx/gemm_amx.c), in the same order: per block
 * acc = fma(dx * dw, (float)isum, acc) over the blocks of the row, then
 * q4_K's mins as acc = fma(x_sum_g, m_g, acc) over groups of 16. So a row
 * decoded alone gives bit for bit what it gives inside a prefill batch, and
 * chunked prefill equals unchunked with the AMX kernels. (Without AMX,
 * the AVX-512 family reads each type in AVX2's order: gemm.h
 * npl_avx512_takes_avx2.)
 *
 * Unsigned quants u stand for w = u - offset (q8_0: 128, q5_0: 16, q4_0: 8,
 * q6_K: 32, q4_K: 0); the offset times the block's activation quant sum is
 * folded into the dpbusd accumulator's first lane of the block. */
#ifndef NPL_GEMV_H
#define NPL_GEMV_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/vec_dot.h"

/* The activation row, prepared once per matmul from its vec_dot_type row. */
typedef struct {
    int64_t k, kp;     /* elements; padded to a multiple of 64 */
    const int8_t *qs;  /* [kp] quants in element order, zero past k */
    const int32_t *cz; /* [kp / 64][16] -offset * quant sum of each block, in its first lane */
    const float *d;    /* [kp / 16] scale per group of 16 */
    const float *xs;   /* [kp / 16] d * quant sum per group of 16 */
} npl_gemv_x;

/* Bytes for prep's memory (64-byte alignment included). */
static inline size_t npl_gemv_x_size(int64_t k) {
    const int64_t kp = (k + 63) & ~(int64_t)63;
    return (size_t)(kp + kp + kp / 16 * 4 * 2 + 4 * 64);
}

/* Prepares the activation row xq (one row of the weight type's
 * vec_dot_type) in mem for this weight type. */
typedef void (*npl_gemv_prep_fn)(npl_gemv_x *gx, void *mem, const void *xq, int64_t k);
/* y[c * ldy + r] = dot(weight row r, activation row c) for r in [r0, r1)
 * and c in [0, m), gx[c] prepared; w_row is the byte size of a weight row.
 * Rows are taken 16 at a time from r0; each group stays in cache while the
 * m activation rows pass over it, so a small batch reads the weights once
 * and every row gets exactly its one-row result. */
typedef void (*npl_gemv_rows_fn)(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                                 float *y, int64_t ldy);

typedef struct {
    npl_gemv_prep_fn prep;
    npl_gemv_rows_fn rows;
} npl_gemv_kernels;

/* The one-row kernels for weights of type t at an ISA no higher than `want`
 * and what this CPU has, or NULL (then use vec_dot). gfni 1: the kernels
 * that unpack nibbles with GFNI where this CPU has it (a CPU backend's
 * default, npl_cpu_ctx.no_gfni); 0: the others (tested and benchmarked too). */
const npl_gemv_kernels *npl_gemv_get(npl_isa want, npl_type t, int gfni);
/* Internal: the AVX2 kernels (x86/avx2/gemv_avx2.c: the AVX2 vec_dot
 * kernels' arithmetic, bit for bit, with a prepared row of their own), or
 * NULL. */
const npl_gemv_kernels *npl_gemv_get_avx2(npl_type t);
/* Internal: its q4_1 kernels (x86/avx2/gemv_avx2_q4_1.c). */
const npl_gemv_kernels *npl_gemv_get_avx2_q4_1(void);
/* Internal: the AVX-512 q4_K / q6_K kernels in AVX2's order
 * (x86/avx512/gemv_avx512_k.c: the AVX2 GEMV's arithmetic, two rows per
 * zmm), or NULL. */
const npl_gemv_kernels *npl_gemv_get_avx512_k(npl_type t);
/* Internal: the AVX-512 q4_0 / q5_0 GEMV over the file's rows in AVX2's order
 * (x86/avx512/gemv_avx512_b32.c), or NULL. */
const npl_gemv_kernels *npl_gemv_get_avx512_b32(npl_type t);

#endif
