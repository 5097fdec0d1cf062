/* One transformer block of a tiny random model, written by hand as an ABI
 * graph (issue 15's last "Done when"): RmsNorm, per-head q / k / v MatMuls
 * (2 query heads sharing 1 KV head), Rope at positions 5..8, attention
 * composed from the ABI's primitives (q.k^T MatMul with transpose_in1,
 * Scale, a causal mask Add, Softmax, p.v MatMul, Concat of the heads), the
 * output projection, the residual Add, RmsNorm, gate / up MatMuls, SwiGLU,
 * the down MatMul and the second residual. The same graph runs on vnpu and
 * on QNN HTP (SM8650, emulated); each is compared with a double-precision
 * reference computed here from the same f16 inputs and weights, and with
 * each other. Then the QNN context is written as a binary, loaded again and
 * run again: the outputs must be bit-identical, Rope's positions included
 * (the hidden cos / sin inputs are rebuilt from the binary's record). */
#include <math.h>

#include "accel/vnpu/vnpu_api.h"
#include "test_qnn_common.h"

enum { S = 4, D = 32, DH = 16, HQ = 2, F = 64 };
static const int32_t POS[S] = {5, 6, 7, 8};
static const double EPS = 1e-6, BASE = 10000.0, MASKV = -30000.0;

/* the model, f16-rounded once; the reference reads the rounded values */
typedef struct {
    uint16_t x[S * D], g1[D], g2[D], wq[HQ][D * DH], wk[D * DH], wv[D * DH], wo[HQ * DH * D], wg[D * F], wu[D * F],
        wd[F * D], mask[S * S];
} model;

static double h2d(uint16_t h) { return npl_f16_to_f32(h); }

static void fill(uint16_t *p, size_t n, unsigned *seed, float scale) {
    for (size_t i = 0; i < n; i++) p[i] = npl_f32_to_f16(accel_frand(seed) * scale);
}

/* ---- the double reference ---- */
static void ref_rms(const double *x, const uint16_t *g, double *y, int rows, int d) {
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int i = 0; i < d; i++) ss += x[r * d + i] * x[r * d + i];
        double inv = 1.0 / sqrt(ss / d + EPS);
        for (int i = 0; i < d; i++) y[r * d + i] = x[r * d + i] * inv * h2d(g[i]);
    }
}
static void ref_mm(const double *x, const uint16_t *w, double *y, int m, int k, int n) { /* w [k, n] */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int t = 0; t < k; t++) s += x[i * k + t] * h2d(w[t * n + j]);
            y[i * n + j] = s;
        }
}
static void ref_rope(double *x, const int32_t *pos) { /* [S, DH], interleaved pairs (2i, 2i+1), llama.cpp mode 0 */
    for (int s = 0; s < S; s++)
        for (int i = 0; i < DH / 2; i++) {
            double th = pos[s] * pow(BASE, -2.0 * i / DH), c = cos(th), sn = sin(th);
            double a = x[s * DH + 2 * i], b = x[s * DH + 2 * i + 1];
            x[s * DH + 2 * i] = a * c - b * sn;
            x[s * DH + 2 * i + 1] = a * sn + b * c;
        }
}
static void reference(const model *m, const int32_t *pos, double *y) {
    double x[S * D], h[S * D], q[HQ][S * DH], k[S * DH], v[S * DH], o[S * HQ * DH], a[S * D], r1[S * D], h2[S * D];
    double g[S * F], u[S * F], act[S * F], dn[S * D];
    for (int i = 0; i < S * D; i++) x[i] = h2d(m->x[i]);
    ref_rms(x, m->g1, h, S, D);
    for (int hd = 0; hd < HQ; hd++) ref_mm(h, m->wq[hd], q[hd], S, D, DH), ref_rope(q[hd], pos);
    ref_mm(h, m->wk, k, S, D, DH), ref_rope(k, pos);
    ref_mm(h, m->wv, v, S, D, DH);
    for (int hd = 0; hd < HQ; hd++)
        for (int i = 0; i < S; i++) {
            double sc[S], mx = -1e300, sum = 0;
            for (int j = 0; j < S; j++) {
                double d = 0;
                for (int t = 0; t < DH; t++) d += q[hd][i * DH + t] * k[j * DH + t];
                sc[j] = d / sqrt((double)DH) + h2d(m->mask[i * S + j]);
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j < S; j++) sum += (sc[j] = exp(sc[j] - mx));
            for (int t = 0; t < DH; t++) {
                double acc = 0;
                for (int j = 0; j < S; j++) acc += sc[j] / sum * v[j * DH + t];
                o[i * HQ * DH + hd * DH + t] = acc;
            }
        }
    ref_mm(o, m->wo, a, S, HQ * DH, D);
    for (int i = 0; i < S * D; i++) r1[i] = x[i] + a[i];
    ref_rms(r1, m->g2, h2, S, D);
    ref_mm(h2, m->wg, g, S, D, F), ref_mm(h2, m->wu, u, S, D, F);
    for (int i = 0; i < S * F; i++) act[i] = g[i] / (1 + exp(-g[i])) * u[i];
    ref_mm(act, m->wd, dn, S, F, D);
    for (int i = 0; i < S * D; i++) y[i] = r1[i] + dn[i];
}

/* ---- the ABI graph ---- */
typedef struct {
    const npl_accel_api *a;
    npl_accel_backend *be;
    npl_accel_graph *g;
    npl_accel_status st;
    char name[64];
} gb;

static npl_accel_tensor_id T(gb *b, const char *name, npl_accel_kind kind, npl_accel_dtype dt, uint32_t rank, uint32_t d0,
                             uint32_t d1, uint32_t d2, const void *data) {
    npl_accel_tensor_desc d = accel_desc(name, kind, dt, rank, d0, d1, d2);
    if (kind == NPL_ACCEL_STATIC) d.data = data, d.data_size = qnn_bytes(&d);
    npl_accel_tensor_id id = 0;
    if (!b->st && (b->st = b->a->tensor_create(b->g, &d, &id))) fprintf(stderr, "tensor %s: %s\n", name, b->a->last_error(b->be));
    return id;
}
static npl_accel_tensor_id N16(gb *b, const char *name, uint32_t rank, uint32_t d0, uint32_t d1, uint32_t d2) {
    return T(b, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, rank, d0, d1, d2, NULL);
}
static void node(gb *b, const char *name, const char *op, const npl_accel_param *p, uint32_t np, const npl_accel_tensor_id *in,
                 uint32_t n_in, npl_accel_tensor_id out) {
    npl_accel_node_desc n = {name, op, p, np, in, n_in, &out, 1};
    if (!b->st && (b->st = b->a->graph_add_node(b->g, &n))) fprintf(stderr, "node %s: %s\n", name, b->a->last_error(b->be));
}
static npl_accel_tensor_id W(gb *b, const char *name, uint32_t k, uint32_t n, const uint16_t *data) {
    return T(b, name, NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 2, k, n, 0, data);
}
static npl_accel_tensor_id mm(gb *b, const char *name, npl_accel_tensor_id x, npl_accel_tensor_id w, uint32_t m, uint32_t n,
                              int trans) {
    npl_accel_param t1 = {.name = "transpose_in1", .type = NPL_ACCEL_PARAM_INT, .i = 1};
    npl_accel_tensor_id in[2] = {x, w}, o = N16(b, name, 2, m, n, 0);
    node(b, name, "MatMul", &t1, trans ? 1 : 0, in, 2, o);
    return o;
}
/* Rope of one head [S, DH] (as [S, 1, DH]) */
static npl_accel_tensor_id rope(gb *b, const char *name, npl_accel_tensor_id x, npl_accel_tensor_id pos) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s.3d", name), snprintf(n2, sizeof n2, "%s.r", name);
    npl_accel_tensor_id x3 = N16(b, n1, 3, S, 1, DH), r3 = N16(b, n2, 3, S, 1, DH), o = N16(b, name, 2, S, DH, 0);
    node(b, n1, "Reshape", NULL, 0, &x, 1, x3);
    npl_accel_param p[2] = {{.name = "n_rot", .type = NPL_ACCEL_PARAM_INT, .i = DH},
                            {.name = "base", .type = NPL_ACCEL_PARAM_FLOAT, .f = BASE}};
    npl_accel_tensor_id in[2] = {x3, pos};
    node(b, n2, "Rope", p, 2, in, 2, r3);
    node(b, name, "Reshape", NULL, 0, &r3, 1, o);
    return o;
}
static npl_accel_tensor_id rms(gb *b, const char *name, npl_accel_tensor_id x, const uint16_t *gamma) {
    char gn[64];
    snprintf(gn, sizeof gn, "%s.gamma", name);
    npl_accel_param e = {.name = "epsilon", .type = NPL_ACCEL_PARAM_FLOAT, .f = EPS};
    npl_accel_tensor_id in[2] = {x, T(b, gn, NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 1, D, 0, 0, gamma)}, o = N16(b, name, 2, S, D, 0);
    node(b, name, "RmsNorm", &e, 1, in, 2, o);
    return o;
}

static npl_accel_status build(gb *b, const model *m) {
    npl_accel_tensor_id x = T(b, "x", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 2, S, D, 0, NULL);
    npl_accel_tensor_id pos = T(b, "pos", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_INT32, 1, S, 0, 0, NULL);
    npl_accel_tensor_id h = rms(b, "attn_norm", x, m->g1);
    npl_accel_tensor_id k = rope(b, "k_rope", mm(b, "k", h, W(b, "wk", D, DH, m->wk), S, DH, 0), pos);
    npl_accel_tensor_id v = mm(b, "v", h, W(b, "wv", D, DH, m->wv), S, DH, 0);
    npl_accel_tensor_id mask = T(b, "mask", NPL_ACCEL_STATIC, NPL_ACCEL_DT_F16, 2, S, S, 0, m->mask), heads[HQ];
    for (int hd = 0; hd < HQ; hd++) {
        char nm[8][48];
        const char *fmt[8] = {"wq%d", "q%d", "q%d_rope", "kq%d", "kq%d_scaled", "kq%d_masked", "p%d", "o%d"};
        for (int i = 0; i < 8; i++) snprintf(nm[i], sizeof nm[i], fmt[i], hd);
        npl_accel_tensor_id q = rope(b, nm[2], mm(b, nm[1], h, W(b, nm[0], D, DH, m->wq[hd]), S, DH, 0), pos);
        npl_accel_tensor_id s = mm(b, nm[3], q, k, S, S, 1), sc = N16(b, nm[4], 2, S, S, 0), sm = N16(b, nm[5], 2, S, S, 0);
        npl_accel_param scale = {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = 1.0 / sqrt((double)DH)};
        node(b, nm[4], "Scale", &scale, 1, &s, 1, sc);
        npl_accel_tensor_id am[2] = {sc, mask};
        node(b, nm[5], "Add", NULL, 0, am, 2, sm);
        npl_accel_tensor_id p = N16(b, nm[6], 2, S, S, 0);
        node(b, nm[6], "Softmax", NULL, 0, &sm, 1, p);
        heads[hd] = mm(b, nm[7], p, v, S, DH, 0);
    }
    npl_accel_tensor_id o = N16(b, "o", 2, S, HQ * DH, 0);
    npl_accel_param ax = {.name = "axis", .type = NPL_ACCEL_PARAM_INT, .i = 1};
    node(b, "o", "Concat", &ax, 1, heads, HQ, o);
    npl_accel_tensor_id att = mm(b, "attn_out", o, W(b, "wo", HQ * DH, D, m->wo), S, D, 0), r1 = N16(b, "res1", 2, S, D, 0);
    npl_accel_tensor_id ra[2] = {x, att};
    node(b, "res1", "Add", NULL, 0, ra, 2, r1);
    npl_accel_tensor_id h2 = rms(b, "ffn_norm", r1, m->g2);
    npl_accel_tensor_id gu[2] = {mm(b, "gate", h2, W(b, "wg", D, F, m->wg), S, F, 0), mm(b, "up", h2, W(b, "wu", D, F, m->wu), S, F, 0)};
    npl_accel_tensor_id act = N16(b, "act", 2, S, F, 0);
    node(b, "act", "SwiGLU", NULL, 0, gu, 2, act);
    npl_accel_tensor_id dn = mm(b, "down", act, W(b, "wd", F, D, m->wd), S, D, 0);
    npl_accel_tensor_id y = T(b, "y", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 2, S, D, 0, NULL), ry[2] = {r1, dn};
    node(b, "res2", "Add", NULL, 0, ry, 2, y);
    if (!b->st && (b->st = b->a->graph_finalize(b->g))) fprintf(stderr, "finalize: %s\n", b->a->last_error(b->be));
    return b->st;
}

static npl_accel_status run(const npl_accel_api *a, npl_accel_backend *be, npl_accel_graph *g, const model *m, uint16_t *y) {
    npl_accel_buffer in[2] = {{"x", (void *)m->x, sizeof m->x}, {"pos", (void *)POS, sizeof POS}}, out = {"y", y, S * D * 2};
    npl_accel_status st = a->graph_execute(g, in, 2, &out, 1);
    if (st) fprintf(stderr, "execute: %s\n", a->last_error(be));
    return st;
}

/* max |a - ref| and max |ref| */
static double max_err(const uint16_t *y, const double *ref, double *mag) {
    double e = 0, mx = 0;
    for (int i = 0; i < S * D; i++) {
        double d = fabs(h2d(y[i]) - ref[i]);
        if (!(d <= e)) e = d; /* NaN counts as the largest error */
        if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    }
    *mag = mx;
    return e;
}

int main(void) {
    qnn_rig r = qnn_rig_open("SM8650");
    static model m;
    unsigned seed = 2026;
    fill(m.x, S * D, &seed, 1.0f);
    for (int i = 0; i < D; i++) m.g1[i] = npl_f32_to_f16(1.0f + 0.25f * accel_frand(&seed)), m.g2[i] = npl_f32_to_f16(1.0f + 0.25f * accel_frand(&seed));
    for (int hd = 0; hd < HQ; hd++) fill(m.wq[hd], D * DH, &seed, 0.35f);
    fill(m.wk, D * DH, &seed, 0.35f), fill(m.wv, D * DH, &seed, 0.35f), fill(m.wo, HQ * DH * D, &seed, 0.25f);
    fill(m.wg, D * F, &seed, 0.3f), fill(m.wu, D * F, &seed, 0.3f), fill(m.wd, F * D, &seed, 0.2f);
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) m.mask[i * S + j] = npl_f32_to_f16(j <= i ? 0.0f : (float)MASKV);
    double ref[S * D], mag;
    reference(&m, POS, ref);

    /* vnpu */
    uint16_t yv[S * D], yq[S * D], yb[S * D];
    const npl_accel_api *va = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    npl_accel_backend *vbe = NULL;
    npl_accel_device *vdev = NULL;
    npl_accel_context *vctx = NULL;
    char err[512] = "";
    gb vb = {va, NULL, NULL, 0, ""};
    vb.st = va->backend_create(NULL, 0, &vbe, err, sizeof err);
    vb.be = vbe;
    if (!vb.st) vb.st = va->device_create(vbe, NULL, 0, &vdev);
    if (!vb.st) vb.st = va->context_create(vbe, vdev, NULL, 0, &vctx);
    if (!vb.st) vb.st = va->graph_create(vctx, "block", &vb.g);
    CHECK_EQ_INT(build(&vb, &m), NPL_ACCEL_OK);
    CHECK(!vb.st && run(va, vbe, vb.g, &m, yv) == NPL_ACCEL_OK);
    const double ev = vb.st ? 1e9 : max_err(yv, ref, &mag);

    /* QNN HTP */
    const npl_accel_api *qa = r.api;
    npl_accel_context *qctx = NULL;
    gb qb = {qa, r.be, NULL, 0, ""};
    qb.st = qa->context_create(r.be, r.dev, NULL, 0, &qctx);
    if (!qb.st) qb.st = qa->graph_create(qctx, "block", &qb.g);
    CHECK_EQ_INT(build(&qb, &m), NPL_ACCEL_OK);
    CHECK(!qb.st && run(qa, r.be, qb.g, &m, yq) == NPL_ACCEL_OK);
    const double eq = qb.st ? 1e9 : max_err(yq, ref, &mag);
    double evq = 0;
    for (int i = 0; i < S * D; i++) evq = fmax(evq, fabs(h2d(yv[i]) - h2d(yq[i])));
    /* f16 activations (QNN HTP computes float graphs in fp16): outputs of
     * magnitude ~|ref| carry ~1e-3 relative rounding per op over ~12 ops */
    const double tol = 0.01 * fmax(1.0, mag);
    printf("block [S %d, D %d, %d q heads / 1 kv head of %d, FFN %d], |y| max %.3f, tolerance %.4f:\n", S, D, HQ, DH, F, mag, tol);
    printf("  vnpu    vs double: max_err %.6f\n  qnn-htp vs double: max_err %.6f\n  vnpu vs qnn-htp:   max_diff %.6f\n", ev, eq, evq);
    CHECK(ev <= tol);
    CHECK(eq <= tol);
    CHECK(evq <= tol);

    /* the context binary round trip: same outputs, bit for bit */
    uint64_t size = 0, wrote = 0;
    void *bin = NULL;
    npl_accel_status st = qb.st ? qb.st : qa->context_get_binary_size(qctx, &size);
    if (!st && !(bin = malloc(size))) st = NPL_ACCEL_ERR_NO_MEMORY;
    if (!st) st = qa->context_get_binary(qctx, bin, size, &wrote);
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
    qa->context_free(qctx);
    npl_accel_context *c2 = NULL;
    npl_accel_graph *g2 = NULL;
    if (!st) st = qa->context_create_from_binary(r.be, r.dev, NULL, 0, bin, wrote, &c2);
    if (!st) st = qa->graph_retrieve(c2, "block", &g2);
    if (st) fprintf(stderr, "reload: %s\n", qa->last_error(r.be));
    CHECK_EQ_INT(st, NPL_ACCEL_OK);
    memset(yb, 0xff, sizeof yb);
    CHECK(!st && run(qa, r.be, g2, &m, yb) == NPL_ACCEL_OK);
    int same = !memcmp(yb, yq, sizeof yq);
    printf("  binary %llu bytes, reloaded and run: outputs %s\n", (unsigned long long)wrote, same ? "bit-identical" : "DIFFER");
    CHECK(same);
    /* other positions after the reload: Rope's angles follow them */
    if (!st) {
        static const int32_t pos2[S] = {0, 7, 30, 31}; /* not a shift of 5..8: Rope is relative in q.k */
        double ref2[S * D], mag2;
        reference(&m, pos2, ref2);
        npl_accel_buffer in[2] = {{"x", m.x, sizeof m.x}, {"pos", (void *)pos2, sizeof pos2}}, out = {"y", yb, sizeof yb};
        CHECK_EQ_INT(qa->graph_execute(g2, in, 2, &out, 1), NPL_ACCEL_OK);
        const double e2 = max_err(yb, ref2, &mag2), moved = max_err(yq, ref2, &mag2);
        printf("  reloaded at positions 0, 7, 30, 31 vs double: max_err %.6f (the outputs at 5..8 are %.3f away)\n", e2, moved);
        CHECK(e2 <= tol);
        CHECK(moved > 10 * tol);
    }
    /* the Rope record damaged: refused with a message, no crash */
    if (!st) {
        uint8_t *bad = malloc(wrote);
        memcpy(bad, bin, wrote);
        bad[wrote - 40] ^= 0x5a; /* inside the record, before the 32-byte footer */
        npl_accel_context *c3 = NULL;
        CHECK_EQ_INT(qa->context_create_from_binary(r.be, r.dev, NULL, 0, bad, wrote, &c3), NPL_ACCEL_ERR_BINARY_CORRUPT);
        printf("  damaged record: %s\n", qa->last_error(r.be));
        CHECK(strstr(qa->last_error(r.be), "host record") != NULL && c3 == NULL);
        npl_accel_binary_info *bi = NULL; /* the QNN part alone is what libQnnSystem reads */
        CHECK_EQ_INT(qa->binary_info_get(r.be, bin, wrote, &bi), NPL_ACCEL_OK);
        CHECK(bi && bi->n_graphs == 1 && !strcmp(bi->graphs[0].name, "block"));
        if (bi) qa->binary_info_free(r.be, bi);
        free(bad);
    }
    free(bin);
    qa->context_free(c2);
    va->context_free(vctx);
    va->device_free(vdev);
    va->backend_free(vbe);
    qnn_rig_close(&r);
    TEST_MAIN_END();
}
