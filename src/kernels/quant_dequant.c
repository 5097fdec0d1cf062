/* Dequantizers (to_float) for every block type, mirroring llama.cpp's
 * dequantize_row_* so results are bit-identical. */
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

#define H2F(h) npl_f16_to_f32(h)

void npl_dequantize_row_q4_0(const void *vx, float *y, int64_t n) {
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[i * QK4_0 + j] = ((x[i].qs[j] & 0x0F) - 8) * d;
            y[i * QK4_0 + j + QK4_0 / 2] = ((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void npl_dequantize_row_q4_1(const void *vx, float *y, int64_t n) {
    const block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / QK4_1; i++) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            y[i * QK4_1 + j] = (x[i].qs[j] & 0x0F) * d + m;
            y[i * QK4_1 + j + QK4_1 / 2] = (x[i].qs[j] >> 4) * d + m;
        }
    }
}

void npl_dequantize_row_q5_0(const void *vx, float *y, int64_t n) {
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / QK5_0; i++) {
        const float d = H2F(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = ((qh >> j) << 4) & 0x10;
            const int h1 = (qh >> (j + 12)) & 0x10;
            y[i * QK5_0 + j] = (((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[i * QK5_0 + j + QK5_0 / 2] = (((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void npl_dequantize_row_q5_1(const void *vx, float *y, int64_t n) {
    const block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / QK5_1; i++) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = ((qh >> j) << 4) & 0x10;
            const int h1 = (qh >> (j + 12)) & 0x10;
            y[i * QK5_1 + j] = ((x[i].qs[j] & 0x0F) | h0) * d + m;
            y[i * QK5_1 + j + QK5_1 / 2] = ((x[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void npl_dequantize_row_q8_0(const void *vx, float *y, int64_t n) {
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[i * QK8_0 + j] = x[i].qs[j] * d;
    }
}

void npl_dequantize_row_q8_1(const void *vx, float *y, int64_t n) {
    const block_q8_1 *x = vx;
    for (int64_t i = 0; i < n / QK8_1; i++) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < QK8_1; j++) y[i * QK8_1 + j] = x[i].qs[j] * d;
    }
}

/* q2_K: 16 sub-blocks of 16; quant l of 128-half h sits in qs[32h + l%32]
 * at bit shift 2*(l/32). */
void npl_dequantize_row_q2_K(const void *vx, float *y, int64_t n) {
    const block_q2_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = H2F(x[i].d), dmin = H2F(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int h = 0; h < QK_K; h += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
                }
            }
            q += 32;
        }
    }
}

void npl_dequantize_row_q3_K(const void *vx, float *y, int64_t n) {
    const block_q3_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d_all = H2F(x[i].d);
        int8_t scales[16];
        npl_q3_K_scales(x[i].scales, scales);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int h = 0; h < QK_K; h += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * scales[is++];
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                }
                m <<= 1;
            }
            q += 32;
        }
    }
}

void npl_dequantize_row_q4_K(const void *vx, float *y, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < 8; is += 2) {
            uint8_t sc, m;
            npl_get_scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            npl_get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
        }
    }
}

void npl_dequantize_row_q5_K(const void *vx, float *y, int64_t n) {
    const block_q5_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2) {
            uint8_t sc, m;
            npl_get_scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            npl_get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            ql += 32;
            u1 <<= 2;
            u2 <<= 2;
        }
    }
}

void npl_dequantize_row_q6_K(const void *vx, float *y, int64_t n) {
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int h = 0; h < QK_K; h += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

void npl_dequantize_row_q8_K(const void *vx, float *y, int64_t n) {
    const block_q8_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++)
        for (int j = 0; j < QK_K; j++) y[i * QK_K + j] = x[i].d * x[i].qs[j];
}
