/* Row converters behind the dtype traits table (internal). Each takes n
 * elements, n a multiple of the type's block size. Dequantizers mirror
 * llama.cpp's dequantize_row_*, quantizers its quantize_row_*_ref, so that
 * files and activations we produce are bit-identical to llama.cpp's. */
#ifndef NPL_QUANT_H
#define NPL_QUANT_H
#include <stdint.h>

/* to_float */
void npl_f16_to_f32_row(const void *x, float *y, int64_t n);
void npl_bf16_to_f32_row(const void *x, float *y, int64_t n);
void npl_f32_to_f32_row(const void *x, float *y, int64_t n);
void npl_f64_to_f32_row(const void *x, float *y, int64_t n);
void npl_dequantize_row_q4_0(const void *x, float *y, int64_t n);
void npl_dequantize_row_q4_1(const void *x, float *y, int64_t n);
void npl_dequantize_row_q5_0(const void *x, float *y, int64_t n);
void npl_dequantize_row_q5_1(const void *x, float *y, int64_t n);
void npl_dequantize_row_q8_0(const void *x, float *y, int64_t n);
void npl_dequantize_row_q8_1(const void *x, float *y, int64_t n);
void npl_dequantize_row_q2_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_q3_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_q4_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_q5_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_q6_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_q8_K(const void *x, float *y, int64_t n);
void npl_dequantize_row_iq4_nl(const void *x, float *y, int64_t n);
void npl_dequantize_row_iq4_xs(const void *x, float *y, int64_t n);
void npl_dequantize_row_mxfp4(const void *x, float *y, int64_t n);

/* from_float */
void npl_f32_to_f16_row(const float *x, void *y, int64_t n);
void npl_f32_to_bf16_row(const float *x, void *y, int64_t n);
void npl_f32_to_f32_copy(const float *x, void *y, int64_t n);
void npl_quantize_row_q4_0_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q4_1_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q5_0_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q5_1_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q8_0_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q8_1_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q2_K_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q3_K_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q4_K_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q5_K_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q6_K_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_q8_K_ref(const float *x, void *y, int64_t n);
/* iq4_nl / iq4_xs as llama.cpp writes files without an importance matrix
 * (quantize_iq4_nl / quantize_iq4_xs, ggml_quantize_chunk: 7 scale trials
 * per block); the _ref one is quantize_row_iq4_nl_ref (no trials). */
void npl_quantize_row_iq4_nl(const float *x, void *y, int64_t n);
void npl_quantize_row_iq4_nl_ref(const float *x, void *y, int64_t n);
void npl_quantize_row_iq4_xs(const float *x, void *y, int64_t n);
void npl_quantize_row_mxfp4_ref(const float *x, void *y, int64_t n);

/* 6-bit scale/min pair j (0..7) of a q4_K / q5_K block's 12 scale bytes. */
static inline void npl_get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* The 16 signed 6-bit scales of a q3_K block, unpacked (value - 32). */
static inline void npl_q3_K_scales(const uint8_t *s, int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

#endif
