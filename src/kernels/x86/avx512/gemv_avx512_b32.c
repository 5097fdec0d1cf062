/* AVX-512 GEMV for q4_0 / q5_0 over the file's rows (decode; packed
 * matrices take gemv_avx512_packed.c), in the AVX2 family's order (gemm.h):
 * plain C's bits.
 *
 * The AVX2 kernel's rows and float steps (x86/avx2/gemv_b32.h: 4 rows
 * against one activation row, two blocks per step, plain C's step per block
 * on its exact int32 total) with the integer side done wider: a row's two
 * blocks are one zmm of u = w + offset (the 5th bit of q5_0 one masked add
 * from its qh, where AVX2 spreads the bits with a shuffle, an or and a
 * compare), one dpbusd against the two activation blocks, and the 4 rows'
 * lanes reduce to the 8 totals in three unpack-and-add steps where AVX2
 * takes two maddubs, hadds and a madd per block. Integer sums are exact, so
 * the totals, and hence the bits, are AVX2's. */
#include "kernels/gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/avx512_util.h"
#include "kernels/x86/avx512/gemv_hint.h"

#define INLINE static inline __attribute__((always_inline))

#ifndef PF_ROWS
#define PF_ROWS 8
#endif
#define PF_HINT NPL_GEMV_WEIGHT_HINT
enum { NR = 4 }; /* weight rows (streams) at once */

/* the nr rows' totals of u . x for blocks b and b + 1 (below) */
INLINE __m256i pair512(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb);
#define B32_PAIR pair512
#include "kernels/x86/avx2/gemv_b32.h"

/* blocks b and b + 1 of a q4_0 / q5_0 row as 64 bytes of u, each block's
 * elements in order (low nibbles, then high) */
INLINE __m512i u64_of(const int Q5, const uint8_t *row, int64_t b) {
    const size_t bs = Q5 ? sizeof(block_q5_0) : sizeof(block_q4_0), qo = Q5 ? 6 : 2;
    const uint8_t *a = row + (size_t)b * bs, *c = a + bs;
    const __m128i qa = _mm_loadu_si128((const __m128i *)(a + qo)), qc = _mm_loadu_si128((const __m128i *)(c + qo));
    __m512i v = _mm512_castsi128_si512(qa);
    v = _mm512_inserti32x4(v, qa, 1);
    v = _mm512_inserti32x4(v, qc, 2);
    v = _mm512_inserti32x4(v, qc, 3);
    v = _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
    if (!Q5) return v;
    uint32_t ha, hc; /* bit e: the 5th bit of element e */
    memcpy(&ha, a + 2, sizeof ha);
    memcpy(&hc, c + 2, sizeof hc);
    return _mm512_mask_add_epi8(v, (__mmask64)ha | (__mmask64)hc << 32, v, _mm512_set1_epi8(16));
}

/* the nr rows' totals of u . x for blocks b and b + 1: [b: rows 0-3 | b + 1: rows 0-3] */
INLINE __m256i pair512(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb) {
    const __m512i X = load2x256(yb[b].qs, yb[b + 1].qs), z = _mm512_setzero_si512();
    __m512i D[NR];
    for (int j = 0; j < NR; j++) D[j] = j < nr ? _mm512_dpbusd_epi32(z, u64_of(T == T_Q5_0, x[j], b), X) : z;
    /* per 128-bit lane (16 elements of one block): the 4 rows' sums of its 4 lanes */
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(D[0], D[1]), _mm512_unpackhi_epi32(D[0], D[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(D[2], D[3]), _mm512_unpackhi_epi32(D[2], D[3]));
    const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    /* lanes 0 + 1: block b, 2 + 3: block b + 1 */
    const __m512i h = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si256(_mm512_shuffle_i32x4(h, h, _MM_SHUFFLE(0, 0, 2, 0)));
}

INLINE void rows_nr(const int K, const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    rows32(K, nr, x, g, out, pf);
}
#include "kernels/x86/avx2/gemv_rows.h"

static void rows_q4_0(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                      int64_t ldy) {
    rows_with(T_Q4_0, w, w_row, r0, r1, gx, m, y, ldy);
}
static void rows_q5_0(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                      int64_t ldy) {
    rows_with(T_Q5_0, w, w_row, r0, r1, gx, m, y, ldy);
}

/* the AVX2 kernels' activation rows (d and offsets four times over) */
static void prep_q4_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q4_0)->prep(gx, mem, xq, k); }
static void prep_q5_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q5_0)->prep(gx, mem, xq, k); }

static const npl_gemv_kernels k_q4_0 = {prep_q4_0, rows_q4_0}, k_q5_0 = {prep_q5_0, rows_q5_0};

const npl_gemv_kernels *npl_gemv_get_avx512_b32(npl_type t) {
    return t == NPL_TYPE_Q4_0 ? &k_q4_0 : t == NPL_TYPE_Q5_0 ? &k_q5_0 : NULL;
}

#else
const npl_gemv_kernels *npl_gemv_get_avx512_b32(npl_type t) {
    (void)t;
    return NULL;
}
#endif
