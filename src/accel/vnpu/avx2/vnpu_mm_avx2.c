/* vnpu AVX2 matmul kernels (AVX2 + FMA + F16C): 4-row x 16-column register
 * tiles (one panel) over the shared panel layout. int8 uses the sign trick
 * maddubs(|w|, sign(x, w)), exact because activations are kept in +-127;
 * int16 sums VPMADDWD pairs in f32. Only called after a CPU check. */
#include <immintrin.h>
#include <string.h>

#include "accel/vnpu/vnpu_mm.h"

#define B VNPU_BLOCK
#define MR 4

#define ACC_DECL                                                                                            \
    __m256 c0a = _mm256_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a,      \
           c3b = c0a
/* rows of out have stride B floats; this panel's 16 columns */
#define ACC_STORE(out)                                                                                      \
    do {                                                                                                    \
        _mm256_storeu_ps(out + 0 * B, c0a); _mm256_storeu_ps(out + 0 * B + 8, c0b);                        \
        _mm256_storeu_ps(out + 1 * B, c1a); _mm256_storeu_ps(out + 1 * B + 8, c1b);                        \
        _mm256_storeu_ps(out + 2 * B, c2a); _mm256_storeu_ps(out + 2 * B + 8, c2b);                        \
        _mm256_storeu_ps(out + 3 * B, c3a); _mm256_storeu_ps(out + 3 * B + 8, c3b);                        \
    } while (0)
#define ROWS(X) X(0) X(1) X(2) X(3)
#define FMA_ROW(i)                                                                                          \
    {                                                                                                       \
        const __m256 xv = _mm256_broadcast_ss(x + (i) * xs + k);                                            \
        c##i##a = _mm256_fmadd_ps(xv, wa, c##i##a);                                                         \
        c##i##b = _mm256_fmadd_ps(xv, wb, c##i##b);                                                         \
    }

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ---- float weights ---- */

static void micro_float(int fmt, const float *x, int64_t xs, const uint8_t *w, int64_t kpad, float *out) {
    ACC_DECL;
    if (fmt == VNPU_PK_F32) {
        const float *wf = (const float *)w;
        for (int64_t k = 0; k < kpad; k++) {
            const __m256 wa = _mm256_loadu_ps(wf + k * 16), wb = _mm256_loadu_ps(wf + k * 16 + 8);
            ROWS(FMA_ROW)
        }
    } else if (fmt == VNPU_PK_F16) {
        const uint16_t *wh = (const uint16_t *)w;
        for (int64_t k = 0; k < kpad; k++) {
            const __m256 wa = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wh + k * 16)));
            const __m256 wb = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wh + k * 16 + 8)));
            ROWS(FMA_ROW)
        }
    } else { /* bf16 pairs (k even, k odd) per column */
        const uint16_t *wh = (const uint16_t *)w;
        const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
        for (int64_t k2 = 0; k2 < kpad; k2 += 2) {
            const __m256i va = _mm256_loadu_si256((const __m256i *)(wh + k2 * 16));
            const __m256i vb = _mm256_loadu_si256((const __m256i *)(wh + k2 * 16 + 16));
            {
                const int64_t k = k2;
                const __m256 wa = _mm256_castsi256_ps(_mm256_slli_epi32(va, 16));
                const __m256 wb = _mm256_castsi256_ps(_mm256_slli_epi32(vb, 16));
                ROWS(FMA_ROW)
            }
            {
                const int64_t k = k2 + 1;
                const __m256 wa = _mm256_castsi256_ps(_mm256_and_si256(va, hi));
                const __m256 wb = _mm256_castsi256_ps(_mm256_and_si256(vb, hi));
                ROWS(FMA_ROW)
            }
        }
    }
    ACC_STORE(out);
}

static void mm_float_avx2(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    _Alignas(64) float facc[B * B];
    const int64_t xs = j->x_stride / 4;
    for (int64_t cb = c0; cb < c1; cb += B)
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int h = 0; h < 2; h++) {
                const uint8_t *w = vnpu_pk_panel(p, cb + h * VNPU_PANEL);
                for (int rr = 0; rr < B; rr += MR)
                    micro_float((int)p->fmt, (const float *)(j->x + (rb + rr) * j->x_stride), xs, w, p->kpad,
                                facc + rr * B + h * VNPU_PANEL);
            }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
}

/* ---- int8: maddubs(|w|, sign(x, w)) ---- */

#define IACC_DECL                                                                                           \
    __m256i c0a = _mm256_setzero_si256(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, \
            c3b = c0a
#define IACC_STORE(out)                                                                                     \
    do {                                                                                                    \
        _mm256_storeu_si256((__m256i *)(out + 0 * B), c0a); _mm256_storeu_si256((__m256i *)(out + 0 * B + 8), c0b); \
        _mm256_storeu_si256((__m256i *)(out + 1 * B), c1a); _mm256_storeu_si256((__m256i *)(out + 1 * B + 8), c1b); \
        _mm256_storeu_si256((__m256i *)(out + 2 * B), c2a); _mm256_storeu_si256((__m256i *)(out + 2 * B + 8), c2b); \
        _mm256_storeu_si256((__m256i *)(out + 3 * B), c3a); _mm256_storeu_si256((__m256i *)(out + 3 * B + 8), c3b); \
    } while (0)

static void micro_i8(const uint8_t *x, int64_t xs, const uint8_t *w, int64_t k0, int64_t k1, int32_t *out) {
    IACC_DECL;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t k = k0; k < k1; k += 4) {
        const __m256i wa = _mm256_loadu_si256((const __m256i *)(w + k * 16));
        const __m256i wb = _mm256_loadu_si256((const __m256i *)(w + k * 16 + 32));
        const __m256i ua = _mm256_abs_epi8(wa), ub = _mm256_abs_epi8(wb);
#define DP_ROW(i)                                                                                           \
    {                                                                                                       \
        const __m256i xv = _mm256_set1_epi32(load_i32(x + (i) * xs + k));                                   \
        const __m256i pa = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(xv, wa));                              \
        const __m256i pb = _mm256_maddubs_epi16(ub, _mm256_sign_epi8(xv, wb));                              \
        c##i##a = _mm256_add_epi32(c##i##a, _mm256_madd_epi16(pa, ones));                                   \
        c##i##b = _mm256_add_epi32(c##i##b, _mm256_madd_epi16(pb, ones));                                   \
    }
        ROWS(DP_ROW)
#undef DP_ROW
    }
    IACC_STORE(out);
}

static void micro_i16(const int16_t *x, int64_t xs, const int16_t *w, int64_t k0, int64_t k1, float *out) {
    ACC_DECL;
    for (int64_t k = k0; k < k1; k += 2) {
        const __m256i wa = _mm256_loadu_si256((const __m256i *)(w + k * 16));
        const __m256i wb = _mm256_loadu_si256((const __m256i *)(w + k * 16 + 16));
#define MADD_ROW(i)                                                                                         \
    {                                                                                                       \
        const __m256i xv = _mm256_set1_epi32(load_i32(x + (i) * xs + k));                                   \
        c##i##a = _mm256_add_ps(c##i##a, _mm256_cvtepi32_ps(_mm256_madd_epi16(xv, wa)));                    \
        c##i##b = _mm256_add_ps(c##i##b, _mm256_cvtepi32_ps(_mm256_madd_epi16(xv, wb)));                    \
    }
        ROWS(MADD_ROW)
#undef MADD_ROW
    }
    ACC_STORE(out);
}

static void mm_int_avx2(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const int i8 = p->fmt == VNPU_PK_I8;
    _Alignas(64) int32_t iacc[MR * B];
    _Alignas(64) float acc[MR * B];
    _Alignas(64) float facc[B * B];
    for (int64_t cb = c0; cb < c1; cb += B)
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int rr = 0; rr < B; rr += MR)
                for (int64_t b = 0; b < p->nblk; b++) {
                    const int64_t k0 = b * p->bk, k1 = (b + 1) * p->bk;
                    for (int h = 0; h < 2; h++) {
                        const uint8_t *w = vnpu_pk_panel(p, cb + h * VNPU_PANEL);
                        if (i8)
                            micro_i8(j->x + (rb + rr) * j->x_stride, j->x_stride, w, k0, k1, iacc + h * VNPU_PANEL);
                        else
                            micro_i16((const int16_t *)(j->x + (rb + rr) * j->x_stride), j->x_stride / 2,
                                      (const int16_t *)w, k0, k1, acc + h * VNPU_PANEL);
                    }
                    if (i8) vnpu_epi_int(j, iacc, facc + rr * B, rb + rr, MR, cb, b, 0, b == 0);
                    else vnpu_epi_intf(j, acc, facc + rr * B, rb + rr, MR, cb, b, b == 0);
                }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
}

/* ---- activation rows: vectorized int quantization, the rest generic ---- */

static void prep_avx2(int act, const float *x, int64_t k, int64_t kpad, int64_t bk, uint8_t *dst, float *xs,
                      float *xsum) {
    if ((act != VNPU_ACT_I8 && act != VNPU_ACT_I16) || k % 8) {
        vnpu_prep_generic(act, x, k, kpad, bk, dst, xs, xsum);
        return;
    }
    const int i8 = act == VNPU_ACT_I8;
    const float lim = i8 ? 127.0f : 32767.0f;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i hi = _mm256_set1_epi32((int)lim), lo = _mm256_set1_epi32(-(int)lim);
    for (int64_t b = 0; b * bk < kpad; b++) {
        __m256 mx = _mm256_setzero_ps();
        for (int64_t i = b * bk; i < (b + 1) * bk && i < k; i += 8)
            mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + i), absmask));
        float m8[8], amax = 0.0f;
        _mm256_storeu_ps(m8, mx);
        for (int i = 0; i < 8; i++) amax = m8[i] > amax ? m8[i] : amax;
        const __m256 inv = _mm256_set1_ps(amax > 0.0f ? lim / amax : 0.0f);
        xs[b] = vnpu_act_scale(amax, lim);
        __m256i sum = _mm256_setzero_si256();
        for (int64_t i = b * bk; i < (b + 1) * bk; i += 8) {
            __m256i q = _mm256_setzero_si256();
            if (i < k) {
                q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
                q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
            }
            sum = _mm256_add_epi32(sum, q);
            int32_t t[8];
            _mm256_storeu_si256((__m256i *)t, q);
            if (i8) for (int e = 0; e < 8; e++) ((int8_t *)dst)[i + e] = (int8_t)t[e];
            else for (int e = 0; e < 8; e++) ((int16_t *)dst)[i + e] = (int16_t)t[e];
        }
        int32_t t[8], s = 0;
        _mm256_storeu_si256((__m256i *)t, sum);
        for (int e = 0; e < 8; e++) s += t[e];
        xsum[b] = (float)s;
    }
}

void vnpu_mm_fill_avx2(vnpu_mm_table *t) {
    t->prep = prep_avx2;
    t->fn[VNPU_PK_F32] = t->fn[VNPU_PK_F16] = t->fn[VNPU_PK_BF16] = mm_float_avx2;
    t->fn[VNPU_PK_I8] = t->fn[VNPU_PK_I16] = mm_int_avx2;
    t->act[VNPU_PK_F32] = VNPU_ACT_F32;
    t->act[VNPU_PK_F16] = VNPU_ACT_F16R;
    t->act[VNPU_PK_BF16] = VNPU_ACT_BF16R;
    t->act[VNPU_PK_I8] = VNPU_ACT_I8;
    t->act[VNPU_PK_I16] = VNPU_ACT_I16;
    for (int f = 0; f < VNPU_PK_COUNT; f++) t->kname[f] = "avx2";
}
