/* vnpu matmul: packed weight layouts, the kernel interface and the shared
 * epilogues.
 *
 * Packed layout (the same for every kernel family, so a pack is made once
 * per context): columns in panels of 16; within a panel, k runs in groups of
 * G elements (G = 4 for int8, 2 for int16 and bf16, 1 for f32 and f16) and
 * each row of a panel holds one group for all 16 columns:
 *     element (k, c) at panel c/16, byte ((k/G)*16 + c%16)*G + k%G (times esize)
 * For int8 this is exactly AMX's TDPBSSD B-tile layout (16 rows of 64 bytes
 * per 64 k) and one VNNI register per 4 k; for bf16 it is TDPBF16PS's.
 * K is padded with zeros to kpad (a multiple of 64, or of the quant block
 * for per-block weights); columns to npad (per part, a multiple of 32).
 *
 * Int formats carry per (k-block, column) f32 scales, optional f32 offsets
 * (float = (q + offset) * scale) and, for int8, column sums of q (for the
 * VNNI u8 x s8 form). A pack may hold two parts side by side (gate and up
 * weights of a fused gated MatMul) and a f32 bias per column. */
#ifndef NPL_VNPU_MM_H
#define NPL_VNPU_MM_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/gemm.h"

typedef enum { VNPU_FAM_GENERIC = 0, VNPU_FAM_AVX2, VNPU_FAM_AVX512, VNPU_FAM_AMX, VNPU_FAM_COUNT } vnpu_family;

/* I16S: int16 weights split into a signed high byte and an unsigned low byte
 * (w = hi * 256 + lo), each plane in the int8 layout: a panel holds the hi
 * plane (kpad * 16 bytes) then the lo plane. Made for the AMX family, whose
 * tiles multiply bytes only. */
/* GGML: GGML block weights (Q4_0 .. Q6_K, [N, K]) used as they are, the
 * bytes of the STATIC tensor itself (no copy, nothing in the pack's data but
 * an optional bias): the kernels dequantize exactly what the model file
 * holds, with the activations quantized to the type's dot partner (Q8_0,
 * Q8_K, ...) like the CPU path (vnpu_matmul_ggml). Two parts of the same
 * type and shape (gate and up) may share one pack: npad = n[0] + n[1],
 * col0[1] = n[0], no padding. */
typedef enum {
    VNPU_PK_RAW = 0, VNPU_PK_F32, VNPU_PK_F16, VNPU_PK_BF16, VNPU_PK_I8, VNPU_PK_I16, VNPU_PK_I16S, VNPU_PK_GGML,
    VNPU_PK_COUNT
} vnpu_pk_fmt;

#define VNPU_NOFF UINT64_MAX
#define VNPU_PANEL 16
#define VNPU_BLOCK 32 /* rows and columns of one kernel block */

typedef struct {
    uint32_t fmt;
    uint32_t n_parts;        /* 1, or 2 for gate + up */
    uint32_t w[2], b[2];     /* weight and bias tensor ids per part (b: UINT32_MAX = none) */
    uint32_t trans;          /* weights given as [N, K] */
    int64_t k, kpad, bk, nblk; /* reduction size, padded size, k-block, blocks */
    int64_t n[2], col0[2];   /* columns of each part and where they start */
    int64_t npad;
    uint64_t off_w, off_scale, off_offs, off_wsum, off_bias, size; /* within data */
    const uint8_t *data;
    uint8_t *owned;
    /* GGML packs (not stored: derived from the weight tensor) */
    int32_t gtype;           /* npl_type of the blocks */
    const uint8_t *wraw;     /* the tensor's bytes: N rows of K / block blocks */
    const uint8_t *wraw1;    /* part 1's (gate + up of one type and shape), or NULL */
} vnpu_pack;

/* How a kernel wants its activations prepared. */
typedef enum {
    VNPU_ACT_F32 = 0,  /* f32 */
    VNPU_ACT_F16R,     /* f32 holding values rounded to f16 */
    VNPU_ACT_BF16R,    /* f32 holding values rounded to bf16 */
    VNPU_ACT_BF16,     /* bf16 */
    VNPU_ACT_I8,       /* int8, per-row scale, symmetric +-127 */
    VNPU_ACT_I16,      /* int16, per-row scale, symmetric +-32767 */
    VNPU_ACT_I16S      /* int16 as above, stored split: kpad high bytes (s8), then kpad low bytes (u8) */
} vnpu_act;

typedef struct {
    const vnpu_pack *pk;
    const uint8_t *x;        /* prepared activations: mpad rows of x_stride bytes, kpad elements */
    int64_t x_stride;
    const float *xs;         /* int: [mpad][nblk] scales per row and k-block */
    const float *xsum;       /* int: [mpad][nblk] sums of the quantized row per k-block */
    float *y;                /* output rows */
    int64_t y_stride;        /* floats */
    int64_t m;               /* valid rows */
    int64_t ncols;           /* columns written: c < ncols */
} vnpu_mm_job;

/* Rows [r0, r1) and columns [c0, c1), both multiples of VNPU_BLOCK (r1 may
 * exceed m: padded rows are computed, never written). */
typedef void (*vnpu_mm_fn)(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/* Prepares one activation row of k floats for `act` into dst (kpad
 * elements, zero-padded). Int kinds: symmetric, round-to-nearest-even, one
 * scale per k-block of the weights (like ggml's q8_0 x q8_0 dot: a per-row
 * scale loses the small values of a row with outliers):
 * xs[b] = amax_b / qmax, xsum[b] = sum of the quantized values of block b.
 * For int8 the scale is rounded to f16 after quantizing, as q8_0 stores it,
 * so a q8_0 / q5_0 weight matmul gives the CPU path's numbers. */
typedef void (*vnpu_prep_fn)(int act, const float *x, int64_t k, int64_t kpad, int64_t bk, uint8_t *dst, float *xs,
                             float *xsum);

/* One activation row (m = 1, decode): columns [c0, c1), multiples of
 * VNPU_BLOCK; no padding rows are computed. */
typedef void (*vnpu_gemv_fn)(const vnpu_mm_job *j, int64_t c0, int64_t c1);

typedef struct {
    vnpu_mm_fn fn[VNPU_PK_COUNT];
    vnpu_gemv_fn gemv[VNPU_PK_COUNT]; /* NULL: fn over a padded block of rows */
    uint8_t act[VNPU_PK_COUNT];
    const char *kname[VNPU_PK_COUNT];
    vnpu_prep_fn prep;
    int isa;                 /* npl_isa of the family, for GGML packs */
} vnpu_mm_table;

/* The scale of a quantized block (see vnpu_prep_fn). */
static inline float vnpu_act_scale(float amax, float lim) {
    const float d = amax > 0.0f ? amax / lim : 0.0f;
    return lim == 127.0f ? npl_f16_to_f32(npl_f32_to_f16(d)) : d;
}

/* The generic row preparation (the reference the ISA versions match). */
void vnpu_prep_generic(int act, const float *x, int64_t k, int64_t kpad, int64_t bk, uint8_t *dst, float *xs,
                       float *xsum);

void vnpu_mm_fill_generic(vnpu_mm_table *t);
void vnpu_mm_fill_avx2(vnpu_mm_table *t);
void vnpu_mm_fill_avx512(vnpu_mm_table *t);
void vnpu_mm_fill_amx(vnpu_mm_table *t);

static inline int vnpu_pk_group(uint32_t fmt) {
    return (fmt == VNPU_PK_I8 || fmt == VNPU_PK_I16S) ? 4 : (fmt == VNPU_PK_I16 || fmt == VNPU_PK_BF16) ? 2 : 1;
}
static inline size_t vnpu_pk_esize(uint32_t fmt) {
    return fmt == VNPU_PK_F32 ? 4 : fmt == VNPU_PK_I8 ? 1 : 2;
}
static inline int vnpu_pk_is_int(uint32_t fmt) {
    return fmt == VNPU_PK_I8 || fmt == VNPU_PK_I16 || fmt == VNPU_PK_I16S;
}
static inline size_t vnpu_pk_panel_bytes(const vnpu_pack *p) {
    return (size_t)p->kpad * VNPU_PANEL * vnpu_pk_esize(p->fmt);
}
static inline const uint8_t *vnpu_pk_panel(const vnpu_pack *p, int64_t col) {
    return p->data + p->off_w + (size_t)(col / VNPU_PANEL) * vnpu_pk_panel_bytes(p);
}

/* ---- shared epilogues (plain C; each ISA file compiles them with its flags) ---- */

/* facc[r][c] (+)= int block b of acc (rows x 32, row stride 32) dequantized.
 * xbias: 128 when the kernel fed x as u8 = q + 128 (VNNI), else 0. */
static inline void vnpu_epi_int(const vnpu_mm_job *j, const int32_t *acc, float *facc, int64_t r0, int rows,
                                int64_t c0, int64_t b, int32_t xbias, int first) {
    const vnpu_pack *p = j->pk;
    const float *sc = (const float *)(p->data + p->off_scale) + b * p->npad + c0;
    const float *of = p->off_offs != VNPU_NOFF ? (const float *)(p->data + p->off_offs) + b * p->npad + c0 : NULL;
    const int32_t *ws = p->off_wsum != VNPU_NOFF ? (const int32_t *)(p->data + p->off_wsum) + b * p->npad + c0 : NULL;
    for (int r = 0; r < rows; r++) {
        const float xs = j->xs[(r0 + r) * p->nblk + b], xsum = j->xsum[(r0 + r) * p->nblk + b];
        const int32_t *a = acc + r * VNPU_BLOCK;
        float *f = facc + r * VNPU_BLOCK;
        for (int c = 0; c < VNPU_BLOCK; c++) {
            int32_t v = a[c] - (ws ? xbias * ws[c] : 0);
            float t = xs * sc[c] * ((float)v + (of ? of[c] * xsum : 0.0f));
            f[c] = first ? t : f[c] + t;
        }
    }
}

/* Like vnpu_epi_int for float-accumulated int products (int16 kernels). */
static inline void vnpu_epi_intf(const vnpu_mm_job *j, const float *acc, float *facc, int64_t r0, int rows,
                                 int64_t c0, int64_t b, int first) {
    const vnpu_pack *p = j->pk;
    const float *sc = (const float *)(p->data + p->off_scale) + b * p->npad + c0;
    const float *of = p->off_offs != VNPU_NOFF ? (const float *)(p->data + p->off_offs) + b * p->npad + c0 : NULL;
    for (int r = 0; r < rows; r++) {
        const float xs = j->xs[(r0 + r) * p->nblk + b], xsum = j->xsum[(r0 + r) * p->nblk + b];
        const float *a = acc + r * VNPU_BLOCK;
        float *f = facc + r * VNPU_BLOCK;
        for (int c = 0; c < VNPU_BLOCK; c++) {
            float t = xs * sc[c] * (a[c] + (of ? of[c] * xsum : 0.0f));
            f[c] = first ? t : f[c] + t;
        }
    }
}

/* y[r0 + r][c0 + c] = facc[r][c] + bias[c] for valid rows and columns. */
static inline void vnpu_epi_store(const vnpu_mm_job *j, const float *facc, int64_t r0, int rows, int64_t c0) {
    const vnpu_pack *p = j->pk;
    const float *bias = p->off_bias != VNPU_NOFF ? (const float *)(p->data + p->off_bias) + c0 : NULL;
    int nr = rows, nc = VNPU_BLOCK;
    if (r0 + nr > j->m) nr = (int)(j->m - r0);
    if (c0 + nc > j->ncols) nc = (int)(j->ncols - c0);
    for (int r = 0; r < nr; r++) {
        float *y = j->y + (r0 + r) * j->y_stride + c0;
        const float *f = facc + r * VNPU_BLOCK;
        if (bias)
            for (int c = 0; c < nc; c++) y[c] = f[c] + bias[c];
        else
            for (int c = 0; c < nc; c++) y[c] = f[c];
    }
}

#endif
