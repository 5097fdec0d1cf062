/* AVX-512 VNNI GEMM for q4_K and q6_K in the AVX2 family's order.
 *
 * The AVX-512 family reads q4_K and q6_K as the AVX2 vec_dot does (gemm.h:
 * on an AMD EPYC Zen 5 its GEMV is the faster one, and this GEMM outran
 * the AVX-512 tile, since removed, whose float step per group of 16 cost as
 * much as the dot product). Per (weight row, activation row) and super-block, the same
 * 8 int32 lanes (lane l: sub-block scale x elements 4l..4l+3, summed over
 * the super-block), the same fma into 8 float lanes, q4_K's mins in the
 * same 4 lanes, and the same final horizontal sums: the AVX2 vec_dot's
 * bits, so a row gets decode's bits in a prefill batch.
 *
 * Weights come as the AVX2 GEMM's panel of 8 rows (gemm_kpanel.h), decoded
 * from the file's rows or from the packed copy. A zmm takes two rows' 32
 * bytes of a sub-block side by side against the activation's 32 bytes in
 * both halves. AVX2 gets lane l's sums with maddubs, madd by the scale, add;
 * here dpbusd gives lane l's 4-element sums of two sub-blocks (each fits
 * int16), a shift and a word blend put the two side by side in each int32
 * lane and one dpwssd multiplies them by their two scales and adds them
 * in: the same integers with 3 multiplies per 2 sub-blocks instead of 4
 * (avx512_util.h's sum_pair, as in the GEMV). A pass
 * keeps 4 row pairs x 4 activation rows of integer sums in registers; the
 * float accumulators change once per super-block and live in memory. */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/x86/avx2/gemm_kpanel.h"
#include "kernels/x86/avx512/avx512_util.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    RP = R / 2, /* row pairs per panel */
    NCK = 4,    /* activation rows per pass */
};

/* What a super-block's float step needs per panel, in the pass's layout. */
typedef struct {
    __m512 *dw;     /* [nsb][RP] [d(2p) x 8 | d(2p + 1) x 8] */
    __m512 *dmin;   /* q4_K: [nsb][2] [dmin(4q + t) x 4 for t = 0..3] */
    __m512i *mins;  /* q4_K: [nsb][2] the 8 mins (int16) of rows 4q..4q+3 */
    __m512i *sc2;   /* [nsb][4][RP] sub-blocks 2t, 2t + 1's scales of lane l in its words 2l, 2l + 1 */
} kscale;

static void scales_of(const panel *p, int64_t nsb, int has_min, const kscale *ks) {
    for (int64_t i = 0; i < nsb; i++) {
        /* the panel's pair scales have equal words: lane l's is word 2l of each */
        for (int t = 0; t < 4; t++)
            for (int q = 0; q < RP; q++)
                ks->sc2[(i * 4 + t) * RP + q] = _mm512_mask_blend_epi16(
                    0xAAAAAAAA, _mm512_load_si512(sc_at(p, 2 * q, 8 * i + 2 * t)), _mm512_load_si512(sc_at(p, 2 * q, 8 * i + 2 * t + 1)));
        for (int q = 0; q < RP; q++)
            ks->dw[i * RP + q] = _mm512_insertf32x8(_mm512_set1_ps(p->dw[i * R + 2 * q]), _mm256_set1_ps(p->dw[i * R + 2 * q + 1]), 1);
        if (!has_min) continue;
        for (int q = 0; q < 2; q++) {
            _Alignas(64) float dm[16];
            _Alignas(64) int16_t mn[32];
            for (int t = 0; t < 4; t++) {
                for (int e = 0; e < 4; e++) dm[4 * t + e] = p->dmin[i * R + 4 * q + t];
                memcpy(mn + 8 * t, p->aux + (i * R + 4 * q + t) * 16, 16);
            }
            ks->dmin[i * 2 + q] = _mm512_load_ps(dm);
            ks->mins[i * 2 + q] = _mm512_load_si512(mn);
        }
    }
}

/* [v | v] */
static inline __m512i dup256(const void *p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p)); }

/* The AVX2 family's horizontal sums (avx2_hsum_f32, and the mins' 4 lanes). */
static inline float hsum8(const float *v) {
    const float a0 = v[4] + v[0], a1 = v[5] + v[1], a2 = v[6] + v[2], a3 = v[7] + v[3];
    return (a0 + a2) + (a1 + a3);
}
static inline float hsum4(const float *v) { return (v[0] + v[2]) + (v[1] + v[3]); }


/* The panel's rows against activation rows [c0, c0 + nc). */
INLINE void pass(const int nc, const int has_min, const panel *p, const kscale *ks, const npl_gemm_x *xp, int64_t c0,
                 float *y, int64_t ldy, int nrow) {
    const int64_t nsb = xp->k / QK_K, kp = xp->kp;
    const int8_t *xq[NCK];
    const float *xd[NCK];
    const int16_t *xb[NCK];
    for (int c = 0; c < nc; c++) {
        xq[c] = xp->qs + (c0 + c) * kp;
        xd[c] = xp->d + (c0 + c) * (kp / 16);
        xb[c] = (const int16_t *)(xp->sum + (c0 + c) * xp->ng);
    }
    __m512 acc[NCK][RP], accm[NCK][2];
    for (int c = 0; c < nc; c++) {
        for (int q = 0; q < RP; q++) acc[c][q] = _mm512_setzero_ps();
        accm[c][0] = accm[c][1] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nsb; i++) {
        __m512i sumi[NCK][RP];
        float yd[NCK];
        for (int c = 0; c < nc; c++) {
            yd[c] = xd[c][16 * i];
            const __m256i bs = _mm256_loadu_si256((const __m256i *)(xb[c] + 16 * i));
            if (has_min) { /* q4_K: the mins against the 32-element sums of x */
                const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                const __m512i b4 = _mm512_broadcast_i32x4(bs2);
                const __m512 nyd = _mm512_set1_ps(-yd[c]);
                for (int q = 0; q < 2; q++) {
                    const __m512i pm = _mm512_madd_epi16(ks->mins[i * 2 + q], b4);
                    accm[c][q] = _mm512_fmadd_ps(_mm512_mul_ps(nyd, ks->dmin[i * 2 + q]), _mm512_cvtepi32_ps(pm), accm[c][q]);
                }
                for (int q = 0; q < RP; q++) sumi[c][q] = _mm512_setzero_si512();
            } else { /* q6_K: w = u - 32, so minus 32 x scale x group sum */
                const __m512i b2 = _mm512_broadcast_i64x4(bs);
                for (int q = 0; q < RP; q++) {
                    const __m512i g = _mm512_load_si512(p->aux + (i * R + 2 * q) * 16);
                    sumi[c][q] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_madd_epi16(g, b2), 5));
                }
            }
        }
        const uint8_t *ub = u_at(p, 0, 8 * i);
        const __m512i *sb = ks->sc2 + i * 4 * RP;
        _Pragma("GCC unroll 1") /* unrolled, the sums spill */
        for (int b = 0; b < 8; b += 2, ub += 2 * R * 32, sb += RP) {
            __m512i xa[NCK], xb[NCK];
            for (int c = 0; c < nc; c++) {
                xa[c] = dup256(xq[c] + QK_K * i + 32 * b);
                xb[c] = dup256(xq[c] + QK_K * i + 32 * b + 32);
            }
            for (int q = 0; q < RP; q++) {
                const __m512i wa = _mm512_load_si512(ub + 64 * q), wb = _mm512_load_si512(ub + R * 32 + 64 * q);
                const __m512i s = _mm512_load_si512(sb + q);
                for (int c = 0; c < nc; c++) sum_pair(&sumi[c][q], wa, xa[c], wb, xb[c], s);
            }
        }
        for (int c = 0; c < nc; c++) {
            const __m512 ydv = _mm512_set1_ps(yd[c]);
            for (int q = 0; q < RP; q++)
                acc[c][q] = _mm512_fmadd_ps(_mm512_mul_ps(ydv, ks->dw[i * RP + q]), _mm512_cvtepi32_ps(sumi[c][q]), acc[c][q]);
        }
    }
    for (int c = 0; c < nc; c++) {
        _Alignas(64) float a[R * 8], m[R * 4];
        for (int q = 0; q < RP; q++) _mm512_store_ps(a + 16 * q, acc[c][q]);
        _mm512_store_ps(m, accm[c][0]);
        _mm512_store_ps(m + 16, accm[c][1]);
        float *yc = y + (c0 + c) * ldy;
        for (int r = 0; r < nrow; r++) yc[r] = has_min ? hsum8(a + 8 * r) + hsum4(m + 4 * r) : hsum8(a + 8 * r);
    }
}

INLINE void all_passes(const int has_min, const panel *p, const kscale *ks, const npl_gemm_x *xp, float *y, int64_t ldy,
                       int nrow) {
    /* q4_K's mins take 2 more accumulators a row: 4 rows a pass spill (AMD
     * EPYC Zen 4, gemm_bench q4_K 7.5 ms at 4, 6.95 at 2; q6_K 6.9 at 4, 9.2 at 2) */
    int64_t c0 = 0;
    if (has_min)
        for (; c0 + 2 <= xp->m; c0 += 2) pass(2, has_min, p, ks, xp, c0, y, ldy, nrow);
    else
        for (; c0 + NCK <= xp->m; c0 += NCK) pass(NCK, has_min, p, ks, xp, c0, y, ldy, nrow);
    switch (xp->m - c0) { /* a constant count each, so the sums stay in registers */
    case 3: pass(3, has_min, p, ks, xp, c0, y, ldy, nrow); break;
    case 2: pass(2, has_min, p, ks, xp, c0, y, ldy, nrow); break;
    case 1: pass(1, has_min, p, ks, xp, c0, y, ldy, nrow); break;
    default: break;
    }
}

typedef void (*row_dec_fn)(const void *row, int64_t k, const panel *p, int j);
typedef void (*panel_dec_fn)(const uint8_t *pp, int64_t nsb, const panel *p);

/* Weight rows [r0, r1): from the file's rows (row_dec) or from the packed
 * copy (panel_dec, bsb bytes per super-block of a panel). */
INLINE void rows_k(const int has_min, row_dec_fn row_dec, panel_dec_fn panel_dec, size_t bsb, const void *w,
                   size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    const int64_t k = xp->k, kp = xp->kp, nsb = kp / QK_K;
    uint8_t raw[R * kp + 64];
    float dw[nsb * R], dmin[nsb * R];
    int16_t scr[R * kp / 2 + 32], auxr[R * nsb * 16 + 32]; /* + 32: alignment */
    const panel p = {kp, (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), dw, dmin,
                     (int16_t *)(((uintptr_t)scr + 63) & ~(uintptr_t)63), (int16_t *)(((uintptr_t)auxr + 63) & ~(uintptr_t)63),
                     NULL};
    __m512 kdw[nsb * RP], kdm[has_min ? nsb * 2 : 1];
    __m512i kmn[has_min ? nsb * 2 : 1], ksc[nsb * 4 * RP];
    const kscale ks = {kdw, kdm, kmn, ksc};
    for (int64_t rb = r0; rb < r1; rb += R) {
        const int nrow = r1 - rb < R ? (int)(r1 - rb) : R;
        if (panel_dec) {
            panel_dec((const uint8_t *)w + (size_t)(rb / R) * (size_t)(k / QK_K) * bsb, k / QK_K, &p);
        } else {
            for (int j = 0; j < nrow; j++) row_dec((const uint8_t *)w + (rb + j) * (int64_t)w_row, k, &p, j);
            for (int j = nrow; j < R; j++) zero_row_k(&p, j);
        }
        scales_of(&p, nsb, has_min, &ks);
        all_passes(has_min, &p, &ks, xp, y + rb, ldy, nrow);
    }
}

static void pack_q8_K_rows(const npl_gemm_x *xp, int64_t r, const void *row) {
    fill_q8_K(xp->qs + r * xp->kp, xp->d + r * (xp->kp / 16), (int16_t *)(xp->sum + r * xp->ng), row, xp->k, xp->kp);
}

static void rows_q4_K(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_k(1, decode_q4_K, NULL, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q6_K(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_k(0, decode_q6_K, NULL, 0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q4_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                             int64_t ldy) {
    rows_k(1, NULL, decode_packed_q4_K, NPL_WPACK_Q4_K_BLOCK, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q6_K_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                             int64_t ldy) {
    rows_k(0, NULL, decode_packed_q6_K, NPL_WPACK_Q6_K_BLOCK, w, w_row, r0, r1, xp, y, ldy);
}

static const npl_gemm_kernels k_q4_K = {pack_q8_K_rows, rows_q4_K}, k_q6_K = {pack_q8_K_rows, rows_q6_K},
                              k_q4_K_packed = {pack_q8_K_rows, rows_q4_K_packed},
                              k_q6_K_packed = {pack_q8_K_rows, rows_q6_K_packed};

const npl_gemm_kernels *npl_gemm_get_avx512_k(npl_type t, int packed) {
    if (t == NPL_TYPE_Q4_K) return packed ? &k_q4_K_packed : &k_q4_K;
    if (t == NPL_TYPE_Q6_K) return packed ? &k_q6_K_packed : &k_q6_K;
    return NULL;
}

#else
const npl_gemm_kernels *npl_gemm_get_avx512_k(npl_type t, int packed) {
    (void)t, (void)packed;
    return NULL;
}
#endif
