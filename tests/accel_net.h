/* A small transformer decoder block built through the accelerator ABI, for
 * the context / binary / record tests. One graph per sequence length; all
 * graphs of a context share the weights (same names, same bytes) and the
 * KV cache (APP_READWRITE tensors "kcache", "vcache").
 *
 *   tok [S] -> Gather(emb) -> x [S, D]
 *   RmsNorm -> MatMul q (f32) / k (f16) / v (bf16) -> Reshape -> Rope (q, k)
 *   -> Attention(kcache, vcache, pos) -> Reshape -> MatMul o (int8 per-axis)
 *   -> Add(x) -> RmsNorm -> MatMul gate, up (int8, fused with Silu*Mul)
 *   -> MatMul down (q8_0) + Add(bias) -> Add -> RmsNorm
 *   -> MatMul(emb, transpose) -> logits [S, V]   (emb tied: Gather + MatMul)
 * Graph-local tensor names carry the graph name as a suffix. */
#ifndef NPL_TEST_ACCEL_NET_H
#define NPL_TEST_ACCEL_NET_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "npullm_accel.h"

enum { NET_D = 64, NET_H = 4, NET_HKV = 2, NET_HD = 16, NET_F = 128, NET_V = 50, NET_C = 160 };

typedef struct {
    float emb[NET_V * NET_D], gn1[NET_D], gn2[NET_D], gn3[NET_D], bias_d[NET_D];
    float wq[NET_D * NET_H * NET_HD];
    uint16_t wk[NET_D * NET_HKV * NET_HD], wv[NET_D * NET_HKV * NET_HD];
    int8_t wo[NET_H * NET_HD * NET_D], wg[NET_D * NET_F], wu[NET_D * NET_F];
    float so[NET_D], sg[NET_F], su[NET_F];
    block_q8_0 wd[NET_D * NET_F / 32]; /* [D, F] transposed: rows of F */
} net_weights;

static uint64_t net_rng = 88172645463325252ull;
static float net_rand(void) {
    net_rng ^= net_rng << 13;
    net_rng ^= net_rng >> 7;
    net_rng ^= net_rng << 17;
    return (float)((net_rng >> 11) * 0x1p-53) * 2.0f - 1.0f;
}

static void net_quant_cols(const float *w, int k, int n, int8_t *q, float *s) {
    for (int j = 0; j < n; j++) {
        float amax = 0;
        for (int i = 0; i < k; i++) amax = fmaxf(amax, fabsf(w[i * n + j]));
        s[j] = amax / 127;
        for (int i = 0; i < k; i++) q[i * n + j] = (int8_t)nearbyintf(w[i * n + j] / s[j]);
    }
}

static void net_weights_init(net_weights *w) {
    static float tmp[NET_D * NET_F];
    net_rng = 88172645463325252ull;
    for (int i = 0; i < NET_V * NET_D; i++) w->emb[i] = net_rand();
    for (int i = 0; i < NET_D; i++) {
        w->gn1[i] = 1 + 0.1f * net_rand();
        w->gn2[i] = 1 + 0.1f * net_rand();
        w->gn3[i] = 1 + 0.1f * net_rand();
        w->bias_d[i] = 0.1f * net_rand();
    }
    const float sc = 1.0f / sqrtf((float)NET_D);
    for (int i = 0; i < NET_D * NET_H * NET_HD; i++) w->wq[i] = sc * net_rand();
    for (int i = 0; i < NET_D * NET_HKV * NET_HD; i++) w->wk[i] = npl_f32_to_f16(sc * net_rand());
    for (int i = 0; i < NET_D * NET_HKV * NET_HD; i++) w->wv[i] = npl_f32_to_bf16(sc * net_rand());
    for (int i = 0; i < NET_H * NET_HD * NET_D; i++) tmp[i] = sc * net_rand();
    net_quant_cols(tmp, NET_H * NET_HD, NET_D, w->wo, w->so);
    for (int i = 0; i < NET_D * NET_F; i++) tmp[i] = sc * net_rand();
    net_quant_cols(tmp, NET_D, NET_F, w->wg, w->sg);
    for (int i = 0; i < NET_D * NET_F; i++) tmp[i] = sc * net_rand();
    net_quant_cols(tmp, NET_D, NET_F, w->wu, w->su);
    for (int i = 0; i < NET_D * NET_F; i++) tmp[i] = 0.3f * net_rand();
    npl_type_get(NPL_TYPE_Q8_0)->from_float(tmp, w->wd, NET_D * NET_F);
}

typedef struct {
    const npl_accel_api *api;
    npl_accel_context *ctx;
    npl_accel_graph *g;
    const char *gname;
    int status;
} net_builder;

static npl_accel_tensor_id net_t(net_builder *b, const char *base, uint32_t kind, uint32_t dt, uint32_t rank,
                                 uint32_t d0, uint32_t d1, uint32_t d2, const void *data, size_t size,
                                 const npl_accel_quant *q) {
    char name[96];
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    int shared = kind == NPL_ACCEL_STATIC || kind == NPL_ACCEL_APP_READWRITE;
    snprintf(name, sizeof name, shared ? "%s" : "%s_%s", base, b->gname);
    d.name = name;
    d.kind = kind;
    d.dtype = dt;
    d.rank = rank;
    d.dims[0] = d0;
    d.dims[1] = d1;
    d.dims[2] = d2;
    d.data = data;
    d.data_size = size;
    if (q) d.quant = *q;
    npl_accel_tensor_id id = 0;
    int st = b->status ? b->status : b->api->tensor_create(b->g, &d, &id);
    if (st && !b->status) fprintf(stderr, "tensor %s: %d\n", name, st);
    if (!b->status) b->status = st;
    return id;
}

static void net_n(net_builder *b, const char *op, const npl_accel_tensor_id *in, uint32_t n_in, npl_accel_tensor_id out,
                  const npl_accel_param *p, uint32_t np) {
    npl_accel_node_desc d = {op, op, p, np, in, n_in, &out, 1};
    if (!b->status) b->status = b->api->graph_add_node(b->g, &d);
}

static npl_accel_param net_pi(const char *name, int64_t v) {
    npl_accel_param p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.type = NPL_ACCEL_PARAM_INT;
    p.i = v;
    return p;
}
static npl_accel_param net_pf(const char *name, double v) {
    npl_accel_param p = net_pi(name, 0);
    p.type = NPL_ACCEL_PARAM_FLOAT;
    p.f = v;
    return p;
}

/* Builds graph `gname` for S tokens into ctx (not finalized). */
static int net_build(const npl_accel_api *api, npl_accel_context *ctx, const char *gname, uint32_t S,
                     const net_weights *w) {
    net_builder b = {api, ctx, NULL, gname, 0};
    b.status = api->graph_create(ctx, gname, &b.g);
    const uint32_t D = NET_D, QD = NET_H * NET_HD, KD = NET_HKV * NET_HD, F = NET_F, V = NET_V;
    const uint32_t F32 = NPL_ACCEL_DT_F32, ST = NPL_ACCEL_STATIC, NA = NPL_ACCEL_NATIVE;
    npl_accel_quant qo = {NPL_ACCEL_QUANT_PER_AXIS, 1, 0, D, w->so, NULL};
    npl_accel_quant qg = {NPL_ACCEL_QUANT_PER_AXIS, 1, 0, F, w->sg, NULL};
    npl_accel_quant qu = {NPL_ACCEL_QUANT_PER_AXIS, 1, 0, F, w->su, NULL};
    npl_accel_tensor_id tok = net_t(&b, "tok", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0, NULL, 0, NULL);
    npl_accel_tensor_id pos = net_t(&b, "pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0, NULL, 0, NULL);
    npl_accel_tensor_id emb = net_t(&b, "emb", ST, F32, 2, V, D, 0, w->emb, sizeof w->emb, NULL);
    npl_accel_tensor_id gn1 = net_t(&b, "gn1", ST, F32, 1, D, 0, 0, w->gn1, sizeof w->gn1, NULL);
    npl_accel_tensor_id gn2 = net_t(&b, "gn2", ST, F32, 1, D, 0, 0, w->gn2, sizeof w->gn2, NULL);
    npl_accel_tensor_id gn3 = net_t(&b, "gn3", ST, F32, 1, D, 0, 0, w->gn3, sizeof w->gn3, NULL);
    npl_accel_tensor_id wq = net_t(&b, "wq", ST, F32, 2, D, QD, 0, w->wq, sizeof w->wq, NULL);
    npl_accel_tensor_id wk = net_t(&b, "wk", ST, NPL_ACCEL_DT_F16, 2, D, KD, 0, w->wk, sizeof w->wk, NULL);
    npl_accel_tensor_id wv = net_t(&b, "wv", ST, NPL_ACCEL_DT_BF16, 2, D, KD, 0, w->wv, sizeof w->wv, NULL);
    npl_accel_tensor_id wo = net_t(&b, "wo", ST, NPL_ACCEL_DT_INT8, 2, QD, D, 0, w->wo, sizeof w->wo, &qo);
    npl_accel_tensor_id wg = net_t(&b, "wg", ST, NPL_ACCEL_DT_INT8, 2, D, F, 0, w->wg, sizeof w->wg, &qg);
    npl_accel_tensor_id wu = net_t(&b, "wu", ST, NPL_ACCEL_DT_INT8, 2, D, F, 0, w->wu, sizeof w->wu, &qu);
    npl_accel_tensor_id wd = net_t(&b, "wd", ST, NPL_ACCEL_DT_Q8_0, 2, D, F, 0, w->wd, sizeof w->wd, NULL);
    npl_accel_tensor_id bd = net_t(&b, "bias_d", ST, F32, 1, D, 0, 0, w->bias_d, sizeof w->bias_d, NULL);
    npl_accel_tensor_id kc = net_t(&b, "kcache", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, NET_C, NET_HKV, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id vc = net_t(&b, "vcache", NPL_ACCEL_APP_READWRITE, NPL_ACCEL_DT_F16, 3, NET_C, NET_HKV, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id x = net_t(&b, "x", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id h = net_t(&b, "h", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id q = net_t(&b, "q", NA, F32, 2, S, QD, 0, NULL, 0, NULL);
    npl_accel_tensor_id k = net_t(&b, "k", NA, F32, 2, S, KD, 0, NULL, 0, NULL);
    npl_accel_tensor_id v = net_t(&b, "v", NA, NPL_ACCEL_DT_F16, 2, S, KD, 0, NULL, 0, NULL);
    npl_accel_tensor_id q3 = net_t(&b, "q3", NA, F32, 3, S, NET_H, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id k3 = net_t(&b, "k3", NA, F32, 3, S, NET_HKV, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id v3 = net_t(&b, "v3", NA, NPL_ACCEL_DT_F16, 3, S, NET_HKV, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id qr = net_t(&b, "qr", NA, F32, 3, S, NET_H, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id kr = net_t(&b, "kr", NA, F32, 3, S, NET_HKV, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id at = net_t(&b, "attn", NA, F32, 3, S, NET_H, NET_HD, NULL, 0, NULL);
    npl_accel_tensor_id a2 = net_t(&b, "attn2", NA, F32, 2, S, QD, 0, NULL, 0, NULL);
    npl_accel_tensor_id o = net_t(&b, "o", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id x2 = net_t(&b, "x2", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id h2 = net_t(&b, "h2", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id g = net_t(&b, "gate", NA, F32, 2, S, F, 0, NULL, 0, NULL);
    npl_accel_tensor_id u = net_t(&b, "up", NA, F32, 2, S, F, 0, NULL, 0, NULL);
    npl_accel_tensor_id sg = net_t(&b, "silu", NA, F32, 2, S, F, 0, NULL, 0, NULL);
    npl_accel_tensor_id gu = net_t(&b, "gu", NA, F32, 2, S, F, 0, NULL, 0, NULL);
    npl_accel_tensor_id dn = net_t(&b, "down", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id db = net_t(&b, "down_b", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id x3 = net_t(&b, "x3", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id h3 = net_t(&b, "h3", NA, F32, 2, S, D, 0, NULL, 0, NULL);
    npl_accel_tensor_id lg = net_t(&b, "logits", NPL_ACCEL_APP_READ, F32, 2, S, V, 0, NULL, 0, NULL);
    npl_accel_param eps = net_pf("epsilon", 1e-5), tr = net_pi("transpose_in1", 1);
    npl_accel_param rope[3] = {net_pi("neox", 1), net_pf("base", 10000.0), net_pf("freq_scale", 1.0)};
    npl_accel_param att[2] = {net_pi("window", 0), net_pf("scale", 0.25)};
    net_n(&b, "Gather", (npl_accel_tensor_id[]){emb, tok}, 2, x, NULL, 0);
    net_n(&b, "RmsNorm", (npl_accel_tensor_id[]){x, gn1}, 2, h, &eps, 1);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h, wq}, 2, q, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h, wk}, 2, k, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h, wv}, 2, v, NULL, 0);
    net_n(&b, "Reshape", &q, 1, q3, NULL, 0);
    net_n(&b, "Reshape", &k, 1, k3, NULL, 0);
    net_n(&b, "Reshape", &v, 1, v3, NULL, 0);
    net_n(&b, "Rope", (npl_accel_tensor_id[]){q3, pos}, 2, qr, rope, 3);
    net_n(&b, "Rope", (npl_accel_tensor_id[]){k3, pos}, 2, kr, rope, 3);
    net_n(&b, "Attention", (npl_accel_tensor_id[]){qr, kr, v3, kc, vc, pos}, 6, at, att, 2);
    net_n(&b, "Reshape", &at, 1, a2, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){a2, wo}, 2, o, NULL, 0);
    net_n(&b, "Add", (npl_accel_tensor_id[]){x, o}, 2, x2, NULL, 0);
    net_n(&b, "RmsNorm", (npl_accel_tensor_id[]){x2, gn2}, 2, h2, &eps, 1);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h2, wg}, 2, g, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h2, wu}, 2, u, NULL, 0);
    net_n(&b, "Silu", &g, 1, sg, NULL, 0);
    net_n(&b, "Mul", (npl_accel_tensor_id[]){sg, u}, 2, gu, NULL, 0);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){gu, wd}, 2, dn, &tr, 1);
    net_n(&b, "Add", (npl_accel_tensor_id[]){dn, bd}, 2, db, NULL, 0);
    net_n(&b, "Add", (npl_accel_tensor_id[]){x2, db}, 2, x3, NULL, 0);
    net_n(&b, "RmsNorm", (npl_accel_tensor_id[]){x3, gn3}, 2, h3, &eps, 1);
    net_n(&b, "MatMul", (npl_accel_tensor_id[]){h3, emb}, 2, lg, &tr, 1);
    return b.status;
}

/* Runs graph g (built for S tokens) -> logits [S, V]. */
static int net_run(const npl_accel_api *api, npl_accel_graph *g, const char *gname, int S, const int32_t *tok,
                   const int32_t *pos, float *logits) {
    char n_tok[64], n_pos[64], n_out[64];
    snprintf(n_tok, sizeof n_tok, "tok_%s", gname);
    snprintf(n_pos, sizeof n_pos, "pos_%s", gname);
    snprintf(n_out, sizeof n_out, "logits_%s", gname);
    npl_accel_buffer in[2] = {{n_tok, (void *)tok, (uint64_t)S * 4}, {n_pos, (void *)pos, (uint64_t)S * 4}};
    npl_accel_buffer out = {n_out, logits, (uint64_t)S * NET_V * 4};
    return api->graph_execute(g, in, 2, &out, 1);
}

#endif
