/* AVX2 GEMM for q4_1 weights against q8_1 activations (prefill), for x86
 * without a q4_1 GEMM of its own (the AVX-512 and AMX families take it too:
 * their q4_1 vec_dot is this family's dot_q4_1_q8_1).
 *
 * Per (weight row, activation row) it computes what dot_q4_1_q8_1
 * (vec_dot_avx2.c) computes, bit for bit, so a row gets decode's bits inside
 * a prefill batch: an 8-lane float accumulator of the blocks' 4-element
 * integer sums (maddubs + madd of the nibbles u against the quants), each
 * block's fma with dw * dx; a separate sum of the blocks' m * s (the min
 * against q8_1's d * sum(qs)); then hsum(acc) + that sum.
 *
 * What it saves against vec_dot per (row, activation row, block): the nibble
 * unpacking and the f16 conversions of the weight scales (done once per row,
 * into a panel on the stack, as gemm_avx2.c does for the other types), the
 * scalar scale products (8 rows' dw * dx are one vector product, and the 8
 * rows' m * s one vector product and add), and the loads of a block are
 * shared by a tile of TR weight rows x TC activation rows. */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    R = 8,  /* weight rows per panel = lanes of the scale vectors */
    TR = 4, /* tile: weight rows ... */
    TC = 2, /* ... x activation rows: 8 accumulators, the rest of the 16 registers for
               the loads (4 x 3 would spill) */
};

/* Block-major: block b of the 8 rows side by side. */
typedef struct {
    uint8_t *u; /* [nb][R][32] nibbles in element order */
    float *dw;  /* [nb][R] d */
    float *mw;  /* [nb][R] m */
} panel;

static void decode_row(const block_q4_1 *x, int64_t nb, const panel *p, int j) {
    for (int64_t b = 0; b < nb; b++) {
        _mm256_store_si256((__m256i *)(p->u + (b * R + j) * 32), avx2_nibbles32(x[b].qs));
        p->dw[b * R + j] = h2f(x[b].d);
        p->mw[b * R + j] = h2f(x[b].m);
    }
}

/* rows past the matrix's end: zero weights, results not stored */
static void zero_row(int64_t nb, const panel *p, int j) {
    for (int64_t b = 0; b < nb; b++) {
        memset(p->u + (b * R + j) * 32, 0, 32);
        p->dw[b * R + j] = p->mw[b * R + j] = 0;
    }
}

/* Activation row r: quants in element order, d of block b at d[b], s at sum[b]. */
static void pack_q8_1(const npl_gemm_x *xp, int64_t r, const void *row) {
    const block_q8_1 *y = row;
    int8_t *qs = xp->qs + r * xp->kp;
    float *d = xp->d + r * (xp->kp / 16), *s = xp->sum + r * xp->ng;
    for (int64_t b = 0; b < xp->k / QK8_1; b++) {
        memcpy(qs + 32 * b, y[b].qs, 32);
        d[b] = h2f(y[b].d);
        s[b] = h2f(y[b].s);
    }
}

/* The 8 panel rows' sum of m * s over the blocks of activation row s, lane
 * j = row j: vec_dot's scalar summs, lane by lane, in its block order (m * s
 * of two f16 values is exact in f32, so a fused or unfused step rounds alike). */
INLINE __m256 min_sums(const panel *p, int64_t nb, const float *s) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_load_ps(p->mw + b * R), _mm256_set1_ps(s[b])));
    return acc;
}

/* Panel rows [q0, q0 + TR) x activation rows c0 .. c0 + NC - 1: out[c][r]. */
INLINE void tile(const panel *p, int q0, int64_t nb, const npl_gemm_x *xp, int64_t c0, const int NC,
                 float out[TC][R]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TR][TC];
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < NC; c++) acc[r][c] = _mm256_setzero_ps();
    const int8_t *xq[TC];
    const float *xd[TC];
    for (int c = 0; c < NC; c++) xq[c] = xp->qs + (c0 + c) * xp->kp, xd[c] = xp->d + (c0 + c) * (xp->kp / 16);
    const uint8_t *ub = p->u + q0 * 32;
    for (int64_t b = 0; b < nb; b++, ub += R * 32) {
        __m256i xv[TC];
        _Alignas(32) float sc[TC][R]; /* dw * dx of the 8 rows, broadcast from memory below */
        for (int c = 0; c < NC; c++) {
            xv[c] = _mm256_load_si256((const __m256i *)(xq[c] + 32 * b));
            _mm256_store_ps(sc[c], _mm256_mul_ps(_mm256_load_ps(p->dw + b * R), _mm256_set1_ps(xd[c][b])));
        }
        for (int r = 0; r < TR; r++) {
            const __m256i w = _mm256_load_si256((const __m256i *)(ub + 32 * r));
            for (int c = 0; c < NC; c++) {
                const __m256i li = _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv[c]), ones);
                acc[r][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&sc[c][q0 + r]), _mm256_cvtepi32_ps(li), acc[r][c]);
            }
        }
    }
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < NC; c++) out[c][q0 + r] = avx2_hsum_f32(acc[r][c]);
}

/* Weight rows [r0, r1) against every packed activation row. */
static void rows_q4_1(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                      int64_t ldy) {
    const int64_t nb = xp->k / QK4_1;
    uint8_t raw[R * nb * (32 + 2 * sizeof(float)) + 32];
    uint8_t *u = (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31);
    const panel p = {u, (float *)(u + R * nb * 32), (float *)(u + R * nb * 32) + R * nb};
    for (int64_t rb = r0; rb < r1; rb += R) {
        const int nrow = r1 - rb < R ? (int)(r1 - rb) : R;
        for (int j = 0; j < nrow; j++) decode_row((const block_q4_1 *)((const uint8_t *)w + (rb + j) * (int64_t)w_row), nb, &p, j);
        for (int j = nrow; j < R; j++) zero_row(nb, &p, j);
        for (int64_t c0 = 0; c0 < xp->m; c0 += TC) {
            const int nc = xp->m - c0 < TC ? (int)(xp->m - c0) : TC;
            _Alignas(32) float out[TC][R] = {{0}};
            for (int q0 = 0; q0 < nrow; q0 += TR) {
                if (nc == TC) tile(&p, q0, nb, xp, c0, TC, out);
                else tile(&p, q0, nb, xp, c0, 1, out);
            }
            for (int c = 0; c < nc; c++) {
                /* vec_dot's hsum(acc) + summs */
                const __m256 v = _mm256_add_ps(_mm256_load_ps(out[c]), min_sums(&p, nb, xp->sum + (c0 + c) * xp->ng));
                float *yc = y + (c0 + c) * ldy + rb;
                if (nrow == R) _mm256_storeu_ps(yc, v);
                else {
                    _Alignas(32) float t[R];
                    _mm256_store_ps(t, v);
                    memcpy(yc, t, (size_t)nrow * sizeof(float));
                }
            }
        }
    }
}

static const npl_gemm_kernels gemm_q4_1 = {pack_q8_1, rows_q4_1};

const npl_gemm_kernels *npl_gemm_get_avx2_q4_1(void) { return &gemm_q4_1; }

#else
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1(void) { return NULL; }
#endif
