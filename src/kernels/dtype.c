/* Data-type traits table and scalar f16/bf16 conversions. */
#include "kernels/dtype.h"

#include <string.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

/* ---- traits table, indexed by the GGML type id ---- */

#define PLAIN(nm, ctype, tof, fromf, vdt) \
    { .name = nm, .block_size = 1, .type_size = sizeof(ctype), .is_quantized = 0, \
      .to_float = tof, .from_float = fromf, .vec_dot_type = vdt }
#define QUANT(nm, qk, blk, tof, fromf, vdt) \
    { .name = nm, .block_size = qk, .type_size = sizeof(blk), .is_quantized = 1, \
      .to_float = tof, .from_float = fromf, .vec_dot_type = vdt }

static const npl_type_traits type_traits[NPL_TYPE_COUNT] = {
    [NPL_TYPE_F32] = PLAIN("f32", float, npl_f32_to_f32_row, npl_f32_to_f32_copy, NPL_TYPE_F32),
    [NPL_TYPE_F16] = PLAIN("f16", uint16_t, npl_f16_to_f32_row, npl_f32_to_f16_row, NPL_TYPE_F16),
    [NPL_TYPE_BF16] = PLAIN("bf16", uint16_t, npl_bf16_to_f32_row, npl_f32_to_bf16_row, NPL_TYPE_BF16),
    [NPL_TYPE_Q4_0] = QUANT("q4_0", QK4_0, block_q4_0, npl_dequantize_row_q4_0,
                            npl_quantize_row_q4_0_ref, NPL_TYPE_Q8_0),
    [NPL_TYPE_Q4_1] = QUANT("q4_1", QK4_1, block_q4_1, npl_dequantize_row_q4_1,
                            npl_quantize_row_q4_1_ref, NPL_TYPE_Q8_1),
    [NPL_TYPE_Q5_0] = QUANT("q5_0", QK5_0, block_q5_0, npl_dequantize_row_q5_0,
                            npl_quantize_row_q5_0_ref, NPL_TYPE_Q8_0),
    [NPL_TYPE_Q5_1] = QUANT("q5_1", QK5_1, block_q5_1, npl_dequantize_row_q5_1,
                            npl_quantize_row_q5_1_ref, NPL_TYPE_Q8_1),
    [NPL_TYPE_Q8_0] = QUANT("q8_0", QK8_0, block_q8_0, npl_dequantize_row_q8_0,
                            npl_quantize_row_q8_0_ref, NPL_TYPE_Q8_0),
    [NPL_TYPE_Q8_1] = QUANT("q8_1", QK8_1, block_q8_1, npl_dequantize_row_q8_1,
                            npl_quantize_row_q8_1_ref, NPL_TYPE_Q8_1),
    [NPL_TYPE_Q2_K] = QUANT("q2_K", QK_K, block_q2_K, npl_dequantize_row_q2_K,
                            npl_quantize_row_q2_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_Q3_K] = QUANT("q3_K", QK_K, block_q3_K, npl_dequantize_row_q3_K,
                            npl_quantize_row_q3_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_Q4_K] = QUANT("q4_K", QK_K, block_q4_K, npl_dequantize_row_q4_K,
                            npl_quantize_row_q4_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_Q5_K] = QUANT("q5_K", QK_K, block_q5_K, npl_dequantize_row_q5_K,
                            npl_quantize_row_q5_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_Q6_K] = QUANT("q6_K", QK_K, block_q6_K, npl_dequantize_row_q6_K,
                            npl_quantize_row_q6_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_Q8_K] = QUANT("q8_K", QK_K, block_q8_K, npl_dequantize_row_q8_K,
                            npl_quantize_row_q8_K_ref, NPL_TYPE_Q8_K),
    [NPL_TYPE_IQ4_NL] = QUANT("iq4_nl", QK4_NL, block_iq4_nl, npl_dequantize_row_iq4_nl,
                              npl_quantize_row_iq4_nl, NPL_TYPE_Q8_0),
    [NPL_TYPE_IQ4_XS] = QUANT("iq4_xs", QK_K, block_iq4_xs, npl_dequantize_row_iq4_xs,
                              npl_quantize_row_iq4_xs, NPL_TYPE_Q8_K),
    [NPL_TYPE_MXFP4] = QUANT("mxfp4", QK_MXFP4, block_mxfp4, npl_dequantize_row_mxfp4,
                             npl_quantize_row_mxfp4_ref, NPL_TYPE_Q8_0),
    /* Integer types carry data (token ids, positions), not weights. */
    [NPL_TYPE_I8] = PLAIN("i8", int8_t, NULL, NULL, NPL_TYPE_I8),
    [NPL_TYPE_I16] = PLAIN("i16", int16_t, NULL, NULL, NPL_TYPE_I16),
    [NPL_TYPE_I32] = PLAIN("i32", int32_t, NULL, NULL, NPL_TYPE_I32),
    [NPL_TYPE_I64] = PLAIN("i64", int64_t, NULL, NULL, NPL_TYPE_I64),
    [NPL_TYPE_F64] = PLAIN("f64", double, npl_f64_to_f32_row, NULL, NPL_TYPE_F64),
};

const npl_type_traits *npl_type_get(int type) {
    if (type < 0 || type >= NPL_TYPE_COUNT) return NULL;
    const npl_type_traits *t = &type_traits[type];
    return t->name ? t : NULL;
}

const char *npl_type_name(int type) {
    const npl_type_traits *t = npl_type_get(type);
    return t ? t->name : "?";
}

int npl_row_size(npl_type t, int64_t n, size_t *out) {
    const npl_type_traits *tr = npl_type_get((int)t);
    if (!tr || n < 0 || n % tr->block_size != 0) return 1;
    uint64_t blocks = (uint64_t)(n / tr->block_size);
    size_t r;
    if (blocks > SIZE_MAX || __builtin_mul_overflow((size_t)blocks, tr->type_size, &r)) return 1;
    *out = r;
    return 0;
}

/* ---- f16 / bf16 ---- */

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float npl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24 is exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) return bits_f32(sign | 0x7F800000u | (mant << 13));
    return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t npl_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
    if (ax >= 0x47800000u) return sign | 0x7C00; /* >= 65536: inf */
    if (ax >= 0x38800000u) { /* normal half; the carry may round up to inf */
        uint32_t r = ax - (112u << 23);
        r += 0xFFF + ((r >> 13) & 1);
        return (uint16_t)(sign | (r >> 13));
    }
    if (ax <= 0x33000000u) return sign; /* <= 2^-25 rounds (to even) to zero */
    /* subnormal half: round m * 2^(e-150) to a multiple of 2^-24 */
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7FFFFF) | 0x800000;
    uint32_t shift = 126 - e;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

float npl_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t npl_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 64); /* quiet NaN */
    return (uint16_t)((u + (0x7FFF + ((u >> 16) & 1))) >> 16);
}

/* ---- plain-type rows ---- */

void npl_f16_to_f32_row(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = npl_f16_to_f32(h[i]);
}
void npl_bf16_to_f32_row(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = npl_bf16_to_f32(h[i]);
}
void npl_f32_to_f32_row(const void *x, float *y, int64_t n) {
    memmove(y, x, (size_t)n * sizeof(float));
}
void npl_f64_to_f32_row(const void *x, float *y, int64_t n) {
    const double *d = x;
    for (int64_t i = 0; i < n; i++) y[i] = (float)d[i];
}
void npl_f32_to_f16_row(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = npl_f32_to_f16(x[i]);
}
void npl_f32_to_bf16_row(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = npl_f32_to_bf16(x[i]);
}
void npl_f32_to_f32_copy(const float *x, void *y, int64_t n) {
    memmove(y, x, (size_t)n * sizeof(float));
}
