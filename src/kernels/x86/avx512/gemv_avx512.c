/* One-row matmul for AVX-512 VNNI with AMX, 16 weight rows as lanes (see gemv.h).
 * Block scales of the 16 rows come in by gathers at the rows' byte offsets;
 * the last group of a range repeats its last row in the missing lanes and
 * stores only the real ones. */
#include "kernels/gemv.h"
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/avx512_util.h"

enum { L = 16 }; /* weight rows per group = lanes */
#define INLINE static inline __attribute__((always_inline))

/* ---- the activation row ---- */

static void layout(npl_gemv_x *gx, void *mem, int64_t k, int8_t **qs, int32_t **cz, float **d, float **xs) {
    const int64_t kp = (k + 63) & ~(int64_t)63;
    uintptr_t p = ((uintptr_t)mem + 63) & ~(uintptr_t)63;
    *qs = (int8_t *)p;
    *cz = (int32_t *)(p + (uintptr_t)kp);
    *d = (float *)(p + (uintptr_t)(2 * kp));
    *xs = *d + kp / 16;
    memset(*qs, 0, (size_t)kp);
    memset(*cz, 0, (size_t)kp);
    memset(*d, 0, (size_t)(kp / 16 * 4 * 2));
    gx->k = k, gx->kp = kp, gx->qs = *qs, gx->cz = *cz, gx->d = *d, gx->xs = *xs;
}

static inline void prep_q8_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k, int off) {
    int8_t *qs;
    int32_t *cz;
    float *d, *xs;
    layout(gx, mem, k, &qs, &cz, &d, &xs);
    const block_q8_0 *x = xq;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        memcpy(qs + 32 * b, x[b].qs, 32);
        int s = 0;
        for (int i = 0; i < 32; i++) s += x[b].qs[i];
        cz[b * 8] = -off * s; /* block b: lanes 8b..8b+7 counted over the steps */
        d[2 * b] = d[2 * b + 1] = h2f(x[b].d);
    }
}
static void prep_q4_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_q8_0(gx, mem, xq, k, 8); }
static void prep_q5_0(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_q8_0(gx, mem, xq, k, 16); }
static void prep_q8_0w(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_q8_0(gx, mem, xq, k, 128); }

static inline void prep_q8_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k, int off) {
    int8_t *qs;
    int32_t *cz;
    float *d, *xs;
    layout(gx, mem, k, &qs, &cz, &d, &xs);
    const block_q8_K *x = xq;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memcpy(qs + QK_K * i, x[i].qs, QK_K);
        for (int g = 0; g < QK_K / 16; g++) {
            cz[(16 * i + g) * 4] = -off * x[i].bsums[g];
            d[16 * i + g] = x[i].d;
            xs[16 * i + g] = x[i].d * (float)x[i].bsums[g];
        }
    }
}
static void prep_q4_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_q8_K(gx, mem, xq, k, 0); }
static void prep_q6_K(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) { prep_q8_K(gx, mem, xq, k, 32); }

/* ---- shared pieces ---- */

/* v[r] holds row r's dpbusd lanes of one 64-element step; returns in g[q]
 * the sums over the four lanes of group q (16 elements) with row r in lane r. */
INLINE void reduce16(const __m512i v[L], __m512i g[4]) {
    __m512i t[8], q[4];
    for (int i = 0; i < 8; i++) /* per 128-bit lane: [a0+a2 b0+b2 a1+a3 b1+b3] for rows a, b */
        t[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]),
                                _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
    for (int j = 0; j < 4; j++) /* 128-bit lane l: group l of rows 4j..4j+3 */
        q[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * j], t[2 * j + 1]),
                                _mm512_unpackhi_epi64(t[2 * j], t[2 * j + 1]));
    const __m512i e0 = _mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i e1 = _mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i e2 = _mm512_shuffle_i32x4(q[2], q[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i e3 = _mm512_shuffle_i32x4(q[2], q[3], _MM_SHUFFLE(3, 2, 3, 2));
    g[0] = _mm512_shuffle_i32x4(e0, e2, _MM_SHUFFLE(2, 0, 2, 0));
    g[1] = _mm512_shuffle_i32x4(e0, e2, _MM_SHUFFLE(3, 1, 3, 1));
    g[2] = _mm512_shuffle_i32x4(e1, e3, _MM_SHUFFLE(2, 0, 2, 0));
    g[3] = _mm512_shuffle_i32x4(e1, e3, _MM_SHUFFLE(3, 1, 3, 1));
}

/* the 16-bit halves at byte offset `at` of the 16 rows, as floats */
static inline __m512 gather_f16(const uint8_t *base, __m512i offs, int64_t at, int high) {
    __m512i v = _mm512_i32gather_epi32(offs, base + at, 1);
    if (high) v = _mm512_srli_epi32(v, 16);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

/* acc = fma(dx * dw, (float)isum, acc): the AMX kernel's scale step */
static inline __m512 scale_add(__m512 acc, float dx, __m512 dw, __m512i isum) {
    return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dx), dw), _mm512_cvtepi32_ps(isum), acc);
}

/* The 16 rows are read a step at a time side by side, which the hardware
 * prefetchers do not follow well. The rows of a group are contiguous, so the
 * next group is the next 16 * w_row bytes: step s of S prefetches the s-th
 * of S equal slices of its cache lines, and the group after this one is in
 * flight while this one is computed. Into L1: L2, or two groups ahead,
 * measured no better; without it the kernel reads at 3/4 of the speed. */
INLINE void ahead(const uint8_t *row0, size_t w_row, int64_t s, int64_t S) {
    const uintptr_t next = (uintptr_t)(row0 + L * w_row), first = next & ~(uintptr_t)63;
    const size_t lines = (next + L * w_row - first + 63) / 64, per = (lines + (size_t)S - 1) / (size_t)S;
    const size_t from = (size_t)s * per, to = from + per < lines ? from + per : lines;
    for (size_t i = from; i < to; i++) _mm_prefetch((const char *)(first + 64 * i), _MM_HINT_T0);
}

typedef struct {
    const uint8_t *p[L]; /* row starts */
    __m512i offs;        /* byte offsets of the rows from p[0] */
    __mmask16 keep;      /* real rows */
} group16;

static inline group16 group_at(const void *w, size_t w_row, int64_t rb, int nrow) {
    group16 gr;
    _Alignas(64) int32_t o[L];
    for (int r = 0; r < L; r++) {
        const int rr = r < nrow ? r : nrow - 1;
        gr.p[r] = (const uint8_t *)w + (rb + rr) * (int64_t)w_row;
        o[r] = rr * (int32_t)w_row;
    }
    gr.offs = _mm512_load_si512(o);
    gr.keep = (__mmask16)((1u << nrow) - 1);
    return gr;
}

/* ---- 32-element block types: two blocks per step ---- */

typedef enum { T_Q4_0, T_Q5_0, T_Q8_0 } b32_type;

static inline size_t b32_bytes(b32_type t) {
    return t == T_Q4_0 ? sizeof(block_q4_0) : t == T_Q5_0 ? sizeof(block_q5_0) : sizeof(block_q8_0);
}

/* GF2P8AFFINEQB x, m: each byte of x times the bit matrix of its qword of m.
 * Written as asm so the file needs no -mgfni; run only where cpuid has GFNI. */
static inline __m512i gf_affine(__m512i x, __m512i m) {
    __m512i r;
    __asm__("vgf2p8affineqb $0, %2, %1, %0" : "=v"(r) : "v"(x), "v"(m));
    return r;
}
/* bit matrices: a byte's low nibble; its high nibble moved down */
#define GF_LO 0x0102040800000000ll
#define GF_HI 0x1020408000000000ll

/* The nibbles of 16 bytes at a and 16 at b as [a & 15 | a >> 4 | b & 15 | b >> 4]:
 * two broadcast loads and a shift of the odd 128-bit lanes (or one affine
 * op with GFNI), no shuffle. */
INLINE __m512i nibbles2x16(const uint8_t *a, const uint8_t *b, int gf) {
    const __m512i z = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)a)),
                                                  (__mmask16)0xFF00, _mm_loadu_si128((const __m128i *)b));
    if (gf) return gf_affine(z, _mm512_setr_epi64(GF_LO, GF_LO, GF_HI, GF_HI, GF_LO, GF_LO, GF_HI, GF_HI));
    const long long s4 = 0x0004000400040004ll;
    return _mm512_and_si512(_mm512_srlv_epi16(z, _mm512_setr_epi64(0, 0, s4, s4, 0, 0, s4, s4)),
                            _mm512_set1_epi8(0x0F));
}

/* unsigned quants of blocks a and b (b may be a zero block) in element order */
INLINE __m512i b32_u(b32_type t, const uint8_t *a, const uint8_t *b, int gf) {
    if (t == T_Q8_0)
        return _mm512_xor_si512(load2x256(((const block_q8_0 *)a)->qs, ((const block_q8_0 *)b)->qs),
                                _mm512_set1_epi8((char)0x80));
    if (t == T_Q4_0) return nibbles2x16(((const block_q4_0 *)a)->qs, ((const block_q4_0 *)b)->qs, gf);
    const block_q5_0 *x = (const block_q5_0 *)a, *y = (const block_q5_0 *)b;
    uint32_t ha, hb;
    memcpy(&ha, x->qh, 4);
    memcpy(&hb, y->qh, 4);
    const __m512i u = nibbles2x16(x->qs, y->qs, gf);
    return _mm512_mask_add_epi8(u, (__mmask64)ha | ((__mmask64)hb << 32), u, _mm512_set1_epi8(16));
}

INLINE __m512 group_b32(b32_type t, const group16 *g16, size_t w_row, const npl_gemv_x *gx, int pf, int gf) {
    static const uint8_t zero[sizeof(block_q8_0)]; /* the pad block of an odd count: all quants 0 */
    const group16 gr = *g16;
    const size_t bb = b32_bytes(t);
    const int64_t nb = gx->k / 32;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        const __m512i x = _mm512_load_si512(gx->qs + 32 * b), cz = _mm512_load_si512(gx->cz + 8 * b);
        __m512i v[L];
        if (pf) ahead(gr.p[0], w_row, b / 2, (nb + 1) / 2);
#pragma GCC unroll 16
        for (int r = 0; r < L; r++) {
            const uint8_t *a = gr.p[r] + (size_t)b * bb;
            v[r] = _mm512_dpbusd_epi32(cz, b32_u(t, a, two ? a + bb : zero, gf), x);
        }
        __m512i g[4];
        reduce16(v, g);
        acc = scale_add(acc, gx->d[2 * b], gather_f16(gr.p[0], gr.offs, (int64_t)bb * b, 0),
                        _mm512_add_epi32(g[0], g[1]));
        if (two)
            acc = scale_add(acc, gx->d[2 * b + 2], gather_f16(gr.p[0], gr.offs, (int64_t)bb * (b + 1), 0),
                            _mm512_add_epi32(g[2], g[3]));
    }
    return acc;
}

INLINE __m512 group_q4_0(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_b32(T_Q4_0, gr, w_row, gx, pf, 0);
}
INLINE __m512 group_q5_0(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_b32(T_Q5_0, gr, w_row, gx, pf, 0);
}
INLINE __m512 group_q4_0g(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_b32(T_Q4_0, gr, w_row, gx, pf, 1);
}
INLINE __m512 group_q5_0g(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_b32(T_Q5_0, gr, w_row, gx, pf, 1);
}
INLINE __m512 group_q8_0(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_b32(T_Q8_0, gr, w_row, gx, pf, 0);
}

/* ---- q4_K: 32-element blocks with a scale and a min each ---- */

static inline __m512i byte_at(__m512i v, int b) {
    return _mm512_and_si512(_mm512_srli_epi32(v, 8 * b), _mm512_set1_epi32(0xFF));
}

/* The mins go on after every block, one fma per group of 16 elements in a
 * dependent chain (the GEMM's order): k / 16 fma latencies, a quarter of the
 * group's time if run at its end. So the chain of the group before runs
 * inside this group's steps, four links a step, where it costs nothing. */
typedef struct {
    __m512 acc;          /* the blocks' sum, mins being added */
    const __m512 *mins;  /* [k / 32] per sub-block */
    const float *xs;     /* [k / 16] */
    int64_t g, ng;       /* next group of 16, groups */
    float *y;            /* where it goes, or NULL: nothing pending */
    __mmask16 keep;
} mins_chain;

INLINE void chain_run(mins_chain *t, int64_t links) {
    const int64_t end = t->g + links < t->ng ? t->g + links : t->ng;
    for (; t->g < end; t->g++) t->acc = _mm512_fmadd_ps(_mm512_set1_ps(t->xs[t->g]), t->mins[t->g / 2], t->acc);
}

static inline void chain_finish(mins_chain *t) {
    if (!t->y) return;
    chain_run(t, t->ng);
    _mm512_mask_storeu_ps(t->y, t->keep, t->acc);
    t->y = NULL;
}

/* The 16 rows' sums over the blocks, their mins per sub-block in mins;
 * advances *prev (if any) by four links a step. */
INLINE __m512 blocks_q4_K(const group16 *g16, size_t w_row, const npl_gemv_x *gx, int pf, __m512 *mins,
                          mins_chain *prev, int gf) {
    const group16 gr = *g16;
    const int64_t nsb = gx->k / QK_K;
    const __m512i lo4 = _mm512_set1_epi8(0x0F), m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
    const __m512i sh4 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    const __m512i gfm = _mm512_inserti64x4(_mm512_set1_epi64(GF_LO), _mm256_set1_epi64x(GF_HI), 1);
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        const int64_t sb = i * (int64_t)sizeof(block_q4_K);
        const __m512 d = gather_f16(gr.p[0], gr.offs, sb, 0);
        const __m512 ndmin = _mm512_xor_ps(gather_f16(gr.p[0], gr.offs, sb, 1), sign);
        const __m512i s0 = _mm512_i32gather_epi32(gr.offs, gr.p[0] + sb + 4, 1);
        const __m512i s1 = _mm512_i32gather_epi32(gr.offs, gr.p[0] + sb + 8, 1);
        const __m512i s2 = _mm512_i32gather_epi32(gr.offs, gr.p[0] + sb + 12, 1);
        __m512 dw[8];
        for (int j = 0; j < 4; j++) { /* npl_get_scale_min_k4, 16 rows at once */
            const __m512i a = byte_at(s0, j), m = byte_at(s1, j), h = byte_at(s2, j);
            const __m512i sc_lo = _mm512_and_si512(a, m63), mn_lo = _mm512_and_si512(m, m63);
            const __m512i sc_hi =
                _mm512_or_si512(_mm512_and_si512(h, m15), _mm512_slli_epi32(_mm512_srli_epi32(a, 6), 4));
            const __m512i mn_hi =
                _mm512_or_si512(_mm512_srli_epi32(h, 4), _mm512_slli_epi32(_mm512_srli_epi32(m, 6), 4));
            dw[j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc_lo));
            dw[j + 4] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc_hi));
            mins[i * 8 + j] = _mm512_mul_ps(ndmin, _mm512_cvtepi32_ps(mn_lo));
            mins[i * 8 + j + 4] = _mm512_mul_ps(ndmin, _mm512_cvtepi32_ps(mn_hi));
        }
        for (int c = 0; c < 4; c++) {
            const __m512i x = _mm512_load_si512(gx->qs + QK_K * i + 64 * c);
            __m512i v[L];
            if (pf) ahead(gr.p[0], w_row, 4 * i + c, 4 * nsb);
            if (prev) chain_run(prev, 4);
#pragma GCC unroll 16
            for (int r = 0; r < L; r++) {
                const block_q4_K *blk = (const block_q4_K *)(gr.p[r] + sb);
                /* [q | q] by a broadcast load, the high half shifted: [q & 15 | q >> 4] */
                const __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk->qs + 32 * c)));
                const __m512i u = gf ? gf_affine(qb, gfm) : _mm512_and_si512(_mm512_srlv_epi16(qb, sh4), lo4);
                v[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x);
            }
            __m512i g[4];
            reduce16(v, g);
            const float dx = gx->d[16 * i];
            acc = scale_add(acc, dx, dw[2 * c], _mm512_add_epi32(g[0], g[1]));
            acc = scale_add(acc, dx, dw[2 * c + 1], _mm512_add_epi32(g[2], g[3]));
        }
    }
    return acc;
}

/* Rows as ROWS_FN below, the first activation row's mins chain run one
 * group late inside the next group (the others' at once). */
INLINE void rows_q4_K_as(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                        float *y, int64_t ldy, int gf) {
    const int64_t nm = gx->k / 32;
    __m512 mins[3][nm]; /* two for the pipelined row, alternating; one for the others */
    mins_chain pend = {.y = NULL};
    int cur = 0;
    for (int64_t rb = r0; rb < r1; rb += L) {
        const group16 gr = group_at(w, w_row, rb, r1 - rb < L ? (int)(r1 - rb) : L);
        const __m512 acc = blocks_q4_K(&gr, w_row, gx, 1, mins[cur], &pend, gf);
        chain_finish(&pend);
        pend = (mins_chain){acc, mins[cur], gx->xs, 0, gx->k / 16, y + rb, gr.keep};
        cur ^= 1;
        for (int c = 1; c < m; c++) {
            mins_chain t = {blocks_q4_K(&gr, w_row, gx + c, 0, mins[2], NULL, gf), mins[2], gx[c].xs, 0, gx->k / 16,
                            y + c * ldy + rb, gr.keep};
            chain_finish(&t);
        }
    }
    chain_finish(&pend);
}

static void rows_q4_K(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                      int64_t ldy) {
    rows_q4_K_as(w, w_row, r0, r1, gx, m, y, ldy, 0);
}
static void rows_q4_Kg(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y,
                       int64_t ldy) {
    rows_q4_K_as(w, w_row, r0, r1, gx, m, y, ldy, 1);
}

/* ---- q6_K: 16-element blocks ---- */

INLINE __m512 group_q6_K_as(const group16 *g16, size_t w_row, const npl_gemv_x *gx, int pf, int gf) {
    const group16 gr = *g16;
    const int64_t nsb = gx->k / QK_K;
    const __m512i lo4 = _mm512_set1_epi8(0x0F), m63 = _mm512_set1_epi8(0x3F);
    /* qh bit pairs 0 and 1 (c = 0) to bits 4-5: << 4 and << 2; pairs 2 and 3 (c = 1): >> 0 and >> 2 */
    const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    /* with GFNI: bit matrices taking bit pair p of a byte to bits 4-5, pairs 0 | 1 and 2 | 3 */
    const __m512i gh0 = _mm512_inserti64x4(_mm512_set1_epi64(0x01020000), _mm256_set1_epi64x(0x04080000), 1);
    const __m512i gh1 = _mm512_inserti64x4(_mm512_set1_epi64(0x10200000), _mm256_set1_epi64x(0x40800000), 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; i++) {
        const int64_t sb = i * (int64_t)sizeof(block_q6_K);
        /* d sits in the last two bytes: read it as the high half of the word before */
        const __m512 d = gather_f16(gr.p[0], gr.offs, sb + offsetof(block_q6_K, d) - 2, 1);
        __m512i sc[4];
        for (int q = 0; q < 4; q++)
            sc[q] = _mm512_i32gather_epi32(gr.offs, gr.p[0] + sb + offsetof(block_q6_K, scales) + 4 * q, 1);
        for (int st = 0; st < 4; st++) {
            const int h = st / 2, c = st % 2;
            const __m512i x = _mm512_load_si512(gx->qs + QK_K * i + 64 * st);
            const __m512i cz = _mm512_load_si512(gx->cz + 16 * (4 * i + st));
            __m512i v[L];
            if (pf) ahead(gr.p[0], w_row, 4 * i + st, 4 * nsb);
#pragma GCC unroll 16
            for (int r = 0; r < L; r++) {
                const block_q6_K *blk = (const block_q6_K *)(gr.p[r] + sb);
                /* elements 64c..64c+63 of the half: low 4 bits from ql's nibble c, bits 4-5 from qh's bit
                 * pair 2c (first 32) and 2c + 1 (last 32), moved to bits 4-5 by one variable shift */
                const __m512i ql = _mm512_loadu_si512(blk->ql + 64 * h);
                const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk->qh + 32 * h)));
                __m512i u;
                if (gf) { /* bits 4-5 by one affine op, clean: (ql & 15) | hi, or ql's high nibble | hi */
                    const __m512i hi = gf_affine(qh, c == 0 ? gh0 : gh1);
                    u = c == 0 ? _mm512_ternarylogic_epi32(ql, hi, lo4, 0xEC)
                               : _mm512_or_si512(gf_affine(ql, _mm512_set1_epi64(GF_HI)), hi);
                } else {
                    const __m512i lo = c == 0 ? ql : _mm512_srli_epi16(ql, 4);
                    const __m512i hi = c == 0 ? _mm512_sllv_epi16(qh, shl) : _mm512_srlv_epi16(qh, shr);
                    /* bits 0-3 from lo, 4-5 from hi: (lo & 15) | (hi & ~15), then & 63 */
                    u = _mm512_and_si512(_mm512_ternarylogic_epi32(lo, hi, lo4, 0xE4), m63);
                }
                v[r] = _mm512_dpbusd_epi32(cz, u, x);
            }
            __m512i g[4];
            reduce16(v, g);
            const __m512i s = sc[st];
            for (int q = 0; q < 4; q++) {
                /* scale byte q of the word, sign-extended */
                const __m512i sq = _mm512_srai_epi32(_mm512_slli_epi32(s, 24 - 8 * q), 24);
                acc = scale_add(acc, gx->d[16 * i + 4 * st + q], _mm512_mul_ps(d, _mm512_cvtepi32_ps(sq)), g[q]);
            }
        }
    }
    return acc;
}

INLINE __m512 group_q6_K(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_q6_K_as(gr, w_row, gx, pf, 0);
}
INLINE __m512 group_q6_Kg(const group16 *gr, size_t w_row, const npl_gemv_x *gx, int pf) {
    return group_q6_K_as(gr, w_row, gx, pf, 1);
}

/* Every activation row passes over a group while its rows are in cache;
 * the first pass prefetches the next group. */
#define ROWS_FN(name, group)                                                                                   \
    static void name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, float *y, \
                     int64_t ldy) {                                                                            \
        for (int64_t rb = r0; rb < r1; rb += L) {                                                              \
            const group16 gr = group_at(w, w_row, rb, r1 - rb < L ? (int)(r1 - rb) : L);                       \
            _mm512_mask_storeu_ps(y + rb, gr.keep, group(&gr, w_row, gx, 1));                                   \
            for (int c = 1; c < m; c++)                                                                        \
                _mm512_mask_storeu_ps(y + c * ldy + rb, gr.keep, group(&gr, w_row, gx + c, 0));                \
        }                                                                                                      \
    }
ROWS_FN(rows_q4_0, group_q4_0)
ROWS_FN(rows_q5_0, group_q5_0)
ROWS_FN(rows_q4_0g, group_q4_0g)
ROWS_FN(rows_q5_0g, group_q5_0g)
ROWS_FN(rows_q8_0, group_q8_0)
ROWS_FN(rows_q6_K, group_q6_K)
ROWS_FN(rows_q6_Kg, group_q6_Kg)

static const npl_gemv_kernels k_q4_0 = {prep_q4_0, rows_q4_0}, k_q5_0 = {prep_q5_0, rows_q5_0},
                              k_q8_0 = {prep_q8_0w, rows_q8_0}, k_q4_K = {prep_q4_K, rows_q4_K},
                              k_q6_K = {prep_q6_K, rows_q6_K};
/* with GFNI */
static const npl_gemv_kernels k_q4_0g = {prep_q4_0, rows_q4_0g}, k_q5_0g = {prep_q5_0, rows_q5_0g},
                              k_q4_Kg = {prep_q4_K, rows_q4_Kg}, k_q6_Kg = {prep_q6_K, rows_q6_Kg};

const npl_gemv_kernels *npl_gemv_get(npl_isa want, npl_type t, int gfni) {
    const npl_isa best = npl_cpu_best_isa();
    if ((int)want < (int)NPL_ISA_AVX512 || (int)best < (int)NPL_ISA_AVX512)
        return (int)want >= (int)NPL_ISA_AVX2 && (int)best >= (int)NPL_ISA_AVX2 ? npl_gemv_get_avx2(t) : NULL;
    /* q4_1: AVX2's order (its vec_dot) at every ISA, which the AVX-512 GEMV and GEMM keep */
    if (t == NPL_TYPE_Q4_1) return npl_gemv_get_avx512_b32(t);
    /* without AMX the prefill GEMM is the AVX-512 one: its order */
    if ((int)want < (int)NPL_ISA_AMX || (int)best < (int)NPL_ISA_AMX)
        return !npl_avx512_takes_avx2(t) ? NULL
             : npl_gemv_get_avx512_k(t)   ? npl_gemv_get_avx512_k(t)
             : npl_gemv_get_avx512_b32(t) ? npl_gemv_get_avx512_b32(t)
                                          : npl_gemv_get_avx2(t);
    if (!npl_gemm_get_amx(t)) return NULL;
    const int gf = gfni && npl_cpu_has_gfni();
    switch (t) {
    case NPL_TYPE_Q4_0: return gf ? &k_q4_0g : &k_q4_0;
    case NPL_TYPE_Q5_0: return gf ? &k_q5_0g : &k_q5_0;
    case NPL_TYPE_Q8_0: return &k_q8_0;
    case NPL_TYPE_Q4_K: return gf ? &k_q4_Kg : &k_q4_K;
    case NPL_TYPE_Q6_K: return gf ? &k_q6_Kg : &k_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemv_kernels *npl_gemv_get(npl_isa want, npl_type t, int gfni) {
    (void)want, (void)t, (void)gfni;
    return NULL;
}
#endif
