/* Plain C dot products for every (weight type, activation type) pair, the
 * always-available fallback and the reference the SIMD kernels are tested
 * against. Integer sums per block, float accumulation across blocks, as in
 * llama.cpp's generic kernels. */
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_impl.h"

#define H2F(h) npl_f16_to_f32(h)

/* ---- 32-element blocks ---- */

static void dot_q4_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0 / 2; j++) {
            sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK8_0 / 2];
        }
        sumf += sumi * H2F(x[i].d) * H2F(y[i].d);
    }
    *s = sumf;
}

static void dot_q4_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_1 / 2; j++) {
            sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + QK8_1 / 2];
        }
        /* y.s = y.d * sum(y.qs) carries the min term */
        sumf += H2F(x[i].d) * H2F(y[i].d) * sumi + H2F(x[i].m) * H2F(y[i].s);
    }
    *s = sumf;
}

static void dot_q5_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        int sumi = 0;
        for (int j = 0; j < QK8_0 / 2; j++) {
            const int h0 = ((qh >> j) << 4) & 0x10;
            const int h1 = (qh >> (j + 12)) & 0x10;
            sumi += (((x[i].qs[j] & 0x0F) | h0) - 16) * y[i].qs[j];
            sumi += (((x[i].qs[j] >> 4) | h1) - 16) * y[i].qs[j + QK8_0 / 2];
        }
        sumf += sumi * H2F(x[i].d) * H2F(y[i].d);
    }
    *s = sumf;
}

static void dot_q5_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        int sumi = 0;
        for (int j = 0; j < QK8_1 / 2; j++) {
            const int h0 = ((qh >> j) << 4) & 0x10;
            const int h1 = (qh >> (j + 12)) & 0x10;
            sumi += ((x[i].qs[j] & 0x0F) | h0) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) | h1) * y[i].qs[j + QK8_1 / 2];
        }
        sumf += H2F(x[i].d) * H2F(y[i].d) * sumi + H2F(x[i].m) * H2F(y[i].s);
    }
    *s = sumf;
}

static void dot_q8_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_0; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sumf += sumi * H2F(x[i].d) * H2F(y[i].d);
    }
    *s = sumf;
}

static void dot_q8_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const block_q8_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_1; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sumf += sumi * H2F(x[i].d) * H2F(y[i].d);
    }
    *s = sumf;
}

/* ---- K-quants against q8_K ---- */

static void dot_q2_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *q2 = x[i].qs, *sc = x[i].scales;
        const int8_t *q8 = y[i].qs;
        int summs = 0;
        for (int j = 0; j < 16; j++) summs += y[i].bsums[j] * (sc[j] >> 4);
        int isum = 0, is = 0;
        for (int h = 0; h < QK_K / 128; h++, q2 += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++, is++) {
                    int sub = 0;
                    for (int l = 0; l < 16; l++) sub += q8[l] * ((q2[l + 16 * half] >> shift) & 3);
                    isum += (sc[is] & 0xF) * sub;
                    q8 += 16;
                }
            }
        }
        const float dall = y[i].d * H2F(x[i].d), dmin = y[i].d * H2F(x[i].dmin);
        sumf += dall * isum - dmin * summs;
    }
    *s = sumf;
}

static void dot_q3_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int8_t sc[16];
        npl_q3_K_scales(x[i].scales, sc);
        const uint8_t *q3 = x[i].qs, *hm = x[i].hmask;
        const int8_t *q8 = y[i].qs;
        uint8_t m = 1;
        int isum = 0, is = 0;
        for (int h = 0; h < QK_K / 128; h++, q3 += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int half = 0; half < 2; half++, is++) {
                    int sub = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        sub += *q8++ * (((q3[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                    isum += sc[is] * sub;
                }
            }
        }
        sumf += H2F(x[i].d) * y[i].d * isum;
    }
    *s = sumf;
}

static void dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int isum = 0, summs = 0;
        for (int j = 0; j < QK_K / 64; j++, q4 += 32, q8 += 64) {
            uint8_t sc0, m0, sc1, m1;
            npl_get_scale_min_k4(2 * j, x[i].scales, &sc0, &m0);
            npl_get_scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += (q4[l] & 0xF) * q8[l];
                hi += (q4[l] >> 4) * q8[l + 32];
            }
            isum += sc0 * lo + sc1 * hi;
            summs += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
                     m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
        }
        sumf += y[i].d * H2F(x[i].d) * isum - y[i].d * H2F(x[i].dmin) * summs;
    }
    *s = sumf;
}

static void dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *q5 = x[i].qs, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        int isum = 0, summs = 0;
        for (int j = 0; j < QK_K / 64; j++, q5 += 32, q8 += 64) {
            uint8_t sc0, m0, sc1, m1;
            npl_get_scale_min_k4(2 * j, x[i].scales, &sc0, &m0);
            npl_get_scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += ((q5[l] & 0xF) | (((qh[l] >> (2 * j)) & 1) << 4)) * q8[l];
                hi += ((q5[l] >> 4) | (((qh[l] >> (2 * j + 1)) & 1) << 4)) * q8[l + 32];
            }
            isum += sc0 * lo + sc1 * hi;
            summs += m0 * (y[i].bsums[4 * j] + y[i].bsums[4 * j + 1]) +
                     m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
        }
        sumf += y[i].d * H2F(x[i].d) * isum - y[i].d * H2F(x[i].dmin) * summs;
    }
    *s = sumf;
}

static void dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales, *q8 = y[i].qs;
        int isum = 0;
        for (int h = 0; h < QK_K / 128; h++, ql += 64, qh += 32, sc += 8, q8 += 128) {
            int sub[8] = {0};
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                sub[is + 0] += (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32) * q8[l];
                sub[is + 2] += (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32) * q8[l + 32];
                sub[is + 4] += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * q8[l + 64];
                sub[is + 6] += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * q8[l + 96];
            }
            for (int k = 0; k < 8; k++) isum += sc[k] * sub[k];
        }
        sumf += H2F(x[i].d) * y[i].d * isum;
    }
    *s = sumf;
}

static void dot_q8_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const block_q8_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / QK_K; i++) {
        int sumi = 0;
        for (int j = 0; j < QK_K; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sumf += x[i].d * y[i].d * sumi;
    }
    *s = sumf;
}

/* ---- plain types; double accumulation as llama.cpp's scalar path ---- */

static void dot_f32(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)x[i] * y[i];
    *s = (float)sum;
}

static void dot_f16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)npl_f16_to_f32(x[i]) * npl_f16_to_f32(y[i]);
    *s = (float)sum;
}

static void dot_bf16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)npl_bf16_to_f32(x[i]) * npl_bf16_to_f32(y[i]);
    *s = (float)sum;
}

void npl_kernels_fill_generic(npl_kernels *k) {
    k->vec_dot[NPL_TYPE_F32] = dot_f32;
    k->vec_dot[NPL_TYPE_F16] = dot_f16;
    k->vec_dot[NPL_TYPE_BF16] = dot_bf16;
    k->vec_dot[NPL_TYPE_Q4_0] = dot_q4_0_q8_0;
    k->vec_dot[NPL_TYPE_Q4_1] = dot_q4_1_q8_1;
    k->vec_dot[NPL_TYPE_Q5_0] = dot_q5_0_q8_0;
    k->vec_dot[NPL_TYPE_Q5_1] = dot_q5_1_q8_1;
    k->vec_dot[NPL_TYPE_Q8_0] = dot_q8_0_q8_0;
    k->vec_dot[NPL_TYPE_Q8_1] = dot_q8_1_q8_1;
    k->vec_dot[NPL_TYPE_Q2_K] = dot_q2_K_q8_K;
    k->vec_dot[NPL_TYPE_Q3_K] = dot_q3_K_q8_K;
    k->vec_dot[NPL_TYPE_Q4_K] = dot_q4_K_q8_K;
    k->vec_dot[NPL_TYPE_Q5_K] = dot_q5_K_q8_K;
    k->vec_dot[NPL_TYPE_Q6_K] = dot_q6_K_q8_K;
    k->vec_dot[NPL_TYPE_Q8_K] = dot_q8_K_q8_K;
    npl_kernels_fill_generic_iq4(k);

    /* indexed by the destination (vec_dot) type */
    k->quantize_row[NPL_TYPE_F32] = npl_f32_to_f32_copy;
    k->quantize_row[NPL_TYPE_F16] = npl_f32_to_f16_row;
    k->quantize_row[NPL_TYPE_BF16] = npl_f32_to_bf16_row;
    k->quantize_row[NPL_TYPE_Q8_0] = npl_quantize_row_q8_0_ref;
    k->quantize_row[NPL_TYPE_Q8_1] = npl_quantize_row_q8_1_ref;
    k->quantize_row[NPL_TYPE_Q8_K] = npl_quantize_row_q8_K_ref;
}
