/* AVX2 GEMV for decode (kernels/gemv.h's interface, this family's own
 * prepared row): 1-15 activation rows against 4 weight rows at a time.
 *
 * Per (weight row, activation row) the float operations are the AVX2
 * vec_dot kernels' (vec_dot_avx2.c, vec_dot_avx2_k.c), in their order, so
 * the GEMV gives vec_dot's bits and hence the AVX2 GEMM's (gemm_avx2.c):
 * decode, small batches and prefill give a row the same result. For q4_0 /
 * q5_0 / q8_0 that is plain C's step per 32-block on its exact int32 total,
 * acc + (float)total * dw * dx: the 4 rows' lanes of two blocks reduce in
 * an hadd tree to 8 totals, and one float step serves 4 rows (rows32).
 * Only the integer side differs where that is cheaper, and integer sums are
 * exact: q4_0 / q5_0 multiply unsigned quants u = w + offset and take offset
 * times the activation block's quant sum (prepared once per row,
 * npl_gemv_x.cz) off the totals, instead of vec_dot's two sign operations.
 *
 * Why 4 rows: the activation block and its scale are loaded once for four
 * weight rows. Which 4: a range of rows splits into 4 contiguous parts and a
 * group takes the next row of each (rows_with), so each of the 4 streams
 * reads memory front to back and the hardware prefetcher follows it; 4
 * adjacent rows were 4 interleaved streams inside one span, which it did
 * not follow (one thread, 256 MB of q8_0 rows in chunks of 1024, CPU time,
 * AMD EPYC Zen 3, loaded machine: 6.8 -> 15 GB/s; npullm tg128 -t 1,
 * tokens per CPU second: 27 -> 47). On top, the first activation row
 * prefetches each stream's row PF_ROWS / 4 rows ahead (T0/T1 and 4-32 rows
 * measured the same within noise; no prefetch a little slower).
 *
 * The scales of a 32-block pair for the 4 rows go through one f16
 * conversion, lanes in the totals' order.
 *
 * Prepared row (prep): qs points at the vec_dot_type row itself (q8_0 or
 * q8_K blocks); d holds each q8_0 block scale as f32, 4 times (d[4b + j],
 * one 8-float load gives blocks b and b + 1 for 4 rows); cz offset * the
 * block's quant sum, 4 times as d (q4_0, q5_0). For q8_K rows d and
 * cz are unused. PF_ROWS and PF_HINT are macros for tuning builds. */
#include "kernels/gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

#define INLINE static inline __attribute__((always_inline))

#ifndef PF_ROWS
#define PF_ROWS 8
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T0
#endif
enum { NR = 4 }; /* weight rows (streams) at once */

static inline void *align64(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* ---- prepared activation rows ---- */

/* d: each q8_0 block scale as f32, four times over (d[4 * b + j] for the 4
 * rows of a group: one vector multiply takes two blocks of 4 rows) */
static void prep_q8_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    const block_q8_0 *y = xq;
    float *d = align64(mem);
    for (int64_t i = 0; i < k / QK8_0; i++) _mm_store_ps(d + 4 * i, _mm_set1_ps(h2f(y[i].d)));
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = d;
    gx->cz = NULL;
    gx->xs = NULL;
}

/* q8_0 scales, and offset x each block's quant sum, four times over as d */
INLINE void prep_offset(npl_gemv_x *gx, void *mem, const void *xq, int64_t k, int offset) {
    prep_q8_0(gx, mem, xq, k);
    const block_q8_0 *y = xq;
    int32_t *cz = align64((float *)gx->d + 4 * (k / QK8_0));
    const __m256i off = _mm256_set1_epi8((char)offset);
    for (int64_t i = 0; i < k / QK8_0; i++)
        _mm_store_si128((__m128i *)(cz + 4 * i),
                        _mm_set1_epi32(avx2_hsum_i32(avx2_dot_u8i8_i32(off, _mm256_loadu_si256((const __m256i *)y[i].qs)))));
    gx->cz = cz;
}
static void prep_q4_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_offset(gx, mem, xq, k, 8); }
static void prep_q5_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_offset(gx, mem, xq, k, 16); }

static void prep_q8_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    (void)mem;
    gx->k = gx->kp = k;
    gx->qs = (const int8_t *)xq;
    gx->d = NULL;
    gx->cz = NULL;
    gx->xs = NULL;
}

#include "kernels/x86/avx2/gemv_b32.h"

/* ---- q4_K and q6_K against q8_K: dot_k4's and dot_q6_K_q8_K's arithmetic ---- */

INLINE __m256i ctl(const uint8_t c[32]) { return _mm256_load_si256((const __m256i *)c); }
INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

INLINE void rows_q4_K_nr(const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    const block_q8_K *y = (const block_q8_K *)g->qs;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    __m256 acc[NR];
    __m128 accm[NR];
    for (int j = 0; j < nr; j++) acc[j] = _mm256_setzero_ps(), accm[j] = _mm_setzero_ps();
    for (int64_t i = 0; i < g->k / QK_K; i++) {
        const __m256i bs = load256(y[i].bsums);
        const __m128i bs2 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        __m256i sc[NR], sumi[NR];
        for (int j = 0; j < nr; j++) {
            const block_q4_K *b = (const block_q4_K *)x[j] + i;
            if (pf) {
                _mm_prefetch((const char *)b + pf, PF_HINT);
                _mm_prefetch((const char *)b + pf + 64, PF_HINT);
                _mm_prefetch((const char *)b + pf + 128, PF_HINT);
            }
            const float dmin = -y[i].d * h2f(b->dmin);
            const __m256i ms = _mm256_cvtepu8_epi16(unpack_k4_scales(b->scales));
            const __m128i pm = _mm_madd_epi16(_mm256_extracti128_si256(ms, 1), bs2);
            accm[j] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(pm), accm[j]);
            sc[j] = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(ms));
            sumi[j] = _mm256_setzero_si256();
        }
        for (int q = 0; q < 4; q++) {
            const __m256i y0 = load256(y[i].qs + 64 * q), y1 = load256(y[i].qs + 64 * q + 32);
            for (int j = 0; j < nr; j++) {
                const __m256i bits = load256(((const block_q4_K *)x[j] + i)->qs + 32 * q);
                const __m256i ql = _mm256_and_si256(bits, m4), qh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
                const __m256i pl = _mm256_madd_epi16(_mm256_shuffle_epi8(sc[j], ctl(bcast_same_ctl[2 * q])), _mm256_maddubs_epi16(ql, y0));
                const __m256i ph = _mm256_madd_epi16(_mm256_shuffle_epi8(sc[j], ctl(bcast_same_ctl[2 * q + 1])), _mm256_maddubs_epi16(qh, y1));
                sumi[j] = _mm256_add_epi32(sumi[j], _mm256_add_epi32(pl, ph));
            }
        }
        for (int j = 0; j < nr; j++) {
            const float d = y[i].d * h2f(((const block_q4_K *)x[j] + i)->d);
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
        }
    }
    for (int j = 0; j < nr; j++) {
        __m128 m = _mm_add_ps(accm[j], _mm_movehl_ps(accm[j], accm[j]));
        m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[j] = avx2_hsum_f32(acc[j]) + _mm_cvtss_f32(m);
    }
}

INLINE void rows_q6_K_nr(const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    const block_q8_K *y = (const block_q8_K *)g->qs;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    __m256 acc[NR];
    for (int j = 0; j < nr; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < g->k / QK_K; i++) {
        const __m256i bsum = load256(y[i].bsums);
        __m256i scales[NR], sumi[NR];
        for (int j = 0; j < nr; j++) {
            const block_q6_K *b = (const block_q6_K *)x[j] + i;
            if (pf)
                for (int o = 0; o < (int)sizeof *b; o += 64) _mm_prefetch((const char *)b + pf + o, PF_HINT);
            scales[j] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
            /* weights enter as q + 32 in [0, 63]; take 32 * sum(scale * q8) back out */
            sumi[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales[j], bsum), 5));
        }
        for (int h = 0; h < 2; h++) {
            const int8_t *q8 = y[i].qs + 128 * h;
            const __m256i y0 = load256(q8), y1 = load256(q8 + 32), y2 = load256(q8 + 64), y3 = load256(q8 + 96);
            for (int j = 0; j < nr; j++) {
                const block_q6_K *b = (const block_q6_K *)x[j] + i;
                const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
                const __m256i sch = _mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(scales[j], 1)
                                                                  : _mm256_castsi256_si128(scales[j]));
                const __m256i l0 = load256(ql), l1 = load256(ql + 32), hb = load256(qh);
                const __m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                                   _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x03)), 4));
                const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                                   _mm256_slli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8(0x0C)), 2));
                const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                                   _mm256_and_si256(hb, _mm256_set1_epi8(0x30)));
                const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                   _mm256_srli_epi16(_mm256_and_si256(hb, _mm256_set1_epi8((char)0xC0)), 2));
                __m256i s = sumi[j];
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(sch, ctl(bcast_pair_ctl[0])), _mm256_maddubs_epi16(q0, y0)));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(sch, ctl(bcast_pair_ctl[1])), _mm256_maddubs_epi16(q1, y1)));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(sch, ctl(bcast_pair_ctl[2])), _mm256_maddubs_epi16(q2, y2)));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(sch, ctl(bcast_pair_ctl[3])), _mm256_maddubs_epi16(q3, y3)));
                sumi[j] = s;
            }
        }
        for (int j = 0; j < nr; j++) {
            const float d = y[i].d * h2f(((const block_q6_K *)x[j] + i)->d);
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
        }
    }
    for (int j = 0; j < nr; j++) out[j] = avx2_hsum_f32(acc[j]);
}

/* ---- the row loop ---- */

enum { K_Q4_0, K_Q5_0, K_Q8_0, K_Q4_K, K_Q6_K };

INLINE void rows_nr(const int K, const int nr, const uint8_t *const *x, const npl_gemv_x *g, float *out, size_t pf) {
    switch (K) {
    case K_Q4_0: rows32(T_Q4_0, nr, x, g, out, pf); break;
    case K_Q5_0: rows32(T_Q5_0, nr, x, g, out, pf); break;
    case K_Q8_0: rows32(T_Q8_0, nr, x, g, out, pf); break;
    case K_Q4_K: rows_q4_K_nr(nr, x, g, out, pf); break;
    default: rows_q6_K_nr(nr, x, g, out, pf); break;
    }
}

#include "kernels/x86/avx2/gemv_rows.h"

NPL_GEMV_ROWS_FN(q4_0, K_Q4_0)
NPL_GEMV_ROWS_FN(q5_0, K_Q5_0)
NPL_GEMV_ROWS_FN(q8_0, K_Q8_0)
NPL_GEMV_ROWS_FN(q4_K, K_Q4_K)
NPL_GEMV_ROWS_FN(q6_K, K_Q6_K)

static const npl_gemv_kernels g_q4_0 = {prep_q4_0, rows_q4_0}, g_q5_0 = {prep_q5_0, rows_q5_0},
                              g_q8_0 = {prep_q8_0, rows_q8_0}, g_q4_K = {prep_q8_K, rows_q4_K},
                              g_q6_K = {prep_q8_K, rows_q6_K};

const npl_gemv_kernels *npl_gemv_get_avx2(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &g_q4_0;
    case NPL_TYPE_Q4_1: return npl_gemv_get_avx2_q4_1();
    case NPL_TYPE_Q5_0: return &g_q5_0;
    case NPL_TYPE_Q8_0: return &g_q8_0;
    case NPL_TYPE_Q4_K: return &g_q4_K;
    case NPL_TYPE_Q6_K: return &g_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemv_kernels *npl_gemv_get_avx2(npl_type t) {
    (void)t;
    return NULL;
}
#endif
