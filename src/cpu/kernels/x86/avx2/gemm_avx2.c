/* AVX2 GEMM (prefill) and GEMV (decode) for the quantized weight types,
 * for x86 without AVX-512 (no VNNI: maddubs + madd make the dot of 4 bytes).
 *
 * Both decode 8 weight rows at a time into a panel on the stack (unsigned
 * quants u in element order and the row's scales) and run one kernel over
 * every activation row, so a row decoded alone (GEMV) gives bit for bit what
 * it gives inside a prefill batch: chunked prefill equals unchunked. (The
 * q8_0 GEMV of one row skips the panel and decodes in registers, with the
 * same integer sums and float steps.)
 *
 * q4_0 / q5_0 / q8_0 (a float scale per block of 32): per block the 8 rows'
 * exact int32 products are reduced by a transposing add tree into one vector
 * (row r in lane r), then acc = fma(dx * dw, isum, acc) over the blocks, the
 * AMX GEMM's float steps (x86/amx/gemm_amx.c) in its order.
 *
 * q4_K / q6_K (integer sub-block scales under one float scale per 256): the
 * sub-block scales multiply the int16 pair sums inside madd, so a row's
 * whole super-block is one int32 sum (q6_K's offset and q4_K's mins likewise
 * from the activation's group sums) and the tree runs once per 256 elements:
 * acc = fma(dx * d, isum, acc), q4_K then acc = fnmadd(dx * dmin, msum, acc).
 *
 * maddubs saturates a pair of u8 x i8 products at int16, so u stays small:
 * u = w + offset for q4_0 / q5_0 (the offset times the block's activation
 * sum is taken off in float, exactly: every value is an integer below 2^24)
 * and q6_K, while q8_0 keeps its signed quants as maddubs(|w|, sign(x, w)).
 *
 * Activation layout (npl_gemm_x, and npl_gemv_x alike): quants in element
 * order, a scale per group of 16, and in the sum array per group of 16 the
 * quant sum, as a float (Q8_0) or as Q8_K's int16 bsums. */
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemv.h"

#if defined(__x86_64__) || defined(__i386__)
#include "core/quant.h"
#include "core/quant_blocks.h"
#include "cpu/kernels/x86/avx2/avx2_util.h"
#include "cpu/kernels/x86/avx2/q6k_unpack.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    R = 8,                /* weight rows per panel = lanes */
    PREFETCH_DIST = 4096, /* decode asks for the row this far ahead: a single
                             thread then reads q5_0 / q8_0 weights from DRAM
                             ~20 % faster (bench/gemv_bench cold) */
};

/* Block-major: the 8 rows of a block side by side, so the kernel reaches
 * each row's data at a constant offset from the block's (no per-row address
 * arithmetic in the inner loop). */
typedef struct {
    int64_t kp;
    uint8_t *u;     /* [kp / 32][R][32] */
    float *dw;      /* [kp / 32][R] scale per block; k-quants: [kp / 256][R] d */
    float *dmin;    /* k-quants: [kp / 256][R] q4_K's dmin */
    int16_t *sc;    /* q6_K: [kp / 32][R][16] the scale of each int16 pair sum;
                       q4_K: [kp / 32][R] one per block, broadcast by the kernel
                       (a GEMV would spend more storing vectors than using them) */
    int16_t *aux;   /* k-quants: [kp / 256][R][16] per group of 16: q6_K's scale, q4_K's min */
} panel;

/* where row j keeps block b's 32 values u, or its 16 pair scales */
static inline uint8_t *u_at(const panel *p, int j, int64_t b) { return p->u + (b * R + j) * 32; }
static inline int16_t *sc_at(const panel *p, int j, int64_t b) { return p->sc + (b * R + j) * 16; }

typedef void (*decode_fn)(const void *row, int64_t k, const panel *p, int j);

typedef struct {
    decode_fn dec;
    float offset; /* u = w + offset (0: q4_K, and q8_0, which keeps w signed) */
    int is_signed, kquant, has_min;
    int type;     /* NPL_TYPE_*: the GEMV's in-register decoding of 32-blocks */
    int bs;       /* bytes per block of 32 (not k-quants) */
} wtype;

/* ---- weight decoding (8 rows per panel) ---- */

static inline void put_scale(const panel *p, int j, int64_t b, float d) { p->dw[b * R + j] = d; }

static void decode_q4_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q4_0 *x = row;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        _mm256_store_si256((__m256i *)u_at(p, j, b), avx2_nibbles32(x[b].qs));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

static void decode_q5_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q5_0 *x = row;
    for (int64_t b = 0; b < k / QK5_0; b++) {
        const __m256i hi = _mm256_and_si256(avx2_bits32(x[b].qh), _mm256_set1_epi8(16));
        _mm256_store_si256((__m256i *)u_at(p, j, b), _mm256_or_si256(avx2_nibbles32(x[b].qs), hi));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

static void decode_q8_0(const void *row, int64_t k, const panel *p, int j) {
    const block_q8_0 *x = row;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        _mm256_store_si256((__m256i *)u_at(p, j, b), _mm256_loadu_si256((const __m256i *)x[b].qs));
        put_scale(p, j, b, h2f(x[b].d));
    }
}

/* the 8 six-bit scales and mins of a q4_K super-block, as bytes */
static inline void scales_mins_k4(const uint8_t *q, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = q[j] & 63;
        mn[j] = q[j + 4] & 63;
        sc[j + 4] = (q[j + 8] & 0xF) | ((q[j] >> 6) << 4);
        mn[j + 4] = (q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4);
    }
}

static void decode_q4_K(const void *row, int64_t k, const panel *p, int j) {
    const block_q4_K *x = row;
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < k / QK_K; i++) {
        int16_t *aux = p->aux + (i * R + j) * 16;
        uint8_t s[8], mn[8];
        scales_mins_k4(x[i].scales, s, mn);
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 2 * c), _mm256_and_si256(q, lo4));
            _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 2 * c + 1), _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4));
        }
        for (int b = 0; b < 8; b++) {
            p->sc[(8 * i + b) * R + j] = s[b];
            aux[2 * b] = aux[2 * b + 1] = mn[b];
        }
        p->dw[i * R + j] = h2f(x[i].d);
        p->dmin[i * R + j] = h2f(x[i].dmin);
    }
}

static void decode_q6_K(const void *row, int64_t k, const panel *p, int j) {
    const block_q6_K *x = row;
    for (int64_t i = 0; i < k / QK_K; i++) {
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6k_unpack128(x[i].ql + 64 * h, x[i].qh + 32 * h, q);
            for (int s = 0; s < 4; s++) _mm256_store_si256((__m256i *)u_at(p, j, 8 * i + 4 * h + s), q[s]);
        }
        /* pair sums 0-7 of a 32-element step are group 2b, 8-15 group 2b + 1 */
        const __m256i g16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        _mm256_store_si256((__m256i *)(p->aux + (i * R + j) * 16), g16);
        for (int b = 0; b < 8; b++) {
            const __m128i a = _mm_set1_epi16(x[i].scales[2 * b]), c = _mm_set1_epi16(x[i].scales[2 * b + 1]);
            _mm256_store_si256((__m256i *)sc_at(p, j, 8 * i + b), _mm256_set_m128i(c, a));
        }
        p->dw[i * R + j] = h2f(x[i].d);
    }
}

/* rows past the weight matrix's end: zero weights, results not stored */
static void zero_row(const panel *p, int j, const wtype *t) {
    for (int64_t b = 0; b < p->kp / 32; b++) memset(u_at(p, j, b), 0, 32);
    if (!t->kquant) {
        for (int64_t b = 0; b < p->kp / 32; b++) p->dw[b * R + j] = 0;
        return;
    }
    for (int64_t b = 0; b < p->kp / 32; b++)
        if (t->has_min) p->sc[b * R + j] = 0;
        else memset(sc_at(p, j, b), 0, 32);
    for (int64_t i = 0; i < p->kp / QK_K; i++) memset(p->aux + (i * R + j) * 16, 0, 32);
    for (int64_t i = 0; i < p->kp / QK_K; i++) p->dw[i * R + j] = p->dmin[i * R + j] = 0;
}

/* ---- activation rows ---- */

typedef struct {
    const int8_t *qs; /* [kp] quants in element order */
    const float *d;   /* [kp / 16] scale per group of 16 */
    const float *sum; /* [kp / 16] quant sum per group: float (Q8_0) or int16 (Q8_K's bsums) */
} xrow;

static void fill_q8_0(int8_t *qs, float *d, float *sum, const void *xq, int64_t k, int64_t kp) {
    const block_q8_0 *x = xq;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        memcpy(qs + 32 * b, x[b].qs, 32);
        d[2 * b] = d[2 * b + 1] = h2f(x[b].d);
        for (int g = 0; g < 2; g++) {
            int s = 0;
            for (int e = 0; e < 16; e++) s += x[b].qs[16 * g + e];
            sum[2 * b + g] = (float)s;
        }
    }
    memset(qs + k, 0, (size_t)(kp - k));
    for (int64_t g = k / 16; g < kp / 16; g++) d[g] = sum[g] = 0;
}

static void fill_q8_K(int8_t *qs, float *d, float *sum, const void *xq, int64_t k, int64_t kp) {
    const block_q8_K *x = xq;
    int16_t *bs = (int16_t *)sum;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memcpy(qs + QK_K * i, x[i].qs, QK_K);
        memcpy(bs + 16 * i, x[i].bsums, sizeof x[i].bsums);
        for (int g = 0; g < QK_K / 16; g++) d[16 * i + g] = x[i].d;
    }
    memset(qs + k, 0, (size_t)(kp - k));
}

enum { X_Q8_0, X_Q8_K };

static void fill_as(int kind, int8_t *qs, float *d, float *sum, const void *xq, int64_t k, int64_t kp) {
    if (kind == X_Q8_0) fill_q8_0(qs, d, sum, xq, k, kp);
    else fill_q8_K(qs, d, sum, xq, k, kp);
}

/* ---- the kernel ---- */

/* p[r]: 8 int32 partial sums of row r over 32 elements; lo / hi: the sums
 * over the first / last 16 elements, row r in lane r */
INLINE void tree8(const __m256i p[R], __m256i *lo, __m256i *hi) {
    const __m256i a = _mm256_hadd_epi32(p[0], p[1]), b = _mm256_hadd_epi32(p[2], p[3]);
    const __m256i c = _mm256_hadd_epi32(p[4], p[5]), d = _mm256_hadd_epi32(p[6], p[7]);
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    *lo = _mm256_permute2x128_si256(ab, cd, 0x20);
    *hi = _mm256_permute2x128_si256(ab, cd, 0x31);
}

/* The same from the 8 rows' maddubs pair sums m[r] of 4- and 5-bit u:
 * a sum of 8 products stays below 8 * 31 * 127 = 31496, so the first two
 * tree levels add in int16 and two madds widen all 8 rows (vector integer
 * multiplies, not adds, are what this kernel runs out of). */
INLINE void tree8_pairs(const __m256i m[R], __m256i *lo, __m256i *hi) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i a = _mm256_hadd_epi16(m[0], m[1]), b = _mm256_hadd_epi16(m[2], m[3]);
    const __m256i c = _mm256_hadd_epi16(m[4], m[5]), d = _mm256_hadd_epi16(m[6], m[7]);
    const __m256i ab = _mm256_madd_epi16(_mm256_hadd_epi16(a, b), ones), cd = _mm256_madd_epi16(_mm256_hadd_epi16(c, d), ones);
    *lo = _mm256_permute2x128_si256(ab, cd, 0x20);
    *hi = _mm256_permute2x128_si256(ab, cd, 0x31);
}

/* acc = fma(dx * dw, isum, acc), isum = u.x - offset * x_sum (exact in float) */
INLINE __m256 scale_add(__m256 acc, __m256i iu, float off_sum, float dx, const float *dw) {
    const __m256 s = _mm256_sub_ps(_mm256_cvtepi32_ps(iu), _mm256_set1_ps(off_sum));
    return _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dx), _mm256_loadu_ps(dw)), s, acc);
}

/* the 8 panel rows against one activation row: 32-element blocks */
INLINE __m256 panel_dot(const wtype *t, const panel *p, int64_t k, xrow x) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t e = 0; e < k; e += 32) {
        const __m256i xv = _mm256_load_si256((const __m256i *)(x.qs + e));
        __m256i pr[R], lo, hi;
        for (int r = 0; r < R; r++) {
            const __m256i w = _mm256_load_si256((const __m256i *)u_at(p, r, e / 32));
            pr[r] = t->is_signed ? _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w)), ones)
                                 : _mm256_maddubs_epi16(w, xv);
        }
        if (t->is_signed) tree8(pr, &lo, &hi);
        else tree8_pairs(pr, &lo, &hi);
        const int64_t g = e / 16;
        acc = scale_add(acc, _mm256_add_epi32(lo, hi), t->offset * (x.sum[g] + x.sum[g + 1]), x.d[g],
                        p->dw + (e / 32) * R);
    }
    return acc;
}

/* the same for q4_K / q6_K: one int32 sum per row and super-block */
INLINE __m256 panel_dot_k(const wtype *t, const panel *p, int64_t k, xrow x) {
    const int16_t *bs = (const int16_t *)x.sum;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < k / QK_K; i++) {
        __m256i pr[R];
        for (int r = 0; r < R; r++) pr[r] = _mm256_setzero_si256();
        for (int b = 0; b < 8; b++) {
            const int64_t e = QK_K * i + 32 * b;
            const __m256i xv = _mm256_load_si256((const __m256i *)(x.qs + e));
            for (int r = 0; r < R; r++) {
                const __m256i w = _mm256_load_si256((const __m256i *)u_at(p, r, e / 32));
                const __m256i s = t->has_min ? _mm256_set1_epi16(p->sc[(e / 32) * R + r])
                                             : _mm256_load_si256((const __m256i *)sc_at(p, r, e / 32));
                pr[r] = _mm256_add_epi32(pr[r], _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), s));
            }
        }
        const __m256i xb = _mm256_loadu_si256((const __m256i *)(bs + 16 * i));
        __m256i lo, hi;
        if (!t->has_min) /* q6_K: w = q - 32, minus 32 * sum of scale x group sum */
            for (int r = 0; r < R; r++) {
                const __m256i a = _mm256_load_si256((const __m256i *)(p->aux + (i * R + r) * 16));
                pr[r] = _mm256_sub_epi32(pr[r], _mm256_slli_epi32(_mm256_madd_epi16(a, xb), 5));
            }
        tree8(pr, &lo, &hi);
        const __m256 dx = _mm256_set1_ps(x.d[16 * i]);
        acc = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_loadu_ps(p->dw + i * R)),
                              _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), acc);
        if (t->has_min) { /* q4_K: minus dmin * sum of min x group sum */
            for (int r = 0; r < R; r++)
                pr[r] = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(p->aux + (i * R + r) * 16)), xb);
            tree8(pr, &lo, &hi);
            acc = _mm256_fnmadd_ps(_mm256_mul_ps(dx, _mm256_loadu_ps(p->dmin + i * R)),
                                   _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi)), acc);
        }
    }
    return acc;
}

/* u of a 32-block, decoded in registers */
INLINE __m256i block_u(const wtype *t, const uint8_t *blk) {
    if (t->type == NPL_TYPE_Q4_0) return avx2_nibbles32(blk + 2);
    if (t->type == NPL_TYPE_Q5_0)
        return _mm256_or_si256(avx2_nibbles32(blk + 6), _mm256_and_si256(avx2_bits32(blk + 2), _mm256_set1_epi8(16)));
    return _mm256_loadu_si256((const __m256i *)(blk + 2));
}

/* GEMV of one activation row over 32-block types: the 8 rows' blocks are
 * decoded straight into registers and their f16 scales gathered, instead of
 * going through the panel; the integer sums and float steps are panel_dot's,
 * so the result is the same bits. The next 8 rows are prefetched a slice per
 * block, so they are in flight while these are computed. Used for q8_0 (the
 * output matrix), where it reads ~15 % faster from DRAM on one thread
 * (bench/gemv_bench cold); for q5_0 the nibble and high-bit unpacking of 8
 * rows at once measured no better than the panel. */
INLINE __m256 direct_dot(const wtype *t, const uint8_t *row0, size_t w_row, int64_t k, xrow x, size_t pf_step) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i offs = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)w_row));
    const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9,
                                          12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    const uint8_t *next = row0 + R * w_row;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t e = 0, b = 0; e < k; e += 32, b++) {
        for (size_t o = 0; o < pf_step; o += 64) _mm_prefetch((const char *)next + (size_t)b * pf_step + o, _MM_HINT_T0);
        const uint8_t *blk = row0 + (size_t)b * (size_t)t->bs;
        const __m256i xv = _mm256_load_si256((const __m256i *)(x.qs + e));
        __m256i pr[R];
        for (int r = 0; r < R; r++) {
            const __m256i w = block_u(t, blk + (size_t)r * w_row);
            pr[r] = t->is_signed ? _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w)), ones)
                                 : _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), ones);
        }
        __m256i lo, hi;
        tree8(pr, &lo, &hi);
        /* the 8 rows' f16 scales: the low halves of a 32-bit gather */
        const __m256i g = _mm256_shuffle_epi8(_mm256_i32gather_epi32((const int *)blk, offs, 1), pick);
        const __m128i h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(g, 0x08));
        _Alignas(32) float dw[R];
        _mm256_store_ps(dw, _mm256_cvtph_ps(h));
        const int64_t gi = e / 16;
        acc = scale_add(acc, _mm256_add_epi32(lo, hi), t->offset * (x.sum[gi] + x.sum[gi + 1]), x.d[gi], dw);
    }
    return acc;
}

/* the hardware prefetcher alone leaves decode plus kernel waiting on DRAM */
INLINE void ahead(const uint8_t *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)p + o, _MM_HINT_T0);
}

INLINE void store_rows(float *y, __m256 v, int nrow) {
    if (nrow == R) {
        _mm256_storeu_ps(y, v);
        return;
    }
    _Alignas(32) float t[R];
    _mm256_store_ps(t, v);
    memcpy(y, t, (size_t)nrow * sizeof(float));
}

/* Weight rows [r0, r1) against m activation rows, row c from xr(c). */
INLINE void rows_with(const wtype *t, const void *w, size_t w_row, int64_t r0, int64_t r1, int64_t k, int64_t kp,
                      int64_t m, const npl_gemm_x *xp, const npl_gemv_x *gx, float *y, int64_t ldy) {
    const int64_t nsb = t->kquant ? kp / QK_K : 1;
    uint8_t raw[R * kp + 32];
    float dw[kp / 32 * R], dmin[nsb * R];
    int16_t scr[t->kquant ? R * kp / 2 + 16 : 1], auxr[R * nsb * 16 + 16]; /* + 16: alignment */
    const panel p = {kp, (uint8_t *)(((uintptr_t)raw + 31) & ~(uintptr_t)31), dw, dmin,
                     (int16_t *)(((uintptr_t)scr + 31) & ~(uintptr_t)31), (int16_t *)(((uintptr_t)auxr + 31) & ~(uintptr_t)31)};
    for (int64_t rb = r0; rb < r1; rb += R) {
        const int nrow = r1 - rb < R ? (int)(r1 - rb) : R;
        if (m == 1 && !xp && t->type == NPL_TYPE_Q8_0 && nrow == R) {
            const size_t pf_step = rb + 2 * R <= r1 ? ((size_t)R * w_row / (size_t)(k / 32) + 63) & ~(size_t)63 : 0;
            store_rows(y + rb, direct_dot(t, (const uint8_t *)w + rb * (int64_t)w_row, w_row, k,
                                          (xrow){gx[0].qs, gx[0].d, gx[0].xs}, pf_step), R);
            continue;
        }
        for (int j = 0; j < nrow; j++) {
            const uint8_t *row = (const uint8_t *)w + (rb + j) * (int64_t)w_row;
            ahead(row + PREFETCH_DIST, w_row);
            t->dec(row, k, &p, j);
        }
        for (int j = nrow; j < R; j++) zero_row(&p, j, t);
        for (int64_t c = 0; c < m; c++) {
            const xrow x = xp ? (xrow){xp->qs + c * kp, xp->d + c * (kp / 16), xp->sum + c * xp->ng}
                              : (xrow){gx[c].qs, gx[c].d, gx[c].xs};
            store_rows(y + c * ldy + rb, t->kquant ? panel_dot_k(t, &p, k, x) : panel_dot(t, &p, k, x), nrow);
        }
    }
}

static const wtype t_q4_0 = {decode_q4_0, 8.0f, 0, 0, 0, NPL_TYPE_Q4_0, sizeof(block_q4_0)},
                   t_q5_0 = {decode_q5_0, 16.0f, 0, 0, 0, NPL_TYPE_Q5_0, sizeof(block_q5_0)},
                   t_q8_0 = {decode_q8_0, 0.0f, 1, 0, 0, NPL_TYPE_Q8_0, sizeof(block_q8_0)},
                   t_q4_K = {decode_q4_K, 0.0f, 0, 1, 1, NPL_TYPE_Q4_K, 0},
                   t_q6_K = {decode_q6_K, 32.0f, 0, 1, 0, NPL_TYPE_Q6_K, 0};

#define KERNELS(name, wt, kind)                                                                                  \
    static void gemm_pack_##name(const npl_gemm_x *xp, int64_t r, const void *row) {                          \
        fill_as(kind, xp->qs + r * xp->kp, xp->d + r * (xp->kp / 16), xp->sum + r * xp->ng, row, xp->k, xp->kp); \
    }                                                                                                         \
    static void gemm_rows_##name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemm_x *xp,   \
                                 float *y, int64_t ldy) {                                                     \
        rows_with(&wt, w, w_row, r0, r1, xp->k, xp->kp, xp->m, xp, NULL, y, ldy);                             \
    }                                                                                                         \
    static void gemv_prep_##name(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {                      \
        const int64_t kp = (k + 63) & ~(int64_t)63;                                                           \
        int8_t *qs = (int8_t *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);                                      \
        float *d = (float *)(qs + kp), *sum = d + kp / 16;                                                    \
        fill_as(kind, qs, d, sum, xq, k, kp);                                                                 \
        *gx = (npl_gemv_x){k, kp, qs, NULL, d, sum};                                                          \
    }                                                                                                         \
    static void gemv_rows_##name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx,   \
                                 int m, float *y, int64_t ldy) {                                              \
        rows_with(&wt, w, w_row, r0, r1, gx[0].k, gx[0].kp, m, NULL, gx, y, ldy);                             \
    }                                                                                                         \
    static const npl_gemm_kernels gemm_##name = {gemm_pack_##name, gemm_rows_##name};                         \
    static const npl_gemv_kernels gemv_##name = {gemv_prep_##name, gemv_rows_##name};
KERNELS(q4_0, t_q4_0, X_Q8_0)
KERNELS(q5_0, t_q5_0, X_Q8_0)
KERNELS(q8_0, t_q8_0, X_Q8_0)
KERNELS(q4_K, t_q4_K, X_Q8_K)
KERNELS(q6_K, t_q6_K, X_Q8_K)

const npl_gemm_kernels *npl_gemm_get_avx2(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &gemm_q4_0;
    case NPL_TYPE_Q5_0: return &gemm_q5_0;
    case NPL_TYPE_Q8_0: return &gemm_q8_0;
    case NPL_TYPE_Q4_K: return &gemm_q4_K;
    case NPL_TYPE_Q6_K: return &gemm_q6_K;
    default: return NULL;
    }
}

const npl_gemv_kernels *npl_gemv_get_avx2(npl_type t) {
    switch (t) {
    case NPL_TYPE_Q4_0: return &gemv_q4_0;
    case NPL_TYPE_Q5_0: return &gemv_q5_0;
    case NPL_TYPE_Q8_0: return &gemv_q8_0;
    case NPL_TYPE_Q4_K: return &gemv_q4_K;
    case NPL_TYPE_Q6_K: return &gemv_q6_K;
    default: return NULL;
    }
}

#else
const npl_gemm_kernels *npl_gemm_get_avx2(npl_type t) {
    (void)t;
    return NULL;
}
const npl_gemv_kernels *npl_gemv_get_avx2(npl_type t) {
    (void)t;
    return NULL;
}
#endif
