/* Plain C dot products of the 4-bit table quants: iq4_nl and mxfp4 rows
 * with q8_0, iq4_xs rows with q8_K, as llama.cpp's ggml_vec_dot_*_generic:
 * an integer sum per block of 32 (levels from the type's table times the
 * activation quants), scaled and accumulated in f32. */
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"

static void dot_iq4_nl_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK4_NL; i++) {
        const float d = npl_f16_to_f32(y[i].d) * npl_f16_to_f32(x[i].d);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < QK4_NL / 2; j++) {
            sumi1 += y[i].qs[j] * npl_kvalues_iq4nl[x[i].qs[j] & 0xF];
            sumi2 += y[i].qs[j + QK4_NL / 2] * npl_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
        sumf += d * (sumi1 + sumi2);
    }
    *s = sumf;
}

static void dot_iq4_xs_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const float d4d8 = npl_f16_to_f32(x[i].d) * y[i].d;
        const uint8_t *qs = x[i].qs;
        const int8_t *q8 = y[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 16, q8 += 32) {
            const float dl = d4d8 * npl_iq4_xs_scale(&x[i], ib);
            int sumi1 = 0, sumi2 = 0;
            for (int j = 0; j < 16; j++) {
                sumi1 += q8[j] * npl_kvalues_iq4nl[qs[j] & 0xF];
                sumi2 += q8[j + 16] * npl_kvalues_iq4nl[qs[j] >> 4];
            }
            sumf += dl * (sumi1 + sumi2);
        }
    }
    *s = sumf;
}

static void dot_mxfp4_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_MXFP4; i++) {
        const float d = npl_f16_to_f32(y[i].d) * npl_e8m0_to_f32_half(x[i].e);
        int sumi1 = 0, sumi2 = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            sumi1 += y[i].qs[j] * npl_kvalues_mxfp4[x[i].qs[j] & 0xF];
            sumi2 += y[i].qs[j + QK_MXFP4 / 2] * npl_kvalues_mxfp4[x[i].qs[j] >> 4];
        }
        sumf += d * (sumi1 + sumi2);
    }
    *s = sumf;
}

void npl_kernels_fill_generic_iq4(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_MXFP4] = dot_mxfp4_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_NL] = dot_iq4_nl_q8_0;
    k->vec_dot[NPL_TYPE_IQ4_XS] = dot_iq4_xs_q8_K;
}
