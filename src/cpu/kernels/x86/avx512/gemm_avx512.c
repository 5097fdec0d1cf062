/* AVX-512 VNNI GEMM for prefill (see gemm.h for the packed layout): a tile
 * of 4 weight rows x up to 4 activation rows keeps 16 accumulators; per
 * 64-element step each pair costs dpbusd(u, x), a conversion, the product
 * of the two broadcast group scales and an fma. Weights are decoded 16 rows
 * at a time onto the stack and reused across every activation row. */
#include "cpu/kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <string.h>

#include "core/quant.h"
#include "core/quant_blocks.h"
#include "cpu/kernels/x86/avx512/avx512_util.h"

enum { TR = 4, TC = 4, BATCH = 16 }; /* tile rows, tile columns, weight rows decoded at once */

/* Decoded weight rows: u [rows][kp], d [rows][kp/16], m [rows][ng]. */
typedef struct {
    int64_t kp, ng;
    uint8_t *u;
    float *d, *m;
} wpanel;

/* plain element order -> lane 4q + g holds elements 4q..4q+3 of group g */
static inline __m512i interleave(__m512i v) {
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* ---- activation packing (once per matmul; cost m * k) ---- */

static void pack_tail(const npl_gemm_x *xp, int64_t r, int64_t done) {
    int8_t *qs = xp->qs + r * xp->kp;
    float *d = xp->d + r * (xp->kp / 16), *sum = xp->sum + r * xp->ng;
    memset(qs + done, 0, (size_t)(xp->kp - done));
    for (int64_t g = done / 16; g < xp->kp / 16; g++) d[g] = 0;
    for (int64_t g = done / 16; g < xp->ng; g++) sum[g] = 0;
}

static inline int group_sum(const int8_t *q) {
    int s = 0;
    for (int i = 0; i < 16; i++) s += q[i];
    return s;
}

static void pack_q8_0(const npl_gemm_x *xp, int64_t r, const void *row) {
    const block_q8_0 *x = row;
    const int64_t nb = xp->k / QK8_0;
    int8_t *qs = xp->qs + r * xp->kp;
    float *d = xp->d + r * (xp->kp / 16), *sum = xp->sum + r * xp->ng;
    const block_q8_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q8_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        _mm512_store_si512(qs + i * 32, interleave(load2x256(a->qs, b->qs)));
        const float da = h2f(a->d), db = h2f(b->d);
        d[2 * i] = d[2 * i + 1] = da;
        d[2 * i + 2] = d[2 * i + 3] = db;
        sum[2 * i] = da * (float)group_sum(a->qs);
        sum[2 * i + 1] = da * (float)group_sum(a->qs + 16);
        sum[2 * i + 2] = db * (float)group_sum(b->qs);
        sum[2 * i + 3] = db * (float)group_sum(b->qs + 16);
    }
    pack_tail(xp, r, (nb + 1) / 2 * 64);
}

static void pack_q8_K(const npl_gemm_x *xp, int64_t r, const void *row) {
    const block_q8_K *x = row;
    const int64_t nb = xp->k / QK_K;
    int8_t *qs = xp->qs + r * xp->kp;
    float *d = xp->d + r * (xp->kp / 16), *sum = xp->sum + r * xp->ng;
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t s = i * 4 + j;
            _mm512_store_si512(qs + s * 64, interleave(_mm512_loadu_si512(x[i].qs + 64 * j)));
            for (int g = 0; g < 4; g++) {
                d[4 * s + g] = x[i].d;
                sum[4 * s + g] = x[i].d * (float)x[i].bsums[4 * j + g];
            }
        }
    pack_tail(xp, r, nb * QK_K);
}

/* ---- weight decoding (cost n * k per matmul, amortized over m rows) ---- */

typedef void (*decode_fn)(const void *row, int64_t k, const wpanel *p, int j);

static inline void put_step(const wpanel *p, int j, int64_t s, __m512i plain, __m128 d, __m128 m) {
    _mm512_store_si512(p->u + j * p->kp + s * 64, interleave(plain));
    _mm_storeu_ps(p->d + j * (p->kp / 16) + s * 4, d);
    _mm_storeu_ps(p->m + j * p->ng + s * 4, m);
}

static void decode_tail(const wpanel *p, int j, int64_t done) {
    memset(p->u + j * p->kp + done, 0, (size_t)(p->kp - done));
    for (int64_t g = done / 16; g < p->kp / 16; g++) p->d[j * (p->kp / 16) + g] = 0;
    for (int64_t g = done / 16; g < p->ng; g++) p->m[j * p->ng + g] = 0;
}

/* [a a b b] and -o * [a a b b] */
static inline void pair_scales(uint16_t ha, uint16_t hb, float o, __m128 *d, __m128 *m) {
    const float a = h2f(ha), b = h2f(hb);
    *d = _mm_setr_ps(a, a, b, b);
    *m = _mm_mul_ps(*d, _mm_set1_ps(-o));
}

static void decode_q4_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q4_0 *x = row;
    const int64_t nb = k / QK4_0;
    const block_q4_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q4_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        __m128 d, m;
        pair_scales(a->d, b->d, 8.0f, &d, &m);
        put_step(p, j, i / 2, nibbles2x32(a->qs, b->qs), d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static void decode_q5_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q5_0 *x = row;
    const int64_t nb = k / QK5_0;
    const block_q5_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q5_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        uint32_t ha, hb;
        memcpy(&ha, a->qh, 4);
        memcpy(&hb, b->qh, 4);
        __m512i u = nibbles2x32(a->qs, b->qs);
        u = _mm512_mask_add_epi8(u, (__mmask64)ha | ((__mmask64)hb << 32), u, _mm512_set1_epi8(16));
        __m128 d, m;
        pair_scales(a->d, b->d, 16.0f, &d, &m);
        put_step(p, j, i / 2, u, d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static void decode_q8_0(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q8_0 *x = row;
    const int64_t nb = k / QK8_0;
    const block_q8_0 zero = {0};
    for (int64_t i = 0; i < nb; i += 2) {
        const block_q8_0 *a = &x[i], *b = i + 1 < nb ? &x[i + 1] : &zero;
        const __m512i u = _mm512_xor_si512(load2x256(a->qs, b->qs), _mm512_set1_epi8((char)0x80));
        __m128 d, m;
        pair_scales(a->d, b->d, 128.0f, &d, &m);
        put_step(p, j, i / 2, u, d, m);
    }
    decode_tail(p, j, (nb + 1) / 2 * 64);
}

static void decode_q4_K(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q4_K *x = row;
    const int64_t nb = k / QK_K;
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            npl_get_scale_min_k4(2 * c, x[i].scales, &sc0, &m0);
            npl_get_scale_min_k4(2 * c + 1, x[i].scales, &sc1, &m1);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, lo4)),
                                                 _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4), 1);
            const float a = d * sc0, b = d * sc1, ma = -dmin * m0, mb = -dmin * m1;
            put_step(p, j, i * 4 + c, u, _mm_setr_ps(a, a, b, b), _mm_setr_ps(ma, ma, mb, mb));
        }
    }
    decode_tail(p, j, nb * QK_K);
}

static void decode_q6_K(const void *row, int64_t k, const wpanel *p, int j) {
    const block_q6_K *x = row;
    const int64_t nb = k / QK_K;
    const __m256i lo4 = _mm256_set1_epi8(0x0F), lo2 = _mm256_set1_epi8(0x03);
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            const __m256i la = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i lb = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i hh = _mm256_loadu_si256((const __m256i *)qh);
            __m256i hb[4];
            for (int s = 0; s < 4; s++)
                hb[s] = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hh, 2 * s), lo2), 4);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(la, lo4), hb[0]);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(lb, lo4), hb[1]);
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), lo4), hb[2]);
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), lo4), hb[3]);
            for (int c = 0; c < 2; c++) {
                const __m128 ds = _mm_mul_ps(_mm_set1_ps(d), _mm_setr_ps(sc[4 * c], sc[4 * c + 1], sc[4 * c + 2],
                                                                        sc[4 * c + 3]));
                const __m512i u = c == 0 ? _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1)
                                         : _mm512_inserti64x4(_mm512_castsi256_si512(q2), q3, 1);
                put_step(p, j, i * 4 + h * 2 + c, u, ds, _mm_mul_ps(ds, _mm_set1_ps(-32.0f)));
            }
        }
    }
    decode_tail(p, j, nb * QK_K);
}

/* ---- the tile ---- */

static inline __attribute__((always_inline)) void tile(const int nc, const wpanel *p, int r, int nr,
                                                       const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    const int64_t kp = p->kp, nd = kp / 16, ng = p->ng;
    const uint8_t *u = p->u + r * kp;
    const float *wd = p->d + r * nd, *wm = p->m + r * ng;
    const int8_t *xs = xp->qs + c0 * kp;
    const float *xd = xp->d + c0 * nd, *xm = xp->sum + c0 * ng;
    __m512 acc[TR][TC];
    for (int i = 0; i < TR; i++)
        for (int c = 0; c < TC; c++) acc[i][c] = _mm512_setzero_ps();
    for (int64_t s = 0; s < kp / 64; s++) {
        __m512i ur[TR];
        __m512 wr[TR];
        for (int i = 0; i < TR; i++) {
            ur[i] = _mm512_load_si512(u + i * kp + s * 64);
            wr[i] = _mm512_broadcast_f32x4(_mm_loadu_ps(wd + i * nd + s * 4));
        }
        for (int c = 0; c < nc; c++) {
            const __m512i x = _mm512_load_si512(xs + c * kp + s * 64);
            const __m512 sx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd + c * nd + s * 4));
            for (int i = 0; i < TR; i++) {
                const __m512i t = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ur[i], x);
                acc[i][c] = _mm512_fmadd_ps(_mm512_mul_ps(wr[i], sx), _mm512_cvtepi32_ps(t), acc[i][c]);
            }
        }
    }
    /* offsets and mins: sum over groups of w_m * x_sum */
    for (int64_t g = 0; g < ng; g += 16)
        for (int i = 0; i < TR; i++) {
            const __m512 m = _mm512_loadu_ps(wm + i * ng + g);
            for (int c = 0; c < nc; c++)
                acc[i][c] = _mm512_fmadd_ps(m, _mm512_loadu_ps(xm + c * ng + g), acc[i][c]);
        }
    /* per activation row: the four weight rows' sums side by side */
    const __mmask8 keep = (__mmask8)((1u << nr) - 1);
    for (int c = 0; c < nc; c++) {
        const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(acc[0][c], acc[1][c]), _mm512_unpackhi_ps(acc[0][c], acc[1][c]));
        const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(acc[2][c], acc[3][c]), _mm512_unpackhi_ps(acc[2][c], acc[3][c]));
        /* per 128-bit lane: [a0+a2 b0+b2 a1+a3 b1+b3], likewise c, d */
        const __m512 v = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        _mm_mask_storeu_ps(y + (c0 + c) * ldy, keep, q);
    }
}

static void tile1(const wpanel *p, int r, int nr, const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    tile(1, p, r, nr, xp, c0, y, ldy);
}
static void tile2(const wpanel *p, int r, int nr, const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    tile(2, p, r, nr, xp, c0, y, ldy);
}
static void tile3(const wpanel *p, int r, int nr, const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    tile(3, p, r, nr, xp, c0, y, ldy);
}
static void tile4(const wpanel *p, int r, int nr, const npl_gemm_x *xp, int64_t c0, float *y, int64_t ldy) {
    tile(4, p, r, nr, xp, c0, y, ldy);
}

static void rows_with(decode_fn dec, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,
                      float *y, int64_t ldy) {
    const int64_t kp = xp->kp, ng = xp->ng;
    const size_t bytes = (size_t)BATCH * (size_t)(kp + kp / 16 * 4 + ng * 4) + 64;
    uint8_t raw[bytes];
    wpanel p = {kp, ng, (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), NULL, NULL};
    p.d = (float *)(p.u + BATCH * kp);
    p.m = p.d + BATCH * (kp / 16);
    for (int64_t rb = r0; rb < r1; rb += BATCH) {
        const int nrow = r1 - rb < BATCH ? (int)(r1 - rb) : BATCH;
        const int npad = (nrow + TR - 1) / TR * TR;
        for (int j = 0; j < nrow; j++) dec((const uint8_t *)w + (rb + j) * (int64_t)w_row, xp->k, &p, j);
        for (int j = nrow; j < npad; j++) decode_tail(&p, j, 0);
        for (int64_t c0 = 0; c0 < xp->m; c0 += TC) {
            const int64_t nc = xp->m - c0 < TC ? xp->m - c0 : TC;
            for (int r = 0; r < nrow; r += TR) {
                const int nr = nrow - r < TR ? nrow - r : TR;
                float *yt = y + rb + r;
                switch (nc) {
                case 4: tile4(&p, r, nr, xp, c0, yt, ldy); break;
                case 3: tile3(&p, r, nr, xp, c0, yt, ldy); break;
                case 2: tile2(&p, r, nr, xp, c0, yt, ldy); break;
                default: tile1(&p, r, nr, xp, c0, yt, ldy); break;
                }
            }
        }
    }
}

#define ROWS_FN(name, dec)                                                                                  \
    static void name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, \
                     int64_t ldy) {                                                                         \
        rows_with(dec, w, w_row, r0, r1, xp, y, ldy);                                                       \
    }
ROWS_FN(rows_q4_0, decode_q4_0)
ROWS_FN(rows_q5_0, decode_q5_0)
ROWS_FN(rows_q8_0, decode_q8_0)
ROWS_FN(rows_q4_K, decode_q4_K)
ROWS_FN(rows_q6_K, decode_q6_K)

static const npl_gemm_kernels k_q4_0 = {pack_q8_0, rows_q4_0}, k_q5_0 = {pack_q8_0, rows_q5_0},
                              k_q8_0 = {pack_q8_0, rows_q8_0}, k_q4_K = {pack_q8_K, rows_q4_K},
                              k_q6_K = {pack_q8_K, rows_q6_K};

const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    if ((int)want < (int)NPL_ISA_AVX512 || (int)npl_cpu_best_isa() < (int)NPL_ISA_AVX512) return NULL;
    switch (t) {
    case NPL_TYPE_Q4_0: return &k_q4_0;
    case NPL_TYPE_Q5_0: return &k_q5_0;
    case NPL_TYPE_Q8_0: return &k_q8_0;
    case NPL_TYPE_Q4_K: return &k_q4_K;
    case NPL_TYPE_Q6_K: return &k_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    (void)want, (void)t;
    return NULL;
}
#endif
