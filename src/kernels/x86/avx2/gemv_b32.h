/* The 32-block GEMV rows of the x86 families that read q4_0 / q5_0 / q8_0
 * in plain C's order (gemv_avx2.c; the AVX-512 family's file-row kernels,
 * x86/avx512/gemv_avx512_b32.c): 4 rows' exact int32 totals per block,
 * then plain C's float step for the 4 rows in the lanes. Included by each
 * family's file, compiled for its ISA; a file may define B32_PAIR(T, nr,
 * x, b, yb) before including this, the totals of blocks b and b + 1 of the
 * nr rows ([b: rows 0-3 | b + 1: rows 0-3], no offsets taken off yet), to
 * take them its own way; by default the AVX2 hadd tree's. Needs INLINE,
 * PF_HINT. */
#ifndef NPL_GEMV_B32_H
#define NPL_GEMV_B32_H
#include <immintrin.h>
#include <string.h>

#include "kernels/gemv.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

/* ---- 32-element blocks: one block of nr rows ---- */

enum { T_Q4_0, T_Q5_0, T_Q8_0 };

INLINE size_t bsize(const int T) {
    return T == T_Q8_0 ? sizeof(block_q8_0) : T == T_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q5_0);
}

/* 16 bytes of nibbles -> 32 bytes, low nibbles then high: one broadcast
 * load and a per-half shift (two vector operations, avx2_nibbles32 three) */
INLINE __m256i nibbles32(const uint8_t *p) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

/* Weight block b of row x against activation quants yv: q8_0 its int32
 * lanes (4-element sums); q4_0 / q5_0 the int16 pair sums of u = w + offset
 * (the offset's part comes off the totals) */
INLINE __m256i lanes(const int T, const void *x, int64_t b, __m256i yv) {
    if (T == T_Q8_0) {
        const __m256i w = _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)x)[b].qs);
        return avx2_dot_u8i8_i32(_mm256_sign_epi8(w, w), _mm256_sign_epi8(yv, w));
    }
    __m256i u;
    if (T == T_Q4_0) u = nibbles32(((const block_q4_0 *)x)[b].qs);
    else {
        const block_q5_0 *q = (const block_q5_0 *)x + b;
        u = _mm256_or_si256(nibbles32(q->qs), _mm256_and_si256(avx2_bits32(q->qh), _mm256_set1_epi8(16)));
    }
    return _mm256_maddubs_epi16(u, yv);
}

/* The nr rows' block scales dw as f32: lane j row j at block b, lane 4 + j
 * at block b + 1 (one conversion; the scale leads every block type here) */
INLINE __m256 scales2(const int T, const int nr, const uint8_t *const *x, int64_t b) {
    const size_t o = (size_t)b * bsize(T), o1 = o + bsize(T);
    __m128i h = _mm_setzero_si128(); /* lane indices must be constants (clang): one line per row */
    h = _mm_insert_epi16(_mm_insert_epi16(h, *(const uint16_t *)(x[0] + o), 0), *(const uint16_t *)(x[0] + o1), 4);
    if (nr > 1) h = _mm_insert_epi16(_mm_insert_epi16(h, *(const uint16_t *)(x[1] + o), 1), *(const uint16_t *)(x[1] + o1), 5);
    if (nr > 2) h = _mm_insert_epi16(_mm_insert_epi16(h, *(const uint16_t *)(x[2] + o), 2), *(const uint16_t *)(x[2] + o1), 6);
    if (nr > 3) h = _mm_insert_epi16(_mm_insert_epi16(h, *(const uint16_t *)(x[3] + o), 3), *(const uint16_t *)(x[3] + o1), 7);
    return _mm256_cvtph_ps(h);
}

/* Block b of the nr rows: lane j of the low half holds the sum of row j's
 * elements 0-15, of the high half of 16-31 (rows past nr are zero). An
 * hadd tree; q4_0 / q5_0 take it in int16 up to 8-element sums (u <= 31,
 * |y| <= 127: at most 31496), then one madd. */
INLINE __m256i block_halves(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb) {
    const __m256i yv = _mm256_loadu_si256((const __m256i *)yb[b].qs), z = _mm256_setzero_si256();
    const __m256i l0 = lanes(T, x[0], b, yv), l1 = nr > 1 ? lanes(T, x[1], b, yv) : z;
    const __m256i l2 = nr > 2 ? lanes(T, x[2], b, yv) : z, l3 = nr > 3 ? lanes(T, x[3], b, yv) : z;
    if (T == T_Q8_0) return _mm256_hadd_epi32(_mm256_hadd_epi32(l0, l1), _mm256_hadd_epi32(l2, l3));
    return _mm256_madd_epi16(_mm256_hadd_epi16(_mm256_hadd_epi16(l0, l1), _mm256_hadd_epi16(l2, l3)), _mm256_set1_epi16(1));
}

/* blocks b and b + 1 of the nr rows: the AVX2 hadd tree's totals */
INLINE __m256i pair_halves(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb) {
    const __m256i h0 = block_halves(T, nr, x, b, yb), h1 = block_halves(T, nr, x, b + 1, yb);
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}
#ifndef B32_PAIR
#define B32_PAIR pair_halves
#endif

/* Per block the 4 rows' exact int32 totals (two blocks in one vector), then
 * plain C's float step, acc + (float)total * dw * dx, blocks in order */
INLINE void rows32(const int T, const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    const block_q8_0 *yb = (const block_q8_0 *)g->qs;
    const float *yd4 = g->d;
    const int32_t *cz = g->cz;
    const int64_t nb = g->k / QK8_0;
    const size_t bs = bsize(T);
    __m128 acc = _mm_setzero_ps();
    int64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        if (pf)
            for (int j = 0; j < nr; j++) {
                _mm_prefetch((const char *)x[j] + pf + b * bs, PF_HINT);
                if (2 * bs > 64) _mm_prefetch((const char *)x[j] + pf + b * bs + 64, PF_HINT);
            }
        __m256i tot = B32_PAIR(T, nr, x, b, yb);
        if (T != T_Q8_0) tot = _mm256_sub_epi32(tot, _mm256_load_si256((const __m256i *)(cz + 4 * b)));
        const __m256 f = avx2_opaque_ps(
            _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(tot), scales2(T, nr, x, b)), _mm256_load_ps(yd4 + 4 * b)));
        acc = _mm_add_ps(acc, _mm256_castps256_ps128(f));
        acc = _mm_add_ps(acc, _mm256_extractf128_ps(f, 1));
    }
    if (b < nb) {
        const __m256i h0 = block_halves(T, nr, x, b, yb);
        __m128i tot = _mm_add_epi32(_mm256_castsi256_si128(h0), _mm256_extracti128_si256(h0, 1));
        if (T != T_Q8_0) tot = _mm_sub_epi32(tot, _mm_load_si128((const __m128i *)(cz + 4 * b)));
        _Alignas(16) float d4[4] = {0};
        for (int j = 0; j < nr; j++) {
            uint16_t h;
            memcpy(&h, x[j] + (size_t)b * bs, sizeof h);
            d4[j] = h2f(h);
        }
        const __m128 f = avx2_opaque_ps128(_mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(tot), _mm_load_ps(d4)), _mm_load_ps(yd4 + 4 * b)));
        acc = _mm_add_ps(acc, f);
    }
    _mm_storeu_ps(out, acc);
}

#endif
