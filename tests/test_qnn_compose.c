/* QNN HTP adapter: the ops a whole decoder needs beyond test_qnn_ops's set
 * (Scale, Silu, SwiGLU, GeGLU, Rope, Gather, Concat, Transpose, StridedSlice,
 * Cast / Quantize / Dequantize, MatMul with bias and rank-3 x, 4-bit
 * per-channel weights), each run by Qualcomm's HTP emulator (SM8650) on a
 * tiny shape against a double-precision reference of the exact inputs. */
#include <math.h>

#include "test_qnn_common.h"

static unsigned seed = 777;
static void fill(tspec *t, double amp) {
    for (size_t i = 0; i < qnn_elems(&t->d); i++) qnn_set(&t->d, t->data, i, amp * accel_frand(&seed));
}
static double maxerr(const tspec *t, const double *ref) {
    double m = 0;
    for (size_t i = 0; i < qnn_elems(&t->d); i++) m = fmax(m, fabs(qnn_val(&t->d, t->data, i) - ref[i]));
    return m;
}
static double V(const tspec *t, size_t i) { return qnn_val(&t->d, t->data, i); }
static npl_accel_param pf(const char *n, double v) { return (npl_accel_param){n, NPL_ACCEL_PARAM_FLOAT, 0, 0, v, 0, 0, 0}; }
static npl_accel_param pi(const char *n, int64_t v) { return (npl_accel_param){n, NPL_ACCEL_PARAM_INT, 0, v, 0, 0, 0, 0}; }
static npl_accel_param pints(const char *n, const int64_t *v, uint32_t c) {
    return (npl_accel_param){n, NPL_ACCEL_PARAM_INTS, c, 0, 0, v, 0, 0};
}

enum { NE = 256 };
static uint16_t h0[NE], h1[NE], h2[NE], ho[NE];
static float f0[NE], fo[NE];
static uint8_t u0[NE];
static double ref[NE];

static double silu(double v) { return v / (1 + exp(-v)); }
static double gelu_tanh(double v) { return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

static void test_activations(qnn_rig *r) {
    tspec x = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 4, 32, 0), h0};
    tspec u = {accel_desc("u", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 4, 32, 0), h1};
    tspec y = {accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 4, 32, 0), ho};
    fill(&x, 4), fill(&u, 2);
    npl_accel_param s = pf("scale", -0.75);
    CHECK_EQ_INT(run1(r, "Scale", &s, 1, &x, 1, &y), NPL_ACCEL_OK);
    for (int i = 0; i < 128; i++) ref[i] = -0.75 * V(&x, i);
    double e = maxerr(&y, ref);
    printf("Scale f16 by -0.75: max_err %.5f\n", e);
    CHECK(e < 0.005);

    /* Scale of a uint8 tensor: the scalar is a one-level uint8 constant */
    static const float xs = 4.0f / 255, ys = 2.0f / 255;
    static const int32_t xo = -128, yo = -128;
    tspec xq = {accel_desc("xq", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_UINT8, 2, 4, 32, 0), u0};
    xq.d.quant = qnn_pt(&xs, &xo);
    static uint8_t uo[128];
    tspec yq = {accel_desc("yq", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_UINT8, 2, 4, 32, 0), uo};
    yq.d.quant = qnn_pt(&ys, &yo);
    fill(&xq, 2);
    s.f = 0.5;
    CHECK_EQ_INT(run1(r, "Scale", &s, 1, &xq, 1, &yq), NPL_ACCEL_OK);
    for (int i = 0; i < 128; i++) ref[i] = 0.5 * V(&xq, i);
    e = maxerr(&yq, ref);
    printf("Scale uint8 by 0.5 (out step %.4f): max_err %.5f\n", ys, e);
    CHECK(e < 1.01 * ys);

    CHECK_EQ_INT(run1(r, "Silu", NULL, 0, &x, 1, &y), NPL_ACCEL_OK);
    for (int i = 0; i < 128; i++) ref[i] = silu(V(&x, i));
    e = maxerr(&y, ref);
    printf("Silu f16: max_err %.5f\n", e);
    CHECK(e < 0.01);

    tspec gu[2] = {x, u};
    CHECK_EQ_INT(run1(r, "SwiGLU", NULL, 0, gu, 2, &y), NPL_ACCEL_OK);
    for (int i = 0; i < 128; i++) ref[i] = silu(V(&x, i)) * V(&u, i);
    e = maxerr(&y, ref);
    printf("SwiGLU f16: max_err %.5f\n", e);
    CHECK(e < 0.02);

    CHECK_EQ_INT(run1(r, "GeGLU", NULL, 0, gu, 2, &y), NPL_ACCEL_OK);
    for (int i = 0; i < 128; i++) ref[i] = gelu_tanh(V(&x, i)) * V(&u, i);
    e = maxerr(&y, ref);
    printf("GeGLU f16 (vs the tanh form): max_err %.5f\n", e);
    CHECK(e < 0.02);

    /* a quantized gate is refused (its intermediates would need scales), with the reason */
    tspec gq[2] = {xq, xq};
    gq[1].d.name = "xq2";
    CHECK_EQ_INT(run1(r, "SwiGLU", NULL, 0, gq, 2, &yq), NPL_ACCEL_ERR_UNSUPPORTED);
    CHECK(strstr(r->api->last_error(r->be), "quantized") != NULL);
}

/* llama.cpp's rope on x [S, H, D] in double: pair i turned by pos * freq_scale * base^(-2i/n_rot) / ff[i]. */
static void ref_rope(const tspec *x, const int32_t *pos, int S, int H, int D, int n_rot, int neox, double base, double fs,
                     double af, const float *ff) {
    for (int p = 0; p < S; p++)
        for (int h = 0; h < H; h++) {
            const size_t o = ((size_t)p * H + h) * D;
            for (int d = 0; d < D; d++) ref[o + d] = V(x, o + d);
            if (pos[p] < 0) continue;
            for (int i = 0; i < n_rot / 2; i++) {
                double th = pos[p] * fs * pow(base, -2.0 * i / n_rot) / (ff ? ff[i] : 1);
                int i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
                double a = V(x, o + i0), b = V(x, o + i1), c = cos(th) * af, s = sin(th) * af;
                ref[o + i0] = a * c - b * s, ref[o + i1] = a * s + b * c;
            }
        }
}

static void test_rope(qnn_rig *r) {
    enum { S = 4, H = 2, D = 16 };
    static int32_t pos[S] = {0, 7, 1000, -1};
    tspec p = {accel_desc("pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0), pos};
    /* neox, partial rotation (n_rot 8 of 16), f32, freq_scale and attn_factor */
    tspec x = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 3, S, H, D), f0};
    tspec y = {accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 3, S, H, D), fo};
    fill(&x, 1);
    npl_accel_param prm[5] = {pi("n_rot", 8), pi("neox", 1), pf("base", 10000), pf("freq_scale", 0.5), pf("attn_factor", 1.25)};
    tspec in[3] = {x, p};
    CHECK_EQ_INT(run1(r, "Rope", prm, 5, in, 2, &y), NPL_ACCEL_OK);
    ref_rope(&x, pos, S, H, D, 8, 1, 10000, 0.5, 1.25, NULL);
    double e = maxerr(&y, ref);
    printf("Rope neox n_rot 8/16 f32, positions 0 7 1000 -1: max_err %.5f\n", e);
    CHECK(e < 0.01);
    CHECK_NEAR(fo[(3 * H + 1) * D + 2], f0[(3 * H + 1) * D + 2], 1e-3); /* position -1: unchanged (f16 compute) */

    /* interleaved pairs, f16, all dims rotated, freq_factors */
    static float ff[D / 2];
    for (int i = 0; i < D / 2; i++) ff[i] = 1.0f + 0.5f * i;
    tspec xh = {accel_desc("xh", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 3, S, H, D), h0};
    tspec yh = {accel_desc("yh", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 3, S, H, D), ho};
    tspec f = {accel_desc("ff", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, 1, D / 2, 0, 0), ff};
    fill(&xh, 1);
    tspec in3[3] = {xh, p, f};
    npl_accel_param base = pf("base", 500);
    CHECK_EQ_INT(run1(r, "Rope", &base, 1, in3, 3, &yh), NPL_ACCEL_OK);
    ref_rope(&xh, pos, S, H, D, D, 0, 500, 1, 1, ff);
    e = maxerr(&yh, ref);
    printf("Rope interleaved f16 with freq_factors: max_err %.5f\n", e);
    CHECK(e < 0.01);
}

static void test_layout(qnn_rig *r) {
    /* Gather rows of a [10, 8] table */
    static int32_t idx[3] = {2, 9, 0};
    tspec t = {accel_desc("table", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 2, 10, 8, 0), h1};
    tspec ix = {accel_desc("idx", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, 3, 0, 0), idx};
    tspec y = {accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 3, 8, 0), ho};
    fill(&t, 3);
    tspec in[2] = {t, ix};
    CHECK_EQ_INT(run1(r, "Gather", NULL, 0, in, 2, &y), NPL_ACCEL_OK);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < 8; d++) ref[i * 8 + d] = V(&t, (size_t)idx[i] * 8 + d);
    double e = maxerr(&y, ref);
    printf("Gather f16 rows 2 9 0 of [10, 8]: max_err %.6f\n", e);
    CHECK(e == 0);

    /* Concat [2, 3] and [2, 5] along axis -1 */
    tspec a = {accel_desc("a", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 2, 3, 0), h0};
    tspec b = {accel_desc("b", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 2, 5, 0), h1};
    tspec c = {accel_desc("c", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 2, 8, 0), ho};
    fill(&a, 1), fill(&b, 1);
    npl_accel_param ax = pi("axis", -1);
    tspec ab[2] = {a, b};
    CHECK_EQ_INT(run1(r, "Concat", &ax, 1, ab, 2, &c), NPL_ACCEL_OK);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 8; j++) ref[i * 8 + j] = j < 3 ? V(&a, i * 3 + j) : V(&b, i * 5 + j - 3);
    e = maxerr(&c, ref);
    printf("Concat f16 [2,3]+[2,5] axis -1: max_err %.6f\n", e);
    CHECK(e == 0);

    /* Transpose [2, 3, 4] by perm {2, 0, 1} -> [4, 2, 3] */
    static const int64_t perm[3] = {2, 0, 1};
    tspec x = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 3, 2, 3, 4), h0};
    tspec xt = {accel_desc("xt", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 3, 4, 2, 3), ho};
    fill(&x, 1);
    npl_accel_param pp = pints("perm", perm, 3);
    CHECK_EQ_INT(run1(r, "Transpose", &pp, 1, &x, 1, &xt), NPL_ACCEL_OK);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) ref[(k * 2 + i) * 3 + j] = V(&x, (i * 3 + j) * 4 + k);
    e = maxerr(&xt, ref);
    printf("Transpose f16 [2,3,4] perm 2 0 1: max_err %.6f\n", e);
    CHECK(e == 0);

    /* StridedSlice [4, 8]: rows 1, 3 and columns 2, 5 */
    static const int64_t bg[2] = {1, 2}, en[2] = {4, 8}, stp[2] = {2, 3};
    tspec s = {accel_desc("s", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 4, 8, 0), h0};
    tspec so = {accel_desc("so", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 2, 2, 0), ho};
    fill(&s, 1);
    npl_accel_param sp[3] = {pints("begin", bg, 2), pints("end", en, 2), pints("strides", stp, 2)};
    CHECK_EQ_INT(run1(r, "StridedSlice", sp, 3, &s, 1, &so), NPL_ACCEL_OK);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) ref[i * 2 + j] = V(&s, (size_t)(1 + 2 * i) * 8 + 2 + 3 * j);
    e = maxerr(&so, ref);
    printf("StridedSlice f16 [4,8] [1:4:2, 2:8:3]: max_err %.6f\n", e);
    CHECK(e == 0);
}

static void test_casts(qnn_rig *r) {
    tspec x = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, 2, 4, 16, 0), f0};
    tspec yh = {accel_desc("yh", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, 4, 16, 0), ho};
    fill(&x, 3);
    CHECK_EQ_INT(run1(r, "Cast", NULL, 0, &x, 1, &yh), NPL_ACCEL_OK);
    for (int i = 0; i < 64; i++) ref[i] = f0[i];
    double e = maxerr(&yh, ref);
    printf("Cast f32 -> f16: max_err %.5f\n", e);
    CHECK(e < 0.002);

    static const float qs = 6.0f / 255;
    static const int32_t qo = -128;
    static uint8_t q[64];
    tspec xh = {accel_desc("xh", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, 4, 16, 0), h0};
    tspec yq = {accel_desc("yq", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_UINT8, 2, 4, 16, 0), q};
    yq.d.quant = qnn_pt(&qs, &qo);
    fill(&xh, 2.9);
    CHECK_EQ_INT(run1(r, "Quantize", NULL, 0, &xh, 1, &yq), NPL_ACCEL_OK);
    for (int i = 0; i < 64; i++) ref[i] = V(&xh, i);
    e = maxerr(&yq, ref);
    printf("Quantize f16 -> uint8 (step %.4f): max_err %.5f\n", qs, e);
    CHECK(e < 1.01 * qs); /* the emulator's Quantize is not round-to-nearest: up to one step */

    tspec xq = {accel_desc("xq", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_UINT8, 2, 4, 16, 0), u0};
    xq.d.quant = qnn_pt(&qs, &qo);
    fill(&xq, 2.9);
    tspec yf = {accel_desc("yf", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, 2, 4, 16, 0), fo};
    CHECK_EQ_INT(run1(r, "Dequantize", NULL, 0, &xq, 1, &yf), NPL_ACCEL_OK);
    for (int i = 0; i < 64; i++) ref[i] = V(&xq, i);
    e = maxerr(&yf, ref);
    printf("Dequantize uint8 -> f32: max_err %.5f\n", e);
    CHECK(e < 0.003);
    /* the direction is checked: a "Quantize" to a float type is a Cast */
    CHECK_EQ_INT(run1(r, "Quantize", NULL, 0, &x, 1, &yh), NPL_ACCEL_ERR_TYPE_MISMATCH);
    CHECK(strstr(r->api->last_error(r->be), "is a Cast") != NULL);
}

static void test_matmul_forms(qnn_rig *r) {
    enum { B = 2, M = 3, K = 32, N = 8 };
    tspec x = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 3, B, M, K), h0};
    tspec w = {accel_desc("w", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 2, K, N, 0), h1};
    tspec bias = {accel_desc("bias", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 1, N, 0, 0), h2};
    tspec y = {accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 3, B, M, N), ho};
    fill(&x, 1), fill(&w, 0.3), fill(&bias, 1);
    for (int app = 0; app < 2; app++) { /* STATIC weight (FullyConnected, keep_dims) and APP_WRITE weight (MatMul) */
        w.d.kind = app ? NPL_ACCEL_APP_WRITE : NPL_ACCEL_STATIC;
        tspec in[3] = {x, w, bias};
        CHECK_EQ_INT(run1(r, "MatMul", NULL, 0, in, 3, &y), NPL_ACCEL_OK);
        for (int m = 0; m < B * M; m++)
            for (int n = 0; n < N; n++) {
                double s = V(&bias, n);
                for (int k = 0; k < K; k++) s += V(&x, (size_t)m * K + k) * V(&w, (size_t)k * N + n);
                ref[m * N + n] = s;
            }
        double e = maxerr(&y, ref);
        printf("MatMul f16 x [%d,%d,%d] x %s w [%d,%d] + bias: max_err %.5f\n", B, M, K, app ? "app_write" : "static", K, N, e);
        CHECK(e < 0.01);
    }

    /* 4-bit per-channel weights (int8 values -8..7): QNN's bitwidth-4 encoding, a smaller binary than int8 */
    enum { K2 = 256, N2 = 64, M2 = 4 };
    static int8_t q4[K2 * N2];
    static float ws[N2];
    static uint16_t xx[M2 * K2], yy[M2 * N2];
    for (int n = 0; n < N2; n++) ws[n] = 0.02f * (1 + n % 3);
    for (int i = 0; i < K2 * N2; i++) q4[i] = (int8_t)(nearbyint(7.49 * accel_frand(&seed)));
    tspec x2 = {accel_desc("x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, M2, K2, 0), xx};
    tspec w2 = {accel_desc("w4", NPL_ACCEL_STATIC, NPL_ACCEL_DT_INT8, 2, K2, N2, 0), q4};
    w2.d.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_AXIS, 1, 0, N2, ws, NULL};
    tspec y2 = {accel_desc("y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, M2, N2, 0), yy};
    fill(&x2, 1);
    uint64_t bin4 = 0, bin8 = 0;
    tspec in2[2] = {x2, w2};
    CHECK_EQ_INT(run1b(r, "MatMul", NULL, 0, in2, 2, &y2, &bin4), NPL_ACCEL_OK);
    static double r2[M2 * N2];
    for (int m = 0; m < M2; m++)
        for (int n = 0; n < N2; n++) {
            double s = 0;
            for (int k = 0; k < K2; k++) s += V(&x2, (size_t)m * K2 + k) * q4[k * N2 + n] * (double)ws[n];
            r2[m * N2 + n] = s;
        }
    double e = maxerr(&y2, r2);
    q4[0] = 100; /* one value outside 4 bits: plain int8 per-axis */
    CHECK_EQ_INT(run1b(r, "MatMul", NULL, 0, in2, 2, &y2, &bin8), NPL_ACCEL_OK);
    printf("MatMul f16 x 4-bit/axis [%d,%d]: max_err %.5f; binary %llu B (int8: %llu B)\n", K2, N2, e,
           (unsigned long long)bin4, (unsigned long long)bin8);
    CHECK(e < 0.05);
    CHECK(bin4 + K2 * N2 / 4 < bin8);
}

int main(void) {
    qnn_rig r = qnn_rig_open("SM8650");
    test_activations(&r);
    test_rope(&r);
    test_layout(&r);
    test_casts(&r);
    test_matmul_forms(&r);
    qnn_rig_close(&r);
    TEST_MAIN_END();
}
