/* vnpu MatMul through the accelerator ABI, for every kernel family this CPU
 * has (forced through the kernel_family option; generic always), against a
 * double-precision reference.
 *
 * The reference's online MatMul example: A app-write [32, 128] x B static
 * [128, 64] -> C app-read [32, 64]. Inputs: A uniform in [-1, 1], B uniform
 * in [-0.5, 0.5] (xorshift, fixed seeds); errors are measured against the
 * double product of the float A and B, so quantized precisions include the
 * weight quantization error. int8 = per-axis (output channel) symmetric
 * weights and per-row dynamic activations; it must stay within 0.05. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"
#include "check.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "npullm_accel.h"

static uint64_t rng_state;
static float urand(float lo, float hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float)((rng_state >> 11) * 0x1p-53);
}

typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_device *dev;
    const char *family;
} rig;

static int rig_open(rig *r, const char *family) {
    char err[256];
    npl_accel_option o = {"kernel_family", family};
    r->api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    r->family = family;
    if (r->api->backend_create(&o, 1, &r->be, err, sizeof err)) return -1;
    CHECK_EQ_INT(r->api->device_create(r->be, NULL, 0, &r->dev), NPL_ACCEL_OK);
    return 0;
}

static void rig_close(rig *r) {
    r->api->device_free(r->dev);
    r->api->backend_free(r->be);
}

static npl_accel_tensor_desc tdesc(const char *name, uint32_t kind, uint32_t dt, uint32_t d0, uint32_t d1) {
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.kind = kind;
    d.dtype = dt;
    d.rank = d1 ? 2 : 1;
    d.dims[0] = d0;
    d.dims[1] = d1;
    return d;
}

/* Weights: type, bytes, quant, layout ([K, N] or [N, K] when trans). */
typedef struct {
    uint32_t dtype;
    const void *data;
    size_t size;
    npl_accel_quant q;
    int trans;
    int app_write;
    const float *bias; /* static bias [N] fused from an Add, or NULL */
} wspec;

/* Builds A x W (+ bias) -> C on a fresh context, runs it, returns status. */
static int run_mm(rig *r, int m, int k, int n, const wspec *w, const float *a, float *c, char *detail, size_t dlen) {
    const npl_accel_api *api = r->api;
    npl_accel_context *ctx;
    npl_accel_graph *g;
    npl_accel_tensor_id ta, tw, tc, tb = 0, tt = 0;
    CHECK_EQ_INT(api->context_create(r->be, r->dev, NULL, 0, &ctx), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->graph_create(ctx, "matmul_graph", &g), NPL_ACCEL_OK);
    npl_accel_tensor_desc da = tdesc("input", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, (uint32_t)m, (uint32_t)k);
    npl_accel_tensor_desc dw = tdesc("weight", w->app_write ? NPL_ACCEL_APP_WRITE : NPL_ACCEL_STATIC, w->dtype,
                                     (uint32_t)(w->trans ? n : k), (uint32_t)(w->trans ? k : n));
    dw.quant = w->q;
    if (!w->app_write) {
        dw.data = w->data;
        dw.data_size = w->size;
    }
    npl_accel_tensor_desc dc = tdesc("output", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, (uint32_t)m, (uint32_t)n);
    CHECK_EQ_INT(api->tensor_create(g, &da, &ta), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(g, &dw, &tw), NPL_ACCEL_OK);
    CHECK_EQ_INT(api->tensor_create(g, &dc, &tc), NPL_ACCEL_OK);
    npl_accel_param pt = {.name = "transpose_in1", .type = NPL_ACCEL_PARAM_INT, .i = w->trans};
    npl_accel_tensor_id in[2] = {ta, tw};
    if (w->bias) {
        npl_accel_tensor_desc db = tdesc("bias", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, (uint32_t)n, 0);
        db.data = w->bias;
        db.data_size = (uint64_t)n * 4;
        npl_accel_tensor_desc dt = tdesc("mm_out", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, (uint32_t)m, (uint32_t)n);
        CHECK_EQ_INT(api->tensor_create(g, &db, &tb), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->tensor_create(g, &dt, &tt), NPL_ACCEL_OK);
    }
    npl_accel_node_desc nd = {"matmul_0", "MatMul", &pt, 1, in, 2, w->bias ? &tt : &tc, 1};
    CHECK_EQ_INT(api->graph_add_node(g, &nd), NPL_ACCEL_OK);
    if (w->bias) {
        npl_accel_tensor_id ain[2] = {tt, tb};
        npl_accel_node_desc ad = {"bias_add", "Add", NULL, 0, ain, 2, &tc, 1};
        CHECK_EQ_INT(api->graph_add_node(g, &ad), NPL_ACCEL_OK);
    }
    int st = api->graph_finalize(g);
    if (st) fprintf(stderr, "finalize: %s\n", api->last_error(r->be));
    npl_accel_buffer bin[2] = {{"input", (void *)a, (uint64_t)m * k * 4}, {"weight", (void *)w->data, w->size}};
    npl_accel_buffer bout = {"output", c, (uint64_t)m * n * 4};
    if (!st) st = api->graph_execute(g, bin, w->app_write ? 2 : 1, &bout, 1);
    if (st) fprintf(stderr, "execute: %s\n", api->last_error(r->be));
    npl_accel_profile prof;
    if (!st && detail) {
        api->graph_get_profile(g, &prof);
        snprintf(detail, dlen, "%s", prof.detail);
    }
    CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
    return st;
}

static void ref_mm(int m, int k, int n, const float *a, const float *w, const float *bias, double *c) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = bias ? bias[j] : 0.0;
            for (int l = 0; l < k; l++) s += (double)a[i * k + l] * (double)w[l * n + j];
            c[i * n + j] = s;
        }
}

static double max_err(const float *c, const double *ref, int count) {
    double e = 0;
    for (int i = 0; i < count; i++) e = fmax(e, fabs((double)c[i] - ref[i]));
    return isfinite(e) ? e : 1e30;
}

/* Per-axis symmetric quantization of w [K, N] by column; q laid out as [K, N]. */
static void quant_axis(int k, int n, const float *w, int bits, void *q, float *scales) {
    const float lim = bits == 8 ? 127.0f : 32767.0f;
    for (int j = 0; j < n; j++) {
        float amax = 0;
        for (int l = 0; l < k; l++) amax = fmaxf(amax, fabsf(w[l * n + j]));
        scales[j] = amax > 0 ? amax / lim : 1.0f;
        for (int l = 0; l < k; l++) {
            float v = nearbyintf(w[l * n + j] / scales[j]);
            if (bits == 8) ((int8_t *)q)[l * n + j] = (int8_t)v;
            else ((int16_t *)q)[l * n + j] = (int16_t)v;
        }
    }
}

/* int8 results of the reference example per family: they must agree bit for
 * bit (same activation rounding, exact integer dots, the same epilogue). */
static float *int8_first = NULL;
static const char *int8_first_family = NULL;

static void test_precisions(rig *r, int m, int k, int n) {
    float *a = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
    double *ref = malloc(sizeof(double) * m * n);
    uint16_t *h = malloc(2 * (size_t)k * n), *bf = malloc(2 * (size_t)k * n);
    int8_t *q8 = malloc((size_t)k * n);
    int16_t *q16 = malloc(2 * (size_t)k * n);
    float *s8 = malloc(sizeof(float) * n), *s16 = malloc(sizeof(float) * n), *bias = malloc(sizeof(float) * n);
    rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)(m * 131 + k * 7 + n);
    for (int i = 0; i < m * k; i++) a[i] = urand(-1, 1);
    for (int i = 0; i < k * n; i++) w[i] = urand(-0.5f, 0.5f);
    for (int i = 0; i < n; i++) bias[i] = urand(-1, 1);
    for (int i = 0; i < k * n; i++) h[i] = npl_f32_to_f16(w[i]), bf[i] = npl_f32_to_bf16(w[i]);
    quant_axis(k, n, w, 8, q8, s8);
    quant_axis(k, n, w, 16, q16, s16);
    ref_mm(m, k, n, a, w, NULL, ref);
    struct { const char *name; wspec w; double tol; } cases[] = {
        {"fp32", {.dtype = NPL_ACCEL_DT_F32, .data = w, .size = 4u * k * n}, 1e-4},
        {"fp16", {.dtype = NPL_ACCEL_DT_F16, .data = h, .size = 2u * k * n}, 0.01},
        {"bf16", {.dtype = NPL_ACCEL_DT_BF16, .data = bf, .size = 2u * k * n}, 0.08},
        {"int16", {.dtype = NPL_ACCEL_DT_INT16, .data = q16, .size = 2u * k * n,
                   .q = {NPL_ACCEL_QUANT_PER_AXIS, 1, 0, (uint32_t)n, s16, NULL}}, 0.002},
        {"int8", {.dtype = NPL_ACCEL_DT_INT8, .data = q8, .size = (size_t)k * n,
                  .q = {NPL_ACCEL_QUANT_PER_AXIS, 1, 0, (uint32_t)n, s8, NULL}}, 0.05 * fmax(1.0, sqrt(k / 128.0))},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(c, 0, sizeof(float) * m * n);
        char detail[256] = "";
        CHECK_EQ_INT(run_mm(r, m, k, n, &cases[i].w, a, c, detail, sizeof detail), NPL_ACCEL_OK);
        double e = max_err(c, ref, m * n);
        printf("  %-7s %-6s [%d,%d]x[%d,%d]  max_abs_err %.5f  (%s)\n", r->family, cases[i].name, m, k, k, n, e, detail);
        CHECK_NEAR(e, 0, cases[i].tol);
        if (!strcmp(cases[i].name, "int8") && m == 32 && k == 128) {
            if (!int8_first) {
                int8_first = malloc(sizeof(float) * m * n);
                memcpy(int8_first, c, sizeof(float) * m * n);
                int8_first_family = r->family;
            } else {
                int same = !memcmp(int8_first, c, sizeof(float) * m * n);
                if (!same) fprintf(stderr, "int8 results of %s and %s differ\n", int8_first_family, r->family);
                CHECK(same);
            }
        }
        /* the same weights bound at execute instead of STATIC give the same bits */
        float *c2 = malloc(sizeof(float) * m * n);
        wspec aw = cases[i].w;
        aw.app_write = 1;
        CHECK_EQ_INT(run_mm(r, m, k, n, &aw, a, c2, NULL, 0), NPL_ACCEL_OK);
        CHECK(!memcmp(c, c2, sizeof(float) * m * n));
        free(c2);
    }
    /* fused bias: MatMul + Add(static [N]) */
    double *refb = malloc(sizeof(double) * m * n);
    ref_mm(m, k, n, a, w, bias, refb);
    wspec wb = {.dtype = NPL_ACCEL_DT_F32, .data = w, .size = 4u * k * n, .bias = bias};
    char detail[256] = "";
    CHECK_EQ_INT(run_mm(r, m, k, n, &wb, a, c, detail, sizeof detail), NPL_ACCEL_OK);
    CHECK_NEAR(max_err(c, refb, m * n), 0, 1e-4);
    CHECK(strstr(detail, "bias 1") != NULL);
    free(refb);
    free(a), free(w), free(c), free(ref), free(h), free(bf), free(q8), free(q16), free(s8), free(s16), free(bias);
}

/* Weights given as [N, K] (transpose_in1 = 1): per-block int8, uint8 with
 * offsets, and llama.cpp's Q8_0 / Q4_0 blocks. References use the
 * dequantized weights, so only the activation rounding remains. */
static void test_block_weights(rig *r, int m, int k, int n) {
    float *a = malloc(sizeof(float) * m * k), *wt = malloc(sizeof(float) * n * k), *wd = malloc(sizeof(float) * k * n);
    float *c = malloc(sizeof(float) * m * n);
    double *ref = malloc(sizeof(double) * m * n);
    const int nb = k / 32;
    int8_t *qb = malloc((size_t)n * k);
    int16_t *qh = malloc(2 * (size_t)n * k);
    int32_t *oh = malloc(sizeof(int32_t) * n * nb);
    uint8_t *qu = malloc((size_t)n * k);
    float *sb = malloc(sizeof(float) * n * nb), *su = malloc(sizeof(float) * n);
    int32_t *ou = malloc(sizeof(int32_t) * n);
    block_q8_0 *b8 = malloc(sizeof(block_q8_0) * n * nb);
    block_q4_0 *b4 = malloc(sizeof(block_q4_0) * n * nb);
    rng_state = 0x1234567ull + (uint64_t)k;
    for (int i = 0; i < m * k; i++) a[i] = urand(-1, 1);
    for (int i = 0; i < n * k; i++) wt[i] = urand(-0.5f, 0.5f) + (i % 7 == 0 ? 0.3f : 0.0f);
    /* per-block int8: scale per (row, block of 32) */
    for (int j = 0; j < n; j++)
        for (int b = 0; b < nb; b++) {
            float amax = 0;
            for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(wt[j * k + b * 32 + l]));
            sb[j * nb + b] = amax / 127;
            for (int l = 0; l < 32; l++) qb[j * k + b * 32 + l] = (int8_t)nearbyintf(wt[j * k + b * 32 + l] / sb[j * nb + b]);
            /* int16 per block with an offset: float = (q + off) * scale, scale = amax / 30000 */
            oh[j * nb + b] = (j + b) % 5 - 2;
            for (int l = 0; l < 32; l++)
                qh[j * k + b * 32 + l] = (int16_t)(nearbyintf(wt[j * k + b * 32 + l] / (amax / 30000)) - (float)oh[j * nb + b]);
        }
    float *sh = malloc(sizeof(float) * n * nb);
    for (int i = 0; i < n * nb; i++) sh[i] = sb[i] * 127 / 30000;
    /* uint8 asymmetric per row: float = (q + off) * scale */
    for (int j = 0; j < n; j++) {
        float lo = 1e9f, hi = -1e9f;
        for (int l = 0; l < k; l++) lo = fminf(lo, wt[j * k + l]), hi = fmaxf(hi, wt[j * k + l]);
        su[j] = (hi - lo) / 255;
        ou[j] = (int32_t)nearbyintf(lo / su[j]);
        for (int l = 0; l < k; l++) {
            float v = nearbyintf(wt[j * k + l] / su[j]) - (float)ou[j];
            qu[j * k + l] = (uint8_t)fminf(255, fmaxf(0, v));
        }
    }
    npl_type_get(NPL_TYPE_Q8_0)->from_float(wt, b8, (int64_t)n * k);
    npl_type_get(NPL_TYPE_Q4_0)->from_float(wt, b4, (int64_t)n * k);
    struct { const char *name; wspec w; } cases[] = {
        {"int8/block32", {.dtype = NPL_ACCEL_DT_INT8, .data = qb, .size = (size_t)n * k, .trans = 1,
                          .q = {NPL_ACCEL_QUANT_PER_BLOCK, 0, 32, (uint32_t)(n * nb), sb, NULL}}},
        {"uint8+offset", {.dtype = NPL_ACCEL_DT_UINT8, .data = qu, .size = (size_t)n * k, .trans = 1,
                          .q = {NPL_ACCEL_QUANT_PER_AXIS, 0, 0, (uint32_t)n, su, ou}}},
        {"int16/blk+off", {.dtype = NPL_ACCEL_DT_INT16, .data = qh, .size = 2 * (size_t)n * k, .trans = 1,
                           .q = {NPL_ACCEL_QUANT_PER_BLOCK, 0, 32, (uint32_t)(n * nb), sh, oh}}},
        {"q8_0", {.dtype = NPL_ACCEL_DT_Q8_0, .data = b8, .size = sizeof(block_q8_0) * n * nb, .trans = 1}},
        {"q4_0", {.dtype = NPL_ACCEL_DT_Q4_0, .data = b4, .size = sizeof(block_q4_0) * n * nb, .trans = 1}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        for (int j = 0; j < n; j++) /* dequantized reference weights, [K, N] */
            for (int l = 0; l < k; l++) {
                float v;
                if (ci == 0) v = qb[j * k + l] * sb[j * nb + l / 32];
                else if (ci == 1) v = ((float)qu[j * k + l] + (float)ou[j]) * su[j];
                else if (ci == 2) v = ((float)qh[j * k + l] + (float)oh[j * nb + l / 32]) * sh[j * nb + l / 32];
                else if (ci == 3) v = b8[j * nb + l / 32].qs[l % 32] * npl_f16_to_f32(b8[j * nb + l / 32].d);
                else {
                    const block_q4_0 *bl = &b4[j * nb + l / 32];
                    int e = l % 32, nib = e < 16 ? (bl->qs[e] & 15) : (bl->qs[e - 16] >> 4);
                    v = (float)(nib - 8) * npl_f16_to_f32(bl->d);
                }
                wd[l * n + j] = v;
            }
        ref_mm(m, k, n, a, wd, NULL, ref);
        memset(c, 0, sizeof(float) * m * n);
        CHECK_EQ_INT(run_mm(r, m, k, n, &cases[ci].w, a, c, NULL, 0), NPL_ACCEL_OK);
        double e = max_err(c, ref, m * n);
        printf("  %-7s %-13s [%d,%d]x[%d,%d]^T  max_abs_err %.5f\n", r->family, cases[ci].name, m, k, n, k, e);
        CHECK_NEAR(e, 0, 0.05);
    }
    free(a), free(wt), free(wd), free(c), free(ref), free(qb), free(qu), free(sb), free(su), free(ou), free(b8), free(b4);
    free(qh), free(oh), free(sh);
}

/* GGML block weights (Q4_1 .. Q6_K; Q4_0 / Q8_0 above) as the model file
 * holds them, with a fused bias: the context binary must carry the blocks
 * unchanged and only once (its size: the blocks plus metadata), and the
 * graph loaded from it must match the double product of the activations
 * with the blocks' dequantized values (core's reference dequantizers); only
 * the activations' rounding to Q8_0 / Q8_K remains. */
static void test_ggml_types(rig *r, int m) {
    enum { K = 512, N = 40 };
    static const struct { uint32_t dt; npl_type t; } types[] = {
        {NPL_ACCEL_DT_Q4_1, NPL_TYPE_Q4_1}, {NPL_ACCEL_DT_Q5_0, NPL_TYPE_Q5_0}, {NPL_ACCEL_DT_Q5_1, NPL_TYPE_Q5_1},
        {NPL_ACCEL_DT_Q2_K, NPL_TYPE_Q2_K}, {NPL_ACCEL_DT_Q3_K, NPL_TYPE_Q3_K}, {NPL_ACCEL_DT_Q4_K, NPL_TYPE_Q4_K},
        {NPL_ACCEL_DT_Q5_K, NPL_TYPE_Q5_K}, {NPL_ACCEL_DT_Q6_K, NPL_TYPE_Q6_K}, {NPL_ACCEL_DT_Q8_0, NPL_TYPE_Q8_0}};
    const npl_accel_api *api = r->api;
    float *a = malloc(sizeof(float) * m * K), *wt = malloc(sizeof(float) * N * K), *wd = malloc(sizeof(float) * K * N);
    float *row = malloc(sizeof(float) * K), *c = malloc(sizeof(float) * m * N), bias[N];
    double *ref = malloc(sizeof(double) * m * N);
    void *blocks = malloc((size_t)N * K * 2);
    rng_state = 0x9e3779b97f4a7c15ull + (uint64_t)m;
    for (int i = 0; i < m * K; i++) a[i] = urand(-1, 1);
    for (int i = 0; i < N * K; i++) wt[i] = urand(-0.5f, 0.5f) + (i % 11 == 0 ? 0.4f : 0.0f);
    for (int j = 0; j < N; j++) bias[j] = urand(-1, 1);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const npl_type_traits *tr = npl_type_get(types[ti].t);
        const size_t wbytes = (size_t)N * (K / tr->block_size) * tr->type_size;
        tr->from_float(wt, blocks, (int64_t)N * K);
        for (int j = 0; j < N; j++) { /* reference weights, [K, N] */
            tr->to_float((const char *)blocks + (size_t)j * (wbytes / N), row, K);
            for (int l = 0; l < K; l++) wd[l * N + j] = row[l];
        }
        ref_mm(m, K, N, a, wd, bias, ref);
        npl_accel_context *ctx, *lc;
        npl_accel_graph *g;
        npl_accel_tensor_id ta, tw, tb, tt, tc;
        CHECK_EQ_INT(api->context_create(r->be, r->dev, NULL, 0, &ctx), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_create(ctx, "g", &g), NPL_ACCEL_OK);
        npl_accel_tensor_desc da = tdesc("input", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F32, (uint32_t)m, K);
        npl_accel_tensor_desc dw = tdesc("weight", NPL_ACCEL_STATIC, types[ti].dt, N, K);
        npl_accel_tensor_desc db = tdesc("bias", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F32, N, 0);
        npl_accel_tensor_desc dt = tdesc("mm", NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, (uint32_t)m, N);
        npl_accel_tensor_desc dc = tdesc("output", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, (uint32_t)m, N);
        dw.data = blocks, dw.data_size = wbytes;
        db.data = bias, db.data_size = sizeof bias;
        CHECK_EQ_INT(api->tensor_create(g, &da, &ta), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->tensor_create(g, &dw, &tw), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->tensor_create(g, &db, &tb), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->tensor_create(g, &dt, &tt), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->tensor_create(g, &dc, &tc), NPL_ACCEL_OK);
        npl_accel_param pt = {.name = "transpose_in1", .type = NPL_ACCEL_PARAM_INT, .i = 1};
        npl_accel_tensor_id in[2] = {ta, tw}, ain[2] = {tt, tb};
        npl_accel_node_desc nd = {"mm", "MatMul", &pt, 1, in, 2, &tt, 1}, ad = {"add", "Add", NULL, 0, ain, 2, &tc, 1};
        CHECK_EQ_INT(api->graph_add_node(g, &nd), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_add_node(g, &ad), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_finalize(g), NPL_ACCEL_OK);
        uint64_t size = 0, wr = 0;
        CHECK_EQ_INT(api->context_get_binary_size(ctx, &size), NPL_ACCEL_OK);
        uint8_t *bin = malloc(size);
        CHECK_EQ_INT(api->context_get_binary(ctx, bin, size, &wr), NPL_ACCEL_OK);
        CHECK(size >= wbytes && size <= wbytes + 8192); /* the blocks once, plus metadata */
        int found = 0;
        for (uint64_t o = 0; o + wbytes <= size && !found; o += 64) found = !memcmp(bin + o, blocks, wbytes);
        CHECK(found); /* bit for bit */
        CHECK_EQ_INT(api->context_free(ctx), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->context_create_from_binary(r->be, r->dev, NULL, 0, bin, size, &lc), NPL_ACCEL_OK);
        CHECK_EQ_INT(api->graph_retrieve(lc, "g", &g), NPL_ACCEL_OK);
        npl_accel_buffer bi = {"input", a, (uint64_t)m * K * 4}, bo = {"output", c, (uint64_t)m * N * 4};
        memset(c, 0, sizeof(float) * m * N);
        CHECK_EQ_INT(api->graph_execute(g, &bi, 1, &bo, 1), NPL_ACCEL_OK);
        double e = max_err(c, ref, m * N);
        printf("  %-7s %-5s from binary [%d,%d]x[%d,%d]^T + bias  max_abs_err %.5f\n", r->family, tr->name, m, K, N, K, e);
        CHECK_NEAR(e, 0, 0.08);
        CHECK_EQ_INT(api->context_free(lc), NPL_ACCEL_OK);
        free(bin);
    }
    free(a), free(wt), free(wd), free(row), free(c), free(ref), free(blocks);
}

int main(void) {
    static const char *const families[] = {"generic", "avx2", "avx512", "amx"};
    int ran = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        rig r;
        if (rig_open(&r, families[f])) {
            printf("family %s: not on this CPU, skipped\n", families[f]);
            CHECK(f > 0); /* generic is always there */
            continue;
        }
        ran++;
        npl_accel_backend_info info;
        CHECK_EQ_INT(r.api->backend_get_info(r.be, &info), NPL_ACCEL_OK);
        CHECK(!strcmp(info.kernel_family, families[f]));
        printf("family %s (available: %s, %u threads)\n", info.kernel_family, info.available_families, info.n_threads);
        test_precisions(&r, 32, 128, 64);   /* the reference's example */
        test_precisions(&r, 5, 40, 20);     /* padding in every dimension */
        test_precisions(&r, 70, 200, 100);
        test_block_weights(&r, 33, 128, 48);
        test_block_weights(&r, 3, 96, 17);
        test_precisions(&r, 1, 200, 100);   /* m = 1: the GEMV path */
        test_block_weights(&r, 1, 96, 17);
        test_block_weights(&r, 1, 128, 70);
        test_ggml_types(&r, 1);             /* decode */
        test_ggml_types(&r, 3);
        test_ggml_types(&r, 40);            /* the GEMM path */
        rig_close(&r);
    }
    CHECK(ran >= 1);
    free(int8_first);
    TEST_MAIN_END();
}
