/* MXFP4: dequantization and the reference quantizer, operation for
 * operation llama.cpp's (ggml-quants.c: dequantize_row_mxfp4,
 * quantize_row_mxfp4_ref, which quantize_mxfp4 and so llama-quantize use).
 * A block is an E8M0 exponent e and 32 E2M1 codes; value = kvalue *
 * 2^(e - 128) with the doubled E2M1 levels npl_kvalues_mxfp4. */
#include <math.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

void npl_dequantize_row_mxfp4(const void *vx, float *y, int64_t n) {
    const block_mxfp4 *x = vx;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, y += QK_MXFP4) {
        const float d = npl_e8m0_to_f32_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j] = npl_kvalues_mxfp4[x[i].qs[j] & 0xF] * d;
            y[j + QK_MXFP4 / 2] = npl_kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}

/* The code whose value is nearest x (the first of equals), llama.cpp's best_index_mxfp4. */
static int best_index(float x, float e) {
    int best = 0;
    float best_err = fabsf(npl_kvalues_mxfp4[0] * e - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(npl_kvalues_mxfp4[i] * e - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

void npl_quantize_row_mxfp4_ref(const float *x, void *vy, int64_t n) {
    block_mxfp4 *y = vy;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, x += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        /* llama.cpp converts the float straight to uint8_t; through int the
         * same for every finite amax, and defined for amax < 2^-125 */
        const uint8_t e = amax > 0.0f ? (uint8_t)(int)(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = npl_e8m0_to_f32_half(e);
        y[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            y[i].qs[j] = (uint8_t)(best_index(x[j], d) | best_index(x[j + QK_MXFP4 / 2], d) << 4);
    }
}
