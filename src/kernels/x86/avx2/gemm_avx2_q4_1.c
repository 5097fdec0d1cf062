/* AVX2 GEMM for q4_1 weights against q8_1 activations (prefill). The
 * AVX-512 and AMX families' q4_1 vec_dot is this family's dot_q4_1_q8_1;
 * their GEMM (x86/avx512/gemm_avx512_q5_0.c) keeps these bits 16 rows wide.
 *
 * Per (weight row, activation row) it computes what dot_q4_1_q8_1
 * (vec_dot_avx2.c) and the plain C kernel compute, bit for bit, so a row
 * gets decode's bits inside a prefill batch: per 32-block the exact int32
 * total of the nibbles u against the quants, then acc + ((dw * dx) * total
 * + m * s), blocks in order (m * s: the min against q8_1's d * sum(qs)).
 *
 * As gemm_avx2.c does for q4_0 / q5_0 / q8_0, 8 weight rows are decoded once
 * into a panel on the stack, each block as 8 vectors with elements 4g..4g+3
 * of row j in int32 lane j, and an activation's 4 bytes are broadcast
 * against vector g: maddubs gives the 8 rows' pair sums, which add up in
 * int16 over the block (16 elements x 15 x 127 fit), one madd the totals;
 * the float steps are one per block for 8 rows. QX activation rows per pass
 * share each weight load. */
#include "kernels/gemm.h"
#include "kernels/wpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2/avx2_util.h"

#define INLINE static inline __attribute__((always_inline))

enum { R = 8 }; /* weight rows per panel = lanes */
#ifndef QX
#define QX 4 /* activation rows per pass */
#endif

/* Block-major: block b of the 8 rows as 8 interleaved vectors. */
typedef struct {
    uint8_t *u; /* [nb][8][32] nibbles: vector g, row j in lane j */
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

static void interleave(const panel *p, int64_t nb) {
    for (int64_t b = 0; b < nb; b++) {
        __m256i *v = (__m256i *)(p->u + b * R * 32), r[R];
        for (int j = 0; j < R; j++) r[j] = _mm256_load_si256(v + j);
        avx2_transpose8_epi32(r);
        for (int j = 0; j < R; j++) _mm256_store_si256(v + j, r[j]);
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

/* The 8 panel rows x activation rows c0 .. c0 + NX - 1 into y. */
INLINE void tile(const panel *p, int nrow, int64_t nb, const npl_gemm_x *xp, int64_t c0, const int NX, float *y,
                 int64_t ldy) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[QX];
    const int8_t *xq[QX];
    const float *xd[QX], *xs[QX];
    for (int c = 0; c < NX; c++) {
        acc[c] = _mm256_setzero_ps();
        xq[c] = xp->qs + (c0 + c) * xp->kp, xd[c] = xp->d + (c0 + c) * (xp->kp / 16), xs[c] = xp->sum + (c0 + c) * xp->ng;
    }
    const uint8_t *ub = p->u;
    for (int64_t b = 0; b < nb; b++, ub += R * 32) {
        __m256i s[QX];
        for (int g = 0; g < 8; g++) {
            const __m256i w = _mm256_load_si256((const __m256i *)(ub + 32 * g));
            for (int c = 0; c < NX; c++) {
                int32_t x4;
                memcpy(&x4, xq[c] + 32 * b + 4 * g, sizeof x4);
                const __m256i v = _mm256_maddubs_epi16(w, _mm256_set1_epi32(x4));
                s[c] = g ? _mm256_add_epi16(s[c], v) : v;
                __asm__("" : "+x"(s[c])); /* in order: gcc would make all the products first, and spill */
            }
        }
        const __m256 dw = _mm256_load_ps(p->dw + b * R), mw = _mm256_load_ps(p->mw + b * R);
        for (int c = 0; c < NX; c++) {
            const __m256 t = _mm256_cvtepi32_ps(_mm256_madd_epi16(s[c], ones));
            const __m256 pd = avx2_opaque_ps(_mm256_mul_ps(_mm256_mul_ps(dw, _mm256_broadcast_ss(xd[c] + b)), t));
            const __m256 pm = avx2_opaque_ps(_mm256_mul_ps(mw, _mm256_broadcast_ss(xs[c] + b)));
            acc[c] = _mm256_add_ps(acc[c], _mm256_add_ps(pd, pm));
        }
    }
    for (int c = 0; c < NX; c++) {
        float *yc = y + (c0 + c) * ldy;
        if (nrow == R) _mm256_storeu_ps(yc, acc[c]);
        else {
            _Alignas(32) float t[R];
            _mm256_store_ps(t, acc[c]);
            memcpy(yc, t, (size_t)nrow * sizeof(float));
        }
    }
}

/* The panel's rows against every activation row, QX at a time. */
static void tiles(const panel *p, int nrow, int64_t nb, const npl_gemm_x *xp, float *y, int64_t ldy) {
    int64_t c = 0;
    for (; c + QX <= xp->m; c += QX) tile(p, nrow, nb, xp, c, QX, y, ldy);
    switch (xp->m - c) { /* a constant count each, so the accumulators stay in registers */
    case 3: tile(p, nrow, nb, xp, c, 3 < QX ? 3 : QX, y, ldy); break;
    case 2: tile(p, nrow, nb, xp, c, 2 < QX ? 2 : QX, y, ldy); break;
    case 1: tile(p, nrow, nb, xp, c, 1, y, ldy); break;
    default: break;
    }
}

/* A packed panel (kernels/wpack.h's Q4_1 x 8) into the decoded one: its
 * nibble vectors are the panel's vectors g and g + 4 already, row j in
 * lane j, so no transpose; the scales as floats. */
static void decode_packed(const uint8_t *pp, int64_t nb, const panel *p) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++, pp += NPL_WPACK_Q4_1_BLOCK) {
        __m256i *v = (__m256i *)(p->u + b * R * 32);
        for (int h = 0; h < 4; h++) {
            const __m256i n = _mm256_loadu_si256((const __m256i *)(pp + 32 + 32 * h));
            _mm256_store_si256(v + h, _mm256_and_si256(n, m4));
            _mm256_store_si256(v + h + 4, _mm256_and_si256(_mm256_srli_epi16(n, 4), m4));
        }
        _mm256_store_ps(p->dw + b * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)pp)));
        _mm256_store_ps(p->mw + b * R, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(pp + 16))));
    }
}

/* Weight rows [r0, r1) against every packed activation row: from the
 * file's rows, or (PACKED) from a packed matrix, r0 and r1 multiples of 8
 * (r1 may be n) */
INLINE void rows_with(const int PACKED, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                      int64_t ldy) {
    const int64_t nb = xp->k / QK4_1;
    uint8_t raw[R * nb * (32 + 2 * sizeof(float)) + 32];
    uint8_t *u = (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31);
    const panel p = {u, (float *)(u + R * nb * 32), (float *)(u + R * nb * 32) + R * nb};
    for (int64_t rb = r0; rb < r1; rb += R) {
        const int nrow = r1 - rb < R ? (int)(r1 - rb) : R;
        if (PACKED) decode_packed((const uint8_t *)w + (size_t)rb * w_row, nb, &p);
        else {
            for (int j = 0; j < nrow; j++) decode_row((const block_q4_1 *)((const uint8_t *)w + (rb + j) * (int64_t)w_row), nb, &p, j);
            for (int j = nrow; j < R; j++) zero_row(nb, &p, j);
            interleave(&p, nb);
        }
        tiles(&p, nrow, nb, xp, y + rb, ldy);
    }
}
static void rows_q4_1(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y, int64_t ldy) {
    rows_with(0, w, w_row, r0, r1, xp, y, ldy);
}
static void rows_q4_1_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp, float *y,
                             int64_t ldy) {
    rows_with(1, w, w_row, r0, r1, xp, y, ldy);
}

static const npl_gemm_kernels gemm_q4_1 = {pack_q8_1, rows_q4_1}, gemm_q4_1_packed = {pack_q8_1, rows_q4_1_packed};

const npl_gemm_kernels *npl_gemm_get_avx2_q4_1(void) { return &gemm_q4_1; }
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1_packed(void) { return &gemm_q4_1_packed; }

#else
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1(void) { return NULL; }
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1_packed(void) { return NULL; }
#endif
