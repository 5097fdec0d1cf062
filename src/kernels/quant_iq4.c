/* iq4_nl and iq4_xs: dequantization and quantization, operation for
 * operation llama.cpp's (ggml-quants.c: dequantize_row_iq4_*,
 * quantize_row_iq4_nl_impl, quantize_iq4_nl / _xs without an importance
 * matrix, quantize_row_iq4_nl_ref). Each 4-bit code indexes the 16
 * non-uniform levels npl_kvalues_iq4nl; iq4_nl has one f16 scale per 32
 * values, iq4_xs one f16 scale per 256 and a 6-bit scale per 32. */
#include <math.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

#define GROUP_MAX_EPS 1e-15f

void npl_dequantize_row_iq4_nl(const void *vx, float *y, int64_t n) {
    const block_iq4_nl *x = vx;
    for (int64_t i = 0; i < n / QK4_NL; i++, y += QK4_NL) {
        const float d = npl_f16_to_f32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j] = d * npl_kvalues_iq4nl[x[i].qs[j] & 0xF];
            y[j + QK4_NL / 2] = d * npl_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

void npl_dequantize_row_iq4_xs(const void *vx, float *y, int64_t n) {
    const block_iq4_xs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = npl_f16_to_f32(x[i].d);
        const uint8_t *qs = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, y += 32, qs += 16) {
            const float dl = d * npl_iq4_xs_scale(&x[i], ib);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * npl_kvalues_iq4nl[qs[j] & 0xF];
                y[j + 16] = dl * npl_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

static inline int nearest_int(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* Index of the level nearest x (ties to the lower one), llama.cpp's best_index_int8. */
static inline int best_index(const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav]) mu = mav;
        else ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* llama.cpp's quantize_row_iq4_nl_impl with quant_weights NULL: per block of
 * 32 the scale with the least weighted (x^2) error among 2 * ntry + 1
 * candidates; for a super-block (iq4_xs) the block scales are then
 * quantized to 6 bits against one f16 scale. L is the caller's, kept across
 * blocks as in llama.cpp: an all-zero block without trials keeps the codes of
 * the block before (its scale is 0, so only the bytes tell). */
static void iq4_impl(int super, const float *x, uint16_t *dh, uint8_t *q4, uint16_t *scales_h, uint8_t *scales_l,
                     uint8_t *L, int ntry) {
    const int8_t *values = npl_kvalues_iq4nl;
    float scales[QK_K / 32], weight[32];
    memset(q4, 0, (size_t)super / 2);
    dh[0] = npl_f32_to_f16(0.f);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < super / 32; ib++) {
        const float *xb = x + ib * 32;
        uint8_t *Lb = L + ib * 32;
        for (int j = 0; j < 32; j++) weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            const float al = id * xb[j];
            const int l = best_index(values, al);
            Lb[j] = (uint8_t)l;
            const float q = values[l];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; itry++) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < 32; j++) {
                const float al = id * xb[j];
                const int l = best_index(values, al);
                const float q = values[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        const float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if (super / 32 > 1) {
        *scales_h = 0;
        const float d = -max_scale / 32;
        dh[0] = npl_f32_to_f16(d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < super / 32; ib++) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            uint8_t *Lb = L + ib * 32;
            const float *xb = x + ib * 32;
            for (int j = 0; j < 32; j++) Lb[j] = (uint8_t)best_index(values, idl * xb[j]);
            l += 32;
            const uint8_t l_l = l & 0xF, l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0) scales_l[ib / 2] = l_l;
            else scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            *scales_h |= (uint16_t)(l_h << 2 * (ib % 8));
        }
    } else {
        dh[0] = npl_f32_to_f16(scales[0]);
        if (ntry > 0) {
            const float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < super; j++) L[j] = (uint8_t)best_index(values, id * x[j]);
        }
    }
    for (int i = 0; i < super / 32; i++)
        for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void npl_quantize_row_iq4_nl(const float *x, void *vy, int64_t n) {
    block_iq4_nl *y = vy;
    uint16_t unused_h;
    uint8_t L[QK4_NL] = {0};
    for (int64_t i = 0; i < n / QK4_NL; i++) iq4_impl(QK4_NL, x + QK4_NL * i, &y[i].d, y[i].qs, &unused_h, NULL, L, 7);
}

void npl_quantize_row_iq4_nl_ref(const float *x, void *vy, int64_t n) {
    block_iq4_nl *y = vy;
    uint16_t unused_h;
    uint8_t L[QK4_NL] = {0};
    for (int64_t i = 0; i < n / QK4_NL; i++) iq4_impl(QK4_NL, x + QK4_NL * i, &y[i].d, y[i].qs, &unused_h, NULL, L, -1);
}

void npl_quantize_row_iq4_xs(const float *x, void *vy, int64_t n) {
    block_iq4_xs *y = vy;
    uint8_t L[QK_K] = {0};
    for (int64_t i = 0; i < n / QK_K; i++)
        iq4_impl(QK_K, x + QK_K * i, &y[i].d, y[i].qs, &y[i].scales_h, y[i].scales_l, L, 7);
}
