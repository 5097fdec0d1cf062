/* vnpu AVX-512 matmul kernels (AVX-512F/BW + VNNI): 8-row x 32-column
 * register tiles over the shared panel layout. f32 / f16 / bf16 weights
 * with f32 FMAs (f16 via vcvtph2ps, bf16 by shifting into f32), int8 with
 * VPDPBUSD (x fed as u8 = q + 128, corrected by the column sums), int16
 * with VPMADDWD pair products summed in f32. Only called after a CPU check. */
#include <immintrin.h>
#include <string.h>

#include "accel/vnpu/vnpu_mm.h"

#define B VNPU_BLOCK
#define MR 8

#define ACC_DECL                                                                                           \
    __m512 c0a = _mm512_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a,     \
           c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a, c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a
#define ACC_STORE(out)                                                                                     \
    do {                                                                                                   \
        _mm512_storeu_ps(out + 0 * B, c0a); _mm512_storeu_ps(out + 0 * B + 16, c0b);                      \
        _mm512_storeu_ps(out + 1 * B, c1a); _mm512_storeu_ps(out + 1 * B + 16, c1b);                      \
        _mm512_storeu_ps(out + 2 * B, c2a); _mm512_storeu_ps(out + 2 * B + 16, c2b);                      \
        _mm512_storeu_ps(out + 3 * B, c3a); _mm512_storeu_ps(out + 3 * B + 16, c3b);                      \
        _mm512_storeu_ps(out + 4 * B, c4a); _mm512_storeu_ps(out + 4 * B + 16, c4b);                      \
        _mm512_storeu_ps(out + 5 * B, c5a); _mm512_storeu_ps(out + 5 * B + 16, c5b);                      \
        _mm512_storeu_ps(out + 6 * B, c6a); _mm512_storeu_ps(out + 6 * B + 16, c6b);                      \
        _mm512_storeu_ps(out + 7 * B, c7a); _mm512_storeu_ps(out + 7 * B + 16, c7b);                      \
    } while (0)
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* ---- float weights ---- */

static void micro_f32(const float *x, int64_t xs, const float *w0, const float *w1, int64_t kpad, float *out) {
    ACC_DECL;
    for (int64_t k = 0; k < kpad; k++) {
        const __m512 wa = _mm512_loadu_ps(w0 + k * 16), wb = _mm512_loadu_ps(w1 + k * 16);
#define FMA_ROW(i)                                                                                          \
    {                                                                                                       \
        const __m512 xv = _mm512_set1_ps(x[(i) * xs + k]);                                                  \
        c##i##a = _mm512_fmadd_ps(xv, wa, c##i##a);                                                         \
        c##i##b = _mm512_fmadd_ps(xv, wb, c##i##b);                                                         \
    }
        ROWS(FMA_ROW)
    }
    ACC_STORE(out);
}

static void micro_f16(const float *x, int64_t xs, const uint16_t *w0, const uint16_t *w1, int64_t kpad, float *out) {
    ACC_DECL;
    for (int64_t k = 0; k < kpad; k++) {
        const __m512 wa = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w0 + k * 16)));
        const __m512 wb = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w1 + k * 16)));
        ROWS(FMA_ROW)
    }
    ACC_STORE(out);
}

static void micro_bf16(const float *x, int64_t xs, const uint16_t *w0, const uint16_t *w1, int64_t kpad, float *out) {
    ACC_DECL;
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    for (int64_t k2 = 0; k2 < kpad; k2 += 2) {
        const __m512i va = _mm512_loadu_si512(w0 + k2 * 16), vb = _mm512_loadu_si512(w1 + k2 * 16);
        {
            const int64_t k = k2;
            const __m512 wa = _mm512_castsi512_ps(_mm512_slli_epi32(va, 16));
            const __m512 wb = _mm512_castsi512_ps(_mm512_slli_epi32(vb, 16));
            ROWS(FMA_ROW)
        }
        {
            const int64_t k = k2 + 1;
            const __m512 wa = _mm512_castsi512_ps(_mm512_and_si512(va, hi));
            const __m512 wb = _mm512_castsi512_ps(_mm512_and_si512(vb, hi));
            ROWS(FMA_ROW)
        }
    }
    ACC_STORE(out);
}
#undef FMA_ROW

static void mm_float_avx512(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    _Alignas(64) float facc[B * B];
    const int64_t xs = j->x_stride / 4;
    for (int64_t cb = c0; cb < c1; cb += B) {
        const uint8_t *w0 = vnpu_pk_panel(p, cb), *w1 = vnpu_pk_panel(p, cb + VNPU_PANEL);
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int rr = 0; rr < B; rr += MR) {
                const float *x = (const float *)(j->x + (rb + rr) * j->x_stride);
                if (p->fmt == VNPU_PK_F32)
                    micro_f32(x, xs, (const float *)w0, (const float *)w1, p->kpad, facc + rr * B);
                else if (p->fmt == VNPU_PK_F16)
                    micro_f16(x, xs, (const uint16_t *)w0, (const uint16_t *)w1, p->kpad, facc + rr * B);
                else
                    micro_bf16(x, xs, (const uint16_t *)w0, (const uint16_t *)w1, p->kpad, facc + rr * B);
            }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    }
}

/* ---- int8: VPDPBUSD ---- */

#define IACC_DECL                                                                                           \
    __m512i c0a = _mm512_setzero_si512(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, \
            c3b = c0a, c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a, c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a
#define IACC_STORE(out)                                                                                     \
    do {                                                                                                    \
        _mm512_storeu_si512(out + 0 * B, c0a); _mm512_storeu_si512(out + 0 * B + 16, c0b);                 \
        _mm512_storeu_si512(out + 1 * B, c1a); _mm512_storeu_si512(out + 1 * B + 16, c1b);                 \
        _mm512_storeu_si512(out + 2 * B, c2a); _mm512_storeu_si512(out + 2 * B + 16, c2b);                 \
        _mm512_storeu_si512(out + 3 * B, c3a); _mm512_storeu_si512(out + 3 * B + 16, c3b);                 \
        _mm512_storeu_si512(out + 4 * B, c4a); _mm512_storeu_si512(out + 4 * B + 16, c4b);                 \
        _mm512_storeu_si512(out + 5 * B, c5a); _mm512_storeu_si512(out + 5 * B + 16, c5b);                 \
        _mm512_storeu_si512(out + 6 * B, c6a); _mm512_storeu_si512(out + 6 * B + 16, c6b);                 \
        _mm512_storeu_si512(out + 7 * B, c7a); _mm512_storeu_si512(out + 7 * B + 16, c7b);                 \
    } while (0)

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* acc[8][32] = sum over k in [k0, k1) of (x + 128) * w, as int32 */
static void micro_i8(const uint8_t *x, int64_t xs, const uint8_t *w0, const uint8_t *w1, int64_t k0, int64_t k1,
                     int32_t *out) {
    IACC_DECL;
    const __m512i bias = _mm512_set1_epi32((int)0x80808080u);
    for (int64_t k = k0; k < k1; k += 4) {
        const __m512i wa = _mm512_loadu_si512(w0 + k * 16), wb = _mm512_loadu_si512(w1 + k * 16);
#define DP_ROW(i)                                                                                           \
    {                                                                                                       \
        const __m512i xv = _mm512_xor_si512(_mm512_set1_epi32(load_i32(x + (i) * xs + k)), bias);          \
        c##i##a = _mm512_dpbusd_epi32(c##i##a, xv, wa);                                                     \
        c##i##b = _mm512_dpbusd_epi32(c##i##b, xv, wb);                                                     \
    }
        ROWS(DP_ROW)
#undef DP_ROW
    }
    IACC_STORE(out);
}

static void mm_i8_avx512(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    _Alignas(64) int32_t acc[MR * B];
    _Alignas(64) float facc[B * B];
    for (int64_t cb = c0; cb < c1; cb += B) {
        const uint8_t *w0 = vnpu_pk_panel(p, cb), *w1 = vnpu_pk_panel(p, cb + VNPU_PANEL);
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int rr = 0; rr < B; rr += MR)
                for (int64_t b = 0; b < p->nblk; b++) {
                    micro_i8(j->x + (rb + rr) * j->x_stride, j->x_stride, w0, w1, b * p->bk, (b + 1) * p->bk, acc);
                    vnpu_epi_int(j, acc, facc + rr * B, rb + rr, MR, cb, b, 128, b == 0);
                }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    }
}

/* m = 1: one row against 32 columns (two panels) at a time, each k-block's
 * int32 sums scaled into f32 at once; the weights are read exactly once. */
static void gemv_i8_avx512(const vnpu_mm_job *j, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const uint8_t *x = j->x;
    const __m512i bias = _mm512_set1_epi32((int)0x80808080u);
    const float *scale = (const float *)(p->data + p->off_scale);
    const float *offs = p->off_offs != VNPU_NOFF ? (const float *)(p->data + p->off_offs) : NULL;
    const int32_t *wsum = (const int32_t *)(p->data + p->off_wsum);
    const float *bias_f = p->off_bias != VNPU_NOFF ? (const float *)(p->data + p->off_bias) : NULL;
    for (int64_t cb = c0; cb < c1; cb += B) {
        const uint8_t *w0 = vnpu_pk_panel(p, cb), *w1 = vnpu_pk_panel(p, cb + VNPU_PANEL);
        __m512 fa = _mm512_setzero_ps(), fb = _mm512_setzero_ps();
        for (int64_t b = 0; b < p->nblk; b++) {
            __m512i ia = _mm512_setzero_si512(), ib = _mm512_setzero_si512();
            for (int64_t k = b * p->bk; k < (b + 1) * p->bk; k += 4) {
                const __m512i xv = _mm512_xor_si512(_mm512_set1_epi32(load_i32(x + k)), bias);
                ia = _mm512_dpbusd_epi32(ia, xv, _mm512_loadu_si512(w0 + k * 16));
                ib = _mm512_dpbusd_epi32(ib, xv, _mm512_loadu_si512(w1 + k * 16));
            }
            const int64_t o = b * p->npad + cb;
            ia = _mm512_sub_epi32(ia, _mm512_slli_epi32(_mm512_loadu_si512(wsum + o), 7));
            ib = _mm512_sub_epi32(ib, _mm512_slli_epi32(_mm512_loadu_si512(wsum + o + 16), 7));
            __m512 ta = _mm512_cvtepi32_ps(ia), tb = _mm512_cvtepi32_ps(ib);
            if (offs) {
                const __m512 xsum = _mm512_set1_ps(j->xsum[b]);
                ta = _mm512_fmadd_ps(_mm512_loadu_ps(offs + o), xsum, ta);
                tb = _mm512_fmadd_ps(_mm512_loadu_ps(offs + o + 16), xsum, tb);
            }
            const __m512 xs = _mm512_set1_ps(j->xs[b]);
            fa = _mm512_fmadd_ps(_mm512_mul_ps(xs, _mm512_loadu_ps(scale + o)), ta, fa);
            fb = _mm512_fmadd_ps(_mm512_mul_ps(xs, _mm512_loadu_ps(scale + o + 16)), tb, fb);
        }
        if (bias_f) {
            fa = _mm512_add_ps(fa, _mm512_loadu_ps(bias_f + cb));
            fb = _mm512_add_ps(fb, _mm512_loadu_ps(bias_f + cb + 16));
        }
        const int64_t nc = j->ncols - cb;
        const __mmask16 ma = nc >= 16 ? 0xFFFF : nc <= 0 ? 0 : (__mmask16)((1u << nc) - 1);
        const __mmask16 mb = nc >= 32 ? 0xFFFF : nc <= 16 ? 0 : (__mmask16)((1u << (nc - 16)) - 1);
        _mm512_mask_storeu_ps(j->y + cb, ma, fa);
        _mm512_mask_storeu_ps(j->y + cb + 16, mb, fb);
    }
}

/* ---- int16: VPMADDWD pairs, summed in f32 (a pair never overflows int32) ---- */

static void micro_i16(const int16_t *x, int64_t xs, const int16_t *w0, const int16_t *w1, int64_t k0, int64_t k1,
                      float *out) {
    ACC_DECL;
    for (int64_t k = k0; k < k1; k += 2) {
        const __m512i wa = _mm512_loadu_si512(w0 + k * 16), wb = _mm512_loadu_si512(w1 + k * 16);
#define MADD_ROW(i)                                                                                         \
    {                                                                                                       \
        const __m512i xv = _mm512_set1_epi32(load_i32(x + (i) * xs + k));                                   \
        c##i##a = _mm512_add_ps(c##i##a, _mm512_cvtepi32_ps(_mm512_madd_epi16(xv, wa)));                    \
        c##i##b = _mm512_add_ps(c##i##b, _mm512_cvtepi32_ps(_mm512_madd_epi16(xv, wb)));                    \
    }
        ROWS(MADD_ROW)
#undef MADD_ROW
    }
    ACC_STORE(out);
}

static void mm_i16_avx512(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    _Alignas(64) float acc[MR * B];
    _Alignas(64) float facc[B * B];
    const int64_t xs = j->x_stride / 2;
    for (int64_t cb = c0; cb < c1; cb += B) {
        const int16_t *w0 = (const int16_t *)vnpu_pk_panel(p, cb), *w1 = (const int16_t *)vnpu_pk_panel(p, cb + VNPU_PANEL);
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int rr = 0; rr < B; rr += MR)
                for (int64_t b = 0; b < p->nblk; b++) {
                    micro_i16((const int16_t *)(j->x + (rb + rr) * j->x_stride), xs, w0, w1, b * p->bk,
                              (b + 1) * p->bk, acc);
                    vnpu_epi_intf(j, acc, facc + rr * B, rb + rr, MR, cb, b, b == 0);
                }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    }
}

/* ---- activation rows ---- */

static void prep_avx512(int act, const float *x, int64_t k, int64_t kpad, int64_t bk, uint8_t *dst, float *xs,
                        float *xsum) {
    if (act == VNPU_ACT_I8 || act == VNPU_ACT_I16 || act == VNPU_ACT_I16S) {
        const int i8 = act == VNPU_ACT_I8;
        const float lim = i8 ? 127.0f : 32767.0f;
        const __m512i hi = _mm512_set1_epi32((int)lim), lo = _mm512_set1_epi32(-(int)lim);
        for (int64_t b = 0; b * bk < kpad; b++) {
            __m512 mx = _mm512_setzero_ps();
            for (int64_t i = b * bk; i < (b + 1) * bk && i < k; i += 16) {
                const __mmask16 mk = k - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - i)) - 1);
                mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_maskz_loadu_ps(mk, x + i)));
            }
            const float amax = _mm512_reduce_max_ps(mx);
            const __m512 inv = _mm512_set1_ps(amax > 0.0f ? lim / amax : 0.0f);
            xs[b] = vnpu_act_scale(amax, lim);
            __m512i sum = _mm512_setzero_si512();
            for (int64_t i = b * bk; i < (b + 1) * bk; i += 16) {
                const __mmask16 mk = i >= k ? 0 : k - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - i)) - 1);
                __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + i), inv));
                q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
                sum = _mm512_add_epi32(sum, q);
                if (i8) {
                    _mm_storeu_si128((__m128i *)(dst + i), _mm512_cvtepi32_epi8(q));
                } else if (act == VNPU_ACT_I16) {
                    _mm256_storeu_si256((__m256i *)(dst + 2 * i), _mm512_cvtepi32_epi16(q));
                } else { /* split: high bytes, then low bytes */
                    _mm_storeu_si128((__m128i *)(dst + i), _mm512_cvtepi32_epi8(_mm512_srai_epi32(q, 8)));
                    _mm_storeu_si128((__m128i *)(dst + kpad + i), _mm512_cvtepi32_epi8(q));
                }
            }
            xsum[b] = (float)_mm512_reduce_add_epi32(sum);
        }
        return;
    }
    const __m512i rbias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
    for (int64_t i = 0; i < kpad; i += 16) {
        const __mmask16 mk = i >= k ? 0 : k - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (k - i)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
        if (act == VNPU_ACT_F32) {
            _mm512_storeu_ps((float *)dst + i, v);
        } else if (act == VNPU_ACT_F16R) {
            const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            _mm512_storeu_ps((float *)dst + i, _mm512_cvtph_ps(h));
        } else { /* bf16, round to nearest even */
            const __m512i u = _mm512_castps_si512(v);
            const __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(u, _mm512_add_epi32(rbias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one))), 16);
            if (act == VNPU_ACT_BF16R) _mm512_storeu_ps((float *)dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(r, 16)));
            else _mm256_storeu_si256((__m256i *)((uint16_t *)dst + i), _mm512_cvtepi32_epi16(r));
        }
    }
}

void vnpu_mm_fill_avx512(vnpu_mm_table *t) {
    t->prep = prep_avx512;
    t->fn[VNPU_PK_F32] = t->fn[VNPU_PK_F16] = t->fn[VNPU_PK_BF16] = mm_float_avx512;
    t->fn[VNPU_PK_I8] = mm_i8_avx512;
    t->gemv[VNPU_PK_I8] = gemv_i8_avx512;
    t->fn[VNPU_PK_I16] = mm_i16_avx512;
    t->act[VNPU_PK_F32] = VNPU_ACT_F32;
    t->act[VNPU_PK_F16] = VNPU_ACT_F16R;
    t->act[VNPU_PK_BF16] = VNPU_ACT_BF16R;
    t->act[VNPU_PK_I8] = VNPU_ACT_I8;
    t->act[VNPU_PK_I16] = VNPU_ACT_I16;
    for (int f = 0; f < VNPU_PK_COUNT; f++) t->kname[f] = "avx512";
}
