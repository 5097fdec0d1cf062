/* AVX-512 GEMV for q4_0 / q5_0 / q8_0 / q4_1 over the file's rows (decode; packed
 * matrices take gemv_avx512_packed.c), in the AVX2 family's order (gemm.h;
 * q4_1 in every x86 family, AMX's too): plain C's bits.
 *
 * The AVX2 kernel's rows and float steps (x86/avx2/gemv_b32.h: 4 rows
 * against one activation row, two blocks per step, plain C's step per block
 * on its exact int32 total) with the integer side done wider: a row's two
 * blocks are one zmm of u = w + offset (the 5th bit of q5_0 one masked add
 * from its qh, where AVX2 spreads the bits with a shuffle, an or and a
 * compare), one dpbusd against the two activation blocks, and the 4 rows'
 * lanes reduce to the 8 totals in three unpack-and-add steps where AVX2
 * takes two maddubs, hadds and a madd per block. Integer sums are exact, so
 * the totals, and hence the bits, are AVX2's. q4_1 the same way, with the
 * AVX2 q4_1 GEMV's float step. */
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
INLINE __m256i reduce4(const __m512i *D);
INLINE __m256i pair512(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb);
#define B32_PAIR pair512
#include "kernels/x86/avx2/gemv_b32.h"

enum { F4_0, F5_0, F4_1 };

/* blocks b and b + 1 (ONE: block b twice) of a q4_0 / q5_0 / q4_1 row as
 * 64 bytes of u, each block's elements in order (low nibbles, then high) */
INLINE __m512i u64_of(const int F, const int ONE, const uint8_t *row, int64_t b) {
    const int Q5 = F == F5_0;
    const size_t bs = F == F5_0 ? sizeof(block_q5_0) : F == F4_0 ? sizeof(block_q4_0) : sizeof(block_q4_1);
    const size_t qo = F == F5_0 ? 6 : F == F4_0 ? 2 : 4;
    const uint8_t *a = row + (size_t)b * bs, *c = ONE ? a : a + bs;
    /* [qa qa qc qc]: two broadcasts from memory, the second masked */
    __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(a + qo)));
    v = _mm512_mask_broadcast_i32x4(v, 0xFF00, _mm_loadu_si128((const __m128i *)(c + qo)));
    v = _mm512_and_si512(_mm512_srlv_epi64(v, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
    if (!Q5) return v;
    uint32_t ha, hc; /* bit e: the 5th bit of element e */
    memcpy(&ha, a + 2, sizeof ha);
    memcpy(&hc, c + 2, sizeof hc);
    return _mm512_mask_add_epi8(v, (__mmask64)ha | (__mmask64)hc << 32, v, _mm512_set1_epi8(16));
}

/* the nr rows' totals of u . x for blocks b and b + 1: [b: rows 0-3 | b + 1: rows 0-3];
 * q8_0: of w . x, its u = w + 128 starting each lane at -128 x its 4 x */
INLINE __m256i pair512(const int T, const int nr, const uint8_t *const *x, int64_t b, const block_q8_0 *yb) {
    const __m512i X = load2x256(yb[b].qs, yb[b + 1].qs), z = _mm512_setzero_si512();
    const __m512i s128 = _mm512_set1_epi8((char)0x80);
    const __m512i z0 = T == T_Q8_0 ? _mm512_sub_epi32(z, _mm512_dpbusd_epi32(z, s128, X)) : z;
    __m512i D[NR];
    for (int j = 0; j < NR; j++) {
        if (j >= nr) { /* x[j] is not a row */
            D[j] = z;
            continue;
        }
        const __m512i u = T == T_Q8_0 ? _mm512_xor_si512(load2x256(x[j] + (size_t)b * sizeof(block_q8_0) + 2,
                                                                   x[j] + (size_t)(b + 1) * sizeof(block_q8_0) + 2), s128)
                                      : u64_of(T == T_Q5_0 ? F5_0 : F4_0, 0, x[j], b);
        D[j] = _mm512_dpbusd_epi32(z0, u, X);
    }
    return reduce4(D);
}

/* 4 rows' dpbusd lanes of two blocks -> [b: rows 0-3 | b + 1: rows 0-3] */
INLINE __m256i reduce4(const __m512i *D) {
    /* per 128-bit lane (16 elements of one block): the 4 rows' sums of its 4 lanes */
    const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(D[0], D[1]), _mm512_unpackhi_epi32(D[0], D[1]));
    const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(D[2], D[3]), _mm512_unpackhi_epi32(D[2], D[3]));
    const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    /* lanes 0 + 1: block b, 2 + 3: block b + 1 */
    const __m512i h = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si256(_mm512_shuffle_i32x4(h, h, _MM_SHUFFLE(0, 0, 2, 0)));
}

/* ---- q4_1 against q8_1: the AVX2 kernel's float steps (gemv_avx2_q4_1.c
 * rows4: per block acc + ((dw * dx) * total + m * s), 4 rows in the lanes)
 * on the totals of two blocks at a time as above ---- */

/* the 4 rows' (d, m) of blocks b, b + 1 as floats: [b rows 0-3 | b + 1 rows 0-3] each */
INLINE void dm8(const int nr, const uint8_t *const *x, int64_t b, __m256 *dw, __m256 *mw) {
    uint32_t v[8] = {0};
    for (int j = 0; j < nr; j++) {
        memcpy(&v[j], x[j] + (size_t)b * sizeof(block_q4_1), 4);
        memcpy(&v[4 + j], x[j] + (size_t)(b + 1) * sizeof(block_q4_1), 4);
    }
    const __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)v)); /* d0 m0 d1 m1 ... */
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    *dw = _mm512_castps512_ps256(_mm512_permutexvar_ps(ev, f));
    *mw = _mm512_castps512_ps256(_mm512_permutexvar_ps(od, f));
}

INLINE void rows4_q4_1(const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    const block_q8_1 *y = (const block_q8_1 *)g->qs;
    const int64_t nb = g->k / QK8_1;
    const __m512i z = _mm512_setzero_si512();
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {
        const int one = b + 1 >= nb; /* the last block of an odd count: alone */
        if (pf)
            for (int j = 0; j < nr; j++) _mm_prefetch((const char *)x[j] + pf + (size_t)b * sizeof(block_q4_1), PF_HINT);
        const __m512i X = one ? _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[b].qs))
                              : load2x256(y[b].qs, y[b + 1].qs);
        __m512i D[NR];
        for (int j = 0; j < NR; j++)
            D[j] = j >= nr ? z : one ? _mm512_dpbusd_epi32(z, u64_of(F4_1, 1, x[j], b), X) : _mm512_dpbusd_epi32(z, u64_of(F4_1, 0, x[j], b), X);
        const __m256 t = _mm256_cvtepi32_ps(reduce4(D));
        __m256 dw, mw;
        if (one) { /* (d, m) of block b only (folding this into dm8 as a run-time case cost SmolLM2 decode 35 %) */
            uint32_t v[4] = {0};
            for (int j = 0; j < nr; j++) memcpy(&v[j], x[j] + (size_t)b * sizeof(block_q4_1), 4);
            const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)v));
            const __m128 f0 = _mm256_castps256_ps128(f), f1 = _mm256_extractf128_ps(f, 1);
            dw = _mm256_castps128_ps256(_mm_shuffle_ps(f0, f1, 0x88));
            mw = _mm256_castps128_ps256(_mm_shuffle_ps(f0, f1, 0xDD));
        } else {
            dm8(nr, x, b, &dw, &mw);
        }
        const __m256 dx = _mm256_insertf128_ps(_mm256_set1_ps(g->d[b]), _mm_set1_ps(one ? 0.0f : g->d[b + 1]), 1);
        const __m256 sx = _mm256_insertf128_ps(_mm256_set1_ps(g->xs[b]), _mm_set1_ps(one ? 0.0f : g->xs[b + 1]), 1);
        __m256 pd = _mm256_mul_ps(_mm256_mul_ps(dw, dx), t), pm = _mm256_mul_ps(mw, sx);
        __asm__("" : "+v"(pd), "+v"(pm)); /* no fma: plain C rounds each product */
        const __m256 v = _mm256_add_ps(pd, pm);
        acc = _mm_add_ps(acc, _mm256_castps256_ps128(v));
        if (!one) acc = _mm_add_ps(acc, _mm256_extractf128_ps(v, 1));
    }
    _mm_storeu_ps(out, acc);
}

enum { K_Q4_1 = 3 }; /* after the header's T_Q4_0, T_Q5_0, T_Q8_0 */
INLINE void rows_nr(const int K, const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    if (K == K_Q4_1) rows4_q4_1(nr, x, g, out, pf);
    else rows32(K, nr, x, g, out, pf);
}
#include "kernels/x86/avx2/gemv_rows.h"

NPL_GEMV_ROWS_FN(q4_0, T_Q4_0)
NPL_GEMV_ROWS_FN(q5_0, T_Q5_0)
NPL_GEMV_ROWS_FN(q4_1, K_Q4_1)
NPL_GEMV_ROWS_FN(q8_0, T_Q8_0)

/* the AVX2 kernels' activation rows (d and offsets four times over) */
static void prep_q4_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q4_0)->prep(gx, mem, xq, k); }
static void prep_q5_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q5_0)->prep(gx, mem, xq, k); }

static void prep_q4_1(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2_q4_1()->prep(gx, mem, xq, k); }
static void prep_q8_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { npl_gemv_get_avx2(NPL_TYPE_Q8_0)->prep(gx, mem, xq, k); }

static const npl_gemv_kernels k_q4_0 = {prep_q4_0, rows_q4_0}, k_q5_0 = {prep_q5_0, rows_q5_0}, k_q4_1 = {prep_q4_1, rows_q4_1},
                              k_q8_0 = {prep_q8_0, rows_q8_0};

const npl_gemv_kernels *npl_gemv_get_avx512_b32(npl_type t) {
    return t == NPL_TYPE_Q4_0 ? &k_q4_0 : t == NPL_TYPE_Q5_0 ? &k_q5_0 : t == NPL_TYPE_Q4_1 ? &k_q4_1 : t == NPL_TYPE_Q8_0 ? &k_q8_0 : NULL;
}

#else
const npl_gemv_kernels *npl_gemv_get_avx512_b32(npl_type t) {
    (void)t;
    return NULL;
}
#endif
