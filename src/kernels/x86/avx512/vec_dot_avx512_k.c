/* AVX-512 dot products of q4_K, q5_K and q6_K with q8_K. Each register
 * holds 64 weights of two sub-blocks; maddubs makes int16 pair sums and
 * VNNI's dpwssd multiplies them by the sub-block scales while accumulating.
 * Mins and q6_K's -32 offset are settled per super-block from q8_K bsums. */
#include <immintrin.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/avx512_util.h"

/* vpshufb controls over [scale 0-7 | min 0-7] bytes broadcast to every
 * 128-bit lane: int16 scale a in the low 256 bits, scale b in the high 256
 * (0x80 zeroes the high byte), for (a, b) = (0,2), (1,3), (4,6), (5,7). */
#define Z2(a) (a), 0x80
#define Z16(a) Z2(a), Z2(a), Z2(a), Z2(a), Z2(a), Z2(a), Z2(a), Z2(a)
static const uint8_t scale_pair_ctl[4][64] __attribute__((aligned(64))) = {
    {Z16(0), Z16(0), Z16(2), Z16(2)}, {Z16(1), Z16(1), Z16(3), Z16(3)},
    {Z16(4), Z16(4), Z16(6), Z16(6)}, {Z16(5), Z16(5), Z16(7), Z16(7)}};
/* each min twice as int16, mins 0-3 in the low lane and 4-7 in the high,
 * to pair with the 16 bsums */
static const uint8_t min_dup_ctl[32] __attribute__((aligned(32))) = {
    Z2(8), Z2(8), Z2(9), Z2(9), Z2(10), Z2(10), Z2(11), Z2(11),
    Z2(12), Z2(12), Z2(13), Z2(13), Z2(14), Z2(14), Z2(15), Z2(15)};
#undef Z16
#undef Z2

/* vpermw indices giving [s[a] x 8 | s[a+1] x 8 | s[a+2] x 8 | s[a+3] x 8] */
#define W8(a) a, a, a, a, a, a, a, a
static const uint16_t perm_quad8[4][32] __attribute__((aligned(64))) = {
    {W8(0), W8(1), W8(2), W8(3)}, {W8(4), W8(5), W8(6), W8(7)},
    {W8(8), W8(9), W8(10), W8(11)}, {W8(12), W8(13), W8(14), W8(15)}};
#undef W8

static inline __m512i pshufb_ctl(__m512i v, const uint8_t *ctl) {
    return _mm512_shuffle_epi8(v, _mm512_load_si512(ctl));
}

static inline __m512i perm16(const uint16_t *idx, __m512i v) {
    return _mm512_permutexvar_epi16(_mm512_load_si512(idx), v);
}

/* sum over groups of 2 of u8*i8, times int16 scale, accumulated into int32 */
static inline __m512i scaled_dot(__m512i acc, __m512i q, __m512i y, __m512i scale) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, y), scale);
}

/* q4_K (five = 0) and q5_K (five = 1) */
static inline __attribute__((always_inline)) void dot_k4(int n, float *s, const void *vx, const void *vy, int five) {
    const block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i sixteen = _mm512_set1_epi8(16);
    /* fifth-bit selectors per pair of 64-groups: (lo, hi) for groups 0-1, 2-3 */
    const __m512i hsel[2][2] = {
        {_mm512_inserti64x4(_mm512_set1_epi8(0x01), _mm256_set1_epi8(0x04), 1),
         _mm512_inserti64x4(_mm512_set1_epi8(0x02), _mm256_set1_epi8(0x08), 1)},
        {_mm512_inserti64x4(_mm512_set1_epi8(0x10), _mm256_set1_epi8(0x40), 1),
         _mm512_inserti64x4(_mm512_set1_epi8(0x20), _mm256_set1_epi8((char)0x80), 1)}};
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    const size_t bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)i * bsz;
        const block_q4_K *hdr = (const block_q4_K *)blk; /* d, dmin, scales lead both */
        prefetch_weights(blk, bsz);
        const uint8_t *qs = five ? ((const block_q5_K *)blk)->qs : hdr->qs;
        const float d = y[i].d * h2f(hdr->d), dmin = -y[i].d * h2f(hdr->dmin);
        /* [scales | mins] in every 128-bit lane */
        const __m512i u = _mm512_broadcast_i32x4(unpack_k4_scales(hdr->scales));
        const __m256i mins = _mm256_shuffle_epi8(_mm512_castsi512_si256(u), _mm256_load_si256((const __m256i *)min_dup_ctl));
        const __m256i pm = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        accm = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(pm), accm);

        const __m512i hz = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh))
                                : _mm512_setzero_si512();
        const int8_t *q8 = y[i].qs;
        /* two accumulators halve the dpwssd latency chain */
        __m512i sumi = _mm512_setzero_si512(), sumh = _mm512_setzero_si512();
        _Pragma("GCC unroll 2") for (int jj = 0; jj < 2; jj++, qs += 64, q8 += 128) {
            /* groups a = 2jj, b = 2jj+1: low nibbles are elements 0-31 of
             * each group, high nibbles 32-63 */
            const __m512i bits = load512(qs);
            __m512i lo = _mm512_and_si512(bits, m4);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            if (five) {
                lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(hz, hsel[jj][0]), lo, sixteen);
                hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hz, hsel[jj][1]), hi, sixteen);
            }
            sumi = scaled_dot(sumi, lo, load2x256(q8, q8 + 64), pshufb_ctl(u, scale_pair_ctl[2 * jj]));
            sumh = scaled_dot(sumh, hi, load2x256(q8 + 32, q8 + 96), pshufb_ctl(u, scale_pair_ctl[2 * jj + 1]));
        }
        sumi = _mm512_add_epi32(sumi, sumh);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc) + avx2_hsum_f32(accm);
}

static void dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 0); }
static void dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) { dot_k4(n, s, vx, vy, 1); }

static void dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n / QK_K; i++) {
        prefetch_weights(x + i, sizeof *x);
        const float d = y[i].d * h2f(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        /* quants enter as q + 32 in [0, 63]; 32 * sum(scale * bsum) comes off */
        const __m256i corr = _mm256_slli_epi32(
            _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums)), 5);
        __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(corr));
        __m512i sumh = _mm512_setzero_si512();
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++, ql += 64, qh += 32, q8 += 128) {
            const __m512i bits = load512(ql); /* [ql 0-31 | ql 32-63] */
            const __m256i h8 = _mm256_loadu_si256((const __m256i *)qh);
            /* [qh | qh >> 2]: 2-bit fields for elements 0-31 | 32-63 at bits
             * 0-1, for 64-95 | 96-127 at bits 4-5 */
            const __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(h8), _mm256_srli_epi16(h8, 2), 1);
            const __m512i q_lo = _mm512_or_si512(_mm512_and_si512(bits, m4),
                                                 _mm512_and_si512(_mm512_slli_epi16(hz, 4), m30));
            const __m512i q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bits, 4), m4),
                                                 _mm512_and_si512(hz, m30));
            sumi = scaled_dot(sumi, q_lo, load512(q8), perm16(perm_quad8[2 * h], sc));
            sumh = scaled_dot(sumh, q_hi, load512(q8 + 64), perm16(perm_quad8[2 * h + 1], sc));
        }
        sumi = _mm512_add_epi32(sumi, sumh);
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/* ---- one weight row against four activation rows ---- */

#define ROWK(y, j, by) ((const block_q8_K *)((const uint8_t *)(y) + (size_t)(j) * (by)))

static inline __attribute__((always_inline)) void dot4_k4(int n, float *s, size_t bs, const void *vx, const void *vy,
                                                          size_t by, int five) {
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i sixteen = _mm512_set1_epi8(16);
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const size_t bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *blk = (const uint8_t *)vx + (size_t)i * bsz;
        const block_q4_K *hdr = (const block_q4_K *)blk;
        prefetch_weights(blk, bsz);
        const uint8_t *qs = five ? ((const block_q5_K *)blk)->qs : hdr->qs;
        const float xd = h2f(hdr->d), xdmin = h2f(hdr->dmin);
        const __m512i u = _mm512_broadcast_i32x4(unpack_k4_scales(hdr->scales));
        const __m256i mins = _mm256_shuffle_epi8(_mm512_castsi512_si256(u), _mm256_load_si256((const __m256i *)min_dup_ctl));
        /* the 256 weights as four registers and their four scale vectors */
        __m512i w[4], sc[4];
        for (int jj = 0; jj < 2; jj++) {
            const __m512i bits = load512(qs + 64 * jj);
            w[2 * jj] = _mm512_and_si512(bits, m4);
            w[2 * jj + 1] = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            sc[2 * jj] = pshufb_ctl(u, scale_pair_ctl[2 * jj]);
            sc[2 * jj + 1] = pshufb_ctl(u, scale_pair_ctl[2 * jj + 1]);
        }
        if (five) {
            const __m512i hz = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh));
            static const char sel[4][2] = {{0x01, 0x04}, {0x02, 0x08}, {0x10, 0x40}, {0x20, (char)0x80}};
            for (int k = 0; k < 4; k++) {
                const __m512i m = _mm512_inserti64x4(_mm512_set1_epi8(sel[k][0]), _mm256_set1_epi8(sel[k][1]), 1);
                w[k] = _mm512_mask_add_epi8(w[k], _mm512_test_epi8_mask(hz, m), w[k], sixteen);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            const block_q8_K *y = ROWK(vy, j, by) + i;
            const int8_t *q8 = y->qs;
            __m512i s0 = _mm512_dpwssd_epi32(zero, _mm512_maddubs_epi16(w[0], load2x256(q8, q8 + 64)), sc[0]);
            __m512i s1 = _mm512_dpwssd_epi32(zero, _mm512_maddubs_epi16(w[1], load2x256(q8 + 32, q8 + 96)), sc[1]);
            s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(w[2], load2x256(q8 + 128, q8 + 192)), sc[2]);
            s1 = _mm512_dpwssd_epi32(s1, _mm512_maddubs_epi16(w[3], load2x256(q8 + 160, q8 + 224)), sc[3]);
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * xd), _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), acc[j]);
            /* mins against bsums, in the low 8 lanes */
            const __m256i pm = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y->bsums));
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(-y->d * xdmin), _mm512_zextps256_ps512(_mm256_cvtepi32_ps(pm)), acc[j]);
        }
    }
    for (int j = 0; j < 4; j++) s[j * bs] = _mm512_reduce_add_ps(acc[j]);
}

static void dot4_q4_K(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    dot4_k4(n, s, bs, vx, vy, by, 0);
}
static void dot4_q5_K(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    dot4_k4(n, s, bs, vx, vy, by, 1);
}

static void dot4_q6_K(int n, float *s, size_t bs, const void *vx, const void *vy, size_t by) {
    const block_q6_K *x = vx;
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int i = 0; i < n / QK_K; i++) {
        prefetch_weights(x + i, sizeof *x);
        const float xd = h2f(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i scz = _mm512_castsi256_si512(sc16);
        __m512i w[4], sc[4];
        for (int h = 0; h < 2; h++) {
            const __m512i bits = load512(x[i].ql + 64 * h);
            const __m256i h8 = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h));
            const __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(h8), _mm256_srli_epi16(h8, 2), 1);
            w[2 * h] = _mm512_or_si512(_mm512_and_si512(bits, m4), _mm512_and_si512(_mm512_slli_epi16(hz, 4), m30));
            w[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(bits, 4), m4), _mm512_and_si512(hz, m30));
            sc[2 * h] = perm16(perm_quad8[2 * h], scz);
            sc[2 * h + 1] = perm16(perm_quad8[2 * h + 1], scz);
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            const block_q8_K *y = ROWK(vy, j, by) + i;
            const int8_t *q8 = y->qs;
            /* quants enter as q + 32; 32 * sum(scale * bsum) comes off */
            const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums)), 5);
            __m512i s0 = _mm512_sub_epi32(zero, _mm512_zextsi256_si512(corr));
            __m512i s1 = _mm512_dpwssd_epi32(zero, _mm512_maddubs_epi16(w[1], load512(q8 + 64)), sc[1]);
            s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(w[0], load512(q8)), sc[0]);
            s0 = _mm512_dpwssd_epi32(s0, _mm512_maddubs_epi16(w[2], load512(q8 + 128)), sc[2]);
            s1 = _mm512_dpwssd_epi32(s1, _mm512_maddubs_epi16(w[3], load512(q8 + 192)), sc[3]);
            acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(y->d * xd), _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), acc[j]);
        }
    }
    for (int j = 0; j < 4; j++) s[j * bs] = _mm512_reduce_add_ps(acc[j]);
}

void npl_dot4_fill_avx512_k(npl_vec_dot4_fn *d4) {
    d4[NPL_TYPE_Q4_K] = dot4_q4_K;
    d4[NPL_TYPE_Q5_K] = dot4_q5_K;
    d4[NPL_TYPE_Q6_K] = dot4_q6_K;
}

void npl_kernels_fill_avx512_k(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_Q4_K] = dot_q4_K_q8_K;
    k->vec_dot[NPL_TYPE_Q5_K] = dot_q5_K_q8_K;
    k->vec_dot[NPL_TYPE_Q6_K] = dot_q6_K_q8_K;
}
