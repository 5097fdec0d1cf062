/* Every graph op on the CPU backend, for every kernel family this CPU has
 * (generic always), against plain double-precision references. Also checks
 * the session: plan caching per shape and arena reuse. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/eval.h"
#include "core/session.h"
#include "cpu/cpu_backend.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* xorshift, uniform in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}
static void fill(float *x, int64_t n, float s) { for (int64_t i = 0; i < n; i++) x[i] = frand() * s; }

static npl_backend be;
static npl_cpu_ctx cc;
static npl_pool *pool;

static const float *read_f32(npl_graph *g, int id, npl_shape *sh) {
    char err[256];
    const void *v = npl_read(g, id, &be, pool, sh, err, sizeof(err));
    if (!v) fprintf(stderr, "npl_read: %s\n", err);
    CHECK(v != NULL);
    return v;
}

static int input2(npl_graph *g, const char *name, npl_type t, int64_t a, int64_t b, const void *data) {
    int64_t ne[2] = {a, b};
    int id = npl_input(g, name, t, 2, ne);
    npl_shape s = {2, {a, b, 1, 1}};
    CHECK(npl_graph_bind(g, id, data, &s) == 0);
    return id;
}

/* matmul with weights of type t: y[n][m] = sum_k w[n][k] x[m][k] */
static void test_matmul(npl_type t, int64_t K, int64_t N, int64_t M) {
    float *w = malloc(sizeof(float) * K * N), *x = malloc(sizeof(float) * K * M), *wd = malloc(sizeof(float) * K * N);
    fill(w, K * N, 1.0f);
    fill(x, K * M, 1.0f);
    const npl_type_traits *tt = npl_type_get(t);
    size_t row;
    CHECK(npl_row_size(t, K, &row) == 0);
    void *wq = malloc(row * N);
    for (int64_t n = 0; n < N; n++) {
        if (t == NPL_TYPE_F32) memcpy((char *)wq + n * row, w + n * K, row);
        else tt->from_float(w + n * K, (char *)wq + n * row, K);
        tt->to_float((char *)wq + n * row, wd + n * K, K); /* what the weights really are */
    }
    npl_graph *g = npl_graph_new();
    int64_t wne[2] = {K, N};
    int wi = npl_weight(g, "w", t, 2, wne, wq);
    int xi = input2(g, "x", NPL_TYPE_F32, K, M, x);
    int y = npl_matmul(g, wi, xi);
    npl_shape sh;
    const float *out = read_f32(g, y, &sh);
    double maxerr = 0, maxref = 0;
    for (int64_t m = 0; out && m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = 0;
            for (int64_t k = 0; k < K; k++) ref += (double)wd[n * K + k] * x[m * K + k];
            double e = fabs(ref - out[m * N + n]);
            if (e > maxerr) maxerr = e;
            if (fabs(ref) > maxref) maxref = fabs(ref);
        }
    /* activations are quantized to 8 bits (as llama.cpp does): per-element error
     * ~ (1/127)/sqrt(12) times weights of rms 0.58, summed over K terms */
    double tol = (tt->vec_dot_type == NPL_TYPE_F32 ? 1e-4 : 0.007 * sqrt((double)K)); /* ~5 sigma */
    if (maxerr > tol) fprintf(stderr, "matmul %s K=%lld N=%lld M=%lld isa=%s: max err %g (max |ref| %g)\n",
                              tt->name, (long long)K, (long long)N, (long long)M, npl_isa_name(cc.isa), maxerr, maxref);
    CHECK(maxerr <= tol);
    CHECK_EQ_INT(sh.ne[0], N);
    CHECK_EQ_INT(sh.ne[1], M);
    npl_graph_free(g);
    free(w); free(x); free(wd); free(wq);
}

static void test_norm_and_elementwise(void) {
    enum { E = 96, R = 5 };
    float x[E * R], w[E], b[E * R];
    fill(x, E * R, 3.0f); fill(w, E, 1.0f); fill(b, E * R, 1.0f);
    npl_graph *g = npl_graph_new();
    int xi = input2(g, "x", NPL_TYPE_F32, E, R, x);
    int wi = input2(g, "w", NPL_TYPE_F32, E, 1, w);
    int bi = input2(g, "b", NPL_TYPE_F32, E, R, b);
    int n = npl_rms_norm(g, xi, wi, 1e-6f);
    int add = npl_add(g, xi, bi), mul = npl_mul(g, xi, wi), sc = npl_scale(g, xi, 0.5f);
    int sw = npl_swiglu(g, xi, bi), ge = npl_geglu(g, xi, bi), cap = npl_softcap(g, xi, 2.0f);
    const float *yn = read_f32(g, n, NULL), *ya = read_f32(g, add, NULL), *ym = read_f32(g, mul, NULL);
    const float *ys = read_f32(g, sc, NULL), *yw = read_f32(g, sw, NULL), *yg = read_f32(g, ge, NULL);
    const float *yc = read_f32(g, cap, NULL);
    if (!yn || !ya || !ym || !ys || !yw || !yg || !yc) { npl_graph_free(g); return; }
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int i = 0; i < E; i++) ss += (double)x[r * E + i] * x[r * E + i];
        double inv = 1.0 / sqrt(ss / E + 1e-6);
        for (int i = 0; i < E; i++) {
            int j = r * E + i;
            double xv = x[j], bv = b[j];
            CHECK_NEAR(yn[j], xv * inv * w[i], 1e-5);
            CHECK_NEAR(ya[j], xv + bv, 1e-6);
            CHECK_NEAR(ym[j], xv * w[i], 1e-6);
            CHECK_NEAR(ys[j], xv * 0.5, 1e-6);
            CHECK_NEAR(yw[j], xv / (1 + exp(-xv)) * bv, 1e-5);
            double gl = 0.5 * xv * (1 + tanh(sqrt(2 / M_PI) * (xv + 0.044715 * xv * xv * xv)));
            CHECK_NEAR(yg[j], gl * bv, 1e-4);
            CHECK_NEAR(yc[j], 2.0 * tanh(xv / 2.0), 1e-5);
        }
    }
    npl_graph_free(g);
}

/* softmax of scale * x over each row, against double precision; rows long
 * enough (and enough of them) that the thread pool splits them, and a row
 * length that is no multiple of the vector width */
static void test_softmax(int64_t E, int64_t R, float scale) {
    float *x = malloc(sizeof(float) * E * R);
    fill(x, E * R, 8.0f);
    npl_graph *g = npl_graph_new();
    int y = npl_softmax(g, input2(g, "x", NPL_TYPE_F32, E, R, x), scale);
    npl_shape sh;
    const float *out = read_f32(g, y, &sh);
    CHECK_EQ_INT(sh.ne[0], E);
    CHECK_EQ_INT(sh.ne[1], R);
    double maxerr = 0;
    for (int64_t r = 0; out && r < R; r++) {
        const float *xr = x + r * E;
        double mx = -1e300, sum = 0, total = 0;
        for (int64_t i = 0; i < E; i++) mx = fmax(mx, (double)scale * xr[i]);
        for (int64_t i = 0; i < E; i++) sum += exp((double)scale * xr[i] - mx);
        for (int64_t i = 0; i < E; i++) {
            const double ref = exp((double)scale * xr[i] - mx) / sum;
            maxerr = fmax(maxerr, fabs(out[r * E + i] - ref) / ref); /* relative: small probabilities count too */
            total += out[r * E + i];
        }
        CHECK_NEAR(total, 1.0, 1e-5);
    }
    if (maxerr > 1e-5) fprintf(stderr, "softmax E=%lld R=%lld scale=%g isa=%s: max rel err %g\n", (long long)E,
                               (long long)R, scale, npl_isa_name(cc.isa), maxerr);
    CHECK(maxerr <= 1e-5);
    npl_graph_free(g);
    free(x);
}

static void test_get_rows_reshape(void) {
    enum { E = 64, V = 10 };
    float tab[E * V];
    fill(tab, E * V, 1.0f);
    uint8_t q[V * 34 * 2];
    for (int v = 0; v < V; v++) npl_type_get(NPL_TYPE_Q8_0)->from_float(tab + v * E, q + v * 68, E);
    int32_t ids[3] = {7, 0, 7};
    npl_graph *g = npl_graph_new();
    int64_t tne[2] = {E, V};
    int t = npl_weight(g, "tab", NPL_TYPE_Q8_0, 2, tne, q);
    int64_t one = NPL_DIM_SEQ;
    int idi = npl_input(g, "ids", NPL_TYPE_I32, 1, &one);
    npl_shape s = {1, {3, 1, 1, 1}};
    npl_graph_bind(g, idi, ids, &s);
    int r = npl_get_rows(g, t, idi);
    int64_t ne[3] = {16, -1, 3};
    int rs = npl_reshape(g, r, 3, ne);
    npl_shape sh;
    const float *y = read_f32(g, rs, &sh);
    CHECK_EQ_INT(sh.ne[0], 16);
    CHECK_EQ_INT(sh.ne[1], 4);
    CHECK_EQ_INT(sh.ne[2], 3);
    for (int i = 0; y && i < 3; i++)
        for (int e = 0; e < E; e++) CHECK_NEAR(y[i * E + e], tab[ids[i] * E + e], 1.0 / 127 + 1e-6);
    /* an id out of range is an error, not a read out of bounds */
    int32_t bad[1] = {V};
    npl_shape s1 = {1, {1, 1, 1, 1}};
    npl_graph_bind(g, idi, bad, &s1);
    char err[256];
    CHECK(npl_read(g, r, &be, pool, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "out of range") != NULL);
    npl_graph_free(g);
}

/* slice: rows cut along dim 0 (3-D input, through a reshape view), the same
 * elements as the input at the offset; out-of-range slices are errors. */
static void test_slice(void) {
    enum { E = 24, R = 3, T = 5 };
    float x[E * R * T];
    fill(x, E * R * T, 1.0f);
    npl_graph *g = npl_graph_new();
    int xi = input2(g, "x", NPL_TYPE_F32, E * R, T, x);
    int64_t ne[3] = {E, R, T};
    int v = npl_reshape(g, xi, 3, ne);
    int s0 = npl_slice(g, v, 0, 7), s1 = npl_slice(g, v, 17, 7), s2 = npl_slice(g, xi, 2 * E, E);
    int offs[3] = {0, 17, 0}, lens[3] = {7, 7, E}, ids[3] = {s0, s1, s2};
    for (int k = 0; k < 3; k++) {
        npl_shape sh;
        const float *y = read_f32(g, ids[k], &sh);
        CHECK_EQ_INT(sh.ne[0], lens[k]);
        CHECK_EQ_INT(sh.ne[1], k < 2 ? R : T);
        CHECK_EQ_INT(sh.ne[2], k < 2 ? T : 1);
        const int64_t rows = k < 2 ? R * T : T, stride = k < 2 ? E : E * R, off = k < 2 ? offs[k] : 2 * E;
        int bad = 0;
        for (int64_t r = 0; y && r < rows; r++)
            for (int i = 0; i < lens[k]; i++) bad += y[r * lens[k] + i] != x[r * stride + off + i];
        CHECK_EQ_INT(bad, 0);
    }
    char err[256];
    int s3 = npl_slice(g, v, 20, 5); /* past the end of a row of 24 */
    CHECK(npl_read(g, s3, &be, pool, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "slice") != NULL && strstr(err, "20..25") != NULL);
    npl_graph_free(g);
    g = npl_graph_new();
    xi = input2(g, "x", NPL_TYPE_F32, E, T, x);
    CHECK(npl_slice(g, xi, -1, 4) < 0 && strstr(npl_graph_error(g), "slice") != NULL);
    npl_graph_free(g);
}

static void rope_ref(const float *x, double *y, int heads, int hd, int n_rot, int pos, double base, double fs, int neox) {
    for (int h = 0; h < heads; h++) {
        const float *xh = x + h * hd;
        double *yh = y + h * hd;
        for (int i = 0; i < hd; i++) yh[i] = xh[i];
        for (int i = 0; i < n_rot / 2; i++) {
            double th = pos * fs * pow(base, -2.0 * i / n_rot);
            int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
            yh[a] = xh[a] * cos(th) - xh[b] * sin(th);
            yh[b] = xh[a] * sin(th) + xh[b] * cos(th);
        }
    }
}

/* Attention over a cache: first a prefill of P rows, then one decode row. */
static void test_rope_attention(int hd, int nh, int nkv, int P, int window) {
    int n_ctx = P + 4;
    int64_t seq = NPL_DIM_SEQ;
    float *q = malloc(sizeof(float) * hd * nh * P), *k = malloc(sizeof(float) * hd * nkv * P),
          *v = malloc(sizeof(float) * hd * nkv * P);
    fill(q, hd * nh * P, 1.0f); fill(k, hd * nkv * P, 1.0f); fill(v, hd * nkv * P, 1.0f);
    int32_t *pos = malloc(sizeof(int32_t) * P);
    for (int i = 0; i < P; i++) pos[i] = i;
    uint16_t *kc = calloc((size_t)hd * nkv * n_ctx, 2), *vc = calloc((size_t)hd * nkv * n_ctx, 2);
    npl_graph *g = npl_graph_new();
    int64_t qn[3] = {hd, nh, seq}, kn[3] = {hd, nkv, seq}, cn[2] = {hd * nkv, n_ctx};
    int qi = npl_input(g, "q", NPL_TYPE_F32, 3, qn), ki = npl_input(g, "k", NPL_TYPE_F32, 3, kn);
    int vi = npl_input(g, "v", NPL_TYPE_F32, 3, kn), pi = npl_input(g, "pos", NPL_TYPE_I32, 1, &seq);
    int kci = npl_state(g, "kc", NPL_TYPE_F16, 2, cn), vci = npl_state(g, "vc", NPL_TYPE_F16, 2, cn);
    int qr = npl_apply_rope(g, qi, pi, hd, 1, 10000.0f, 1.0f), kr = npl_apply_rope(g, ki, pi, hd, 1, 10000.0f, 1.0f);
    float scale = 1.0f / sqrtf((float)hd);
    int o = npl_attention(g, qr, kr, vi, kci, vci, pi, scale, window, 0.0f);
    char err[256];
    npl_graph_session *s = npl_graph_session_new(g, &be, pool, &o, 1, err, sizeof(err));
    CHECK(s != NULL);
    if (!s) return;
    npl_shape s3q = {3, {hd, nh, P, 1}}, s3k = {3, {hd, nkv, P, 1}}, s1 = {1, {P, 1, 1, 1}};
    npl_graph_session_set_input(s, "q", q, &s3q);
    npl_graph_session_set_input(s, "k", k, &s3k);
    npl_graph_session_set_input(s, "v", v, &s3k);
    npl_graph_session_set_input(s, "pos", pos, &s1);
    npl_graph_session_set_state(s, "kc", kc);
    npl_graph_session_set_state(s, "vc", vc);
    CHECK(npl_graph_session_run(s) == 0);
    const float *out = npl_graph_session_output(s, 0)->data;
    /* reference: rope in double, keys/values rounded to f16 as the cache holds them */
    double *qd = malloc(sizeof(double) * hd * nh * P), *kd = malloc(sizeof(double) * hd * nkv * P);
    for (int p = 0; p < P; p++) {
        rope_ref(q + p * hd * nh, qd + p * hd * nh, nh, hd, hd, p, 10000.0, 1.0, 1);
        rope_ref(k + p * hd * nkv, kd + p * hd * nkv, nkv, hd, hd, p, 10000.0, 1.0, 1);
    }
    double maxerr = 0;
    double *sc = malloc(sizeof(double) * P);
    for (int p = 0; p < P; p++)
        for (int h = 0; h < nh; h++) {
            int kvh = h / (nh / nkv);
            double mx = -1e300, sum = 0;
            for (int j = 0; j <= p; j++) {
                if (window > 0 && p - j >= window) { sc[j] = -1e300; continue; }
                double d = 0;
                for (int i = 0; i < hd; i++)
                    d += qd[(p * nh + h) * hd + i] * npl_f16_to_f32(npl_f32_to_f16((float)kd[(j * nkv + kvh) * hd + i]));
                sc[j] = d * scale;
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j <= p; j++) sum += sc[j] > -1e299 ? exp(sc[j] - mx) : 0;
            for (int i = 0; i < hd; i++) {
                double acc = 0;
                for (int j = 0; j <= p; j++)
                    if (sc[j] > -1e299)
                        acc += exp(sc[j] - mx) / sum * npl_f16_to_f32(npl_f32_to_f16(v[(j * nkv + kvh) * hd + i]));
                double e = fabs(acc - out[(p * nh + h) * hd + i]);
                if (e > maxerr) maxerr = e;
            }
        }
    if (maxerr > 2e-3) fprintf(stderr, "attention hd=%d nh=%d nkv=%d P=%d w=%d isa=%s: max err %g\n", hd, nh, nkv, P,
                               window, npl_isa_name(cc.isa), maxerr);
    CHECK(maxerr <= 2e-3); /* q.k in f32 against f16-rounded keys */
    /* same shapes again: the cached plan is reused */
    CHECK(npl_graph_session_run(s) == 0);
    CHECK_EQ_INT(npl_graph_session_n_plans(s), 1);
    /* a decode step (seq 1) makes a second plan */
    npl_shape d3q = {3, {hd, nh, 1, 1}}, d3k = {3, {hd, nkv, 1, 1}}, d1 = {1, {1, 1, 1, 1}};
    int32_t dpos = P;
    npl_graph_session_set_input(s, "q", q, &d3q);
    npl_graph_session_set_input(s, "k", k, &d3k);
    npl_graph_session_set_input(s, "v", v, &d3k);
    npl_graph_session_set_input(s, "pos", &dpos, &d1);
    CHECK(npl_graph_session_run(s) == 0);
    CHECK_EQ_INT(npl_graph_session_n_plans(s), 2);
    /* a position past the cache is a clean error */
    dpos = n_ctx;
    CHECK(npl_graph_session_run(s) != 0);
    CHECK(strstr(npl_graph_session_error(s), "outside the cache") != NULL);
    npl_graph_session_free(s);
    npl_graph_free(g);
    free(q); free(k); free(v); free(pos); free(kc); free(vc); free(qd); free(kd); free(sc);
}

/* Matmuls on the same activations next to each other (q, k, v: a group the
 * session runs in one dispatch, npl_op_exec.exec_group) give each output the
 * bits of its matmul run alone (npl_cpu_matmul) and the double reference's
 * values; M = 1 and 3 take the grouped GEMV path, 20 the GEMM one by one. */
static void test_matmul_group(int64_t M) {
    enum { K = 512, NW = 3 };
    static const npl_type wt[NW] = {NPL_TYPE_Q5_0, NPL_TYPE_Q8_0, NPL_TYPE_Q4_K};
    static const int64_t wn[NW] = {96, 32, 64};
    float *x = malloc(sizeof(float) * K * M), *wf[NW], *wd[NW];
    void *wq[NW];
    fill(x, K * M, 1.0f);
    npl_graph *g = npl_graph_new();
    int xi = input2(g, "x", NPL_TYPE_F32, K, M, x), wi[NW], y[NW];
    for (int i = 0; i < NW; i++) {
        size_t row;
        CHECK(npl_row_size(wt[i], K, &row) == 0);
        wf[i] = malloc(sizeof(float) * K * wn[i]);
        wd[i] = malloc(sizeof(float) * K * wn[i]);
        wq[i] = malloc(row * wn[i]);
        fill(wf[i], K * wn[i], 1.0f);
        for (int64_t n = 0; n < wn[i]; n++) {
            npl_type_get(wt[i])->from_float(wf[i] + n * K, (char *)wq[i] + n * row, K);
            npl_type_get(wt[i])->to_float((char *)wq[i] + n * row, wd[i] + n * K, K);
        }
        int64_t ne[2] = {K, wn[i]};
        char name[8] = {'w', (char)('0' + i), 0};
        wi[i] = npl_weight(g, name, wt[i], 2, ne, wq[i]);
    }
    for (int i = 0; i < NW; i++) y[i] = npl_matmul(g, wi[i], xi); /* consecutive: one group */
    char err[256];
    npl_graph_session *s = npl_graph_session_new(g, &be, pool, y, NW, err, sizeof(err));
    CHECK(s != NULL);
    npl_shape sx = {2, {K, M, 1, 1}};
    CHECK(npl_graph_session_set_input(s, "x", x, &sx) == 0);
    CHECK(npl_graph_session_run(s) == 0);
    for (int i = 0; i < NW; i++) {
        const npl_tensor *o = npl_graph_session_output(s, i);
        npl_tensor tw = {wt[i], {2, {K, wn[i], 1, 1}}, wq[i]}, tx = {NPL_TYPE_F32, {2, {K, M, 1, 1}}, x};
        float *alone = malloc(sizeof(float) * wn[i] * M);
        npl_tensor ty = {NPL_TYPE_F32, {2, {wn[i], M, 1, 1}}, alone};
        void *sc = malloc(npl_cpu_matmul_scratch(&tw, &tx) + 64);
        CHECK(npl_cpu_matmul(&cc, pool, &tw, &tx, &ty, sc, err, sizeof(err)) == 0);
        CHECK_EQ_INT(o->shape.ne[0], wn[i]);
        CHECK(memcmp(o->data, alone, sizeof(float) * wn[i] * M) == 0);
        double maxerr = 0;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < wn[i]; n++) {
                double ref = 0;
                for (int64_t k = 0; k < K; k++) ref += (double)wd[i][n * K + k] * x[m * K + k];
                maxerr = fmax(maxerr, fabs(ref - ((const float *)o->data)[m * wn[i] + n]));
            }
        CHECK(maxerr <= 0.007 * sqrt((double)K));
        free(alone), free(sc);
    }
    npl_graph_session_free(s);
    npl_graph_free(g);
    for (int i = 0; i < NW; i++) free(wf[i]), free(wd[i]), free(wq[i]);
    free(x);
}

/* A chain of ops whose intermediates die early must reuse arena memory. */
static void test_arena_reuse(void) {
    enum { E = 256, R = 8 };
    float x[E * R];
    fill(x, E * R, 1.0f);
    npl_graph *g = npl_graph_new();
    int xi = input2(g, "x", NPL_TYPE_F32, E, R, x);
    int y = xi;
    for (int i = 0; i < 10; i++) y = npl_scale(g, y, 1.5f);
    char err[256];
    npl_graph_session *s = npl_graph_session_new(g, &be, pool, &y, 1, err, sizeof(err));
    npl_shape sh = {2, {E, R, 1, 1}};
    npl_graph_session_set_input(s, "x", x, &sh);
    CHECK(npl_graph_session_run(s) == 0);
    CHECK(npl_graph_session_arena_size(s) <= 2 * E * R * sizeof(float)); /* 10 outputs, 2 live at a time */
    const float *out = npl_graph_session_output(s, 0)->data;
    CHECK_NEAR(out[5], x[5] * pow(1.5, 10), 1e-4);
    npl_graph_session_free(s);
    npl_graph_free(g);
}

/* Builder errors are sticky and name the op. */
static void test_builder_errors(void) {
    npl_graph *g = npl_graph_new();
    int64_t a[2] = {8, 4}, b[2] = {6, 4};
    int x = npl_input(g, "x", NPL_TYPE_F32, 2, a), w = npl_input(g, "w", NPL_TYPE_F32, 2, b);
    int m = npl_matmul(g, w, x);
    char err[256];
    npl_graph_session *s = npl_graph_session_new(g, &be, pool, &m, 1, err, sizeof(err));
    npl_shape sa = {2, {8, 4, 1, 1}}, sb = {2, {6, 4, 1, 1}};
    float buf[64] = {0};
    npl_graph_session_set_input(s, "x", buf, &sa);
    npl_graph_session_set_input(s, "w", buf, &sb);
    CHECK(npl_graph_session_run(s) != 0);
    CHECK(strstr(npl_graph_session_error(s), "inner dims") != NULL);
    npl_graph_session_free(s);
    CHECK(npl_add(g, x, 99) < 0);
    CHECK(npl_graph_error(g) && strstr(npl_graph_error(g), "missing node") != NULL);
    CHECK(npl_scale(g, x, 1.0f) < 0); /* sticky */
    npl_graph_free(g);
}

/* The op table's cpu column: every computed op has a CPU execution; leaves
 * and plugin ops (run by the plugin layer) have none. */
static void test_op_table(void) {
    for (int op = 0; op < NPL_OP_COUNT; op++) {
        const int none = op == NPL_OP_INPUT || op == NPL_OP_WEIGHT || op == NPL_OP_STATE || op == NPL_OP_PLUGIN;
        if ((be.ops[op].exec == NULL) != none) fprintf(stderr, "op %s: CPU execution %s\n", npl_op_name((npl_op)op),
                                                        none ? "unexpected" : "missing");
        CHECK((be.ops[op].exec == NULL) == none);
        CHECK(strcmp(npl_op_name((npl_op)op), "?") != 0);
    }
    CHECK(be.ops[NPL_OP_MATMUL].scratch != NULL && be.ops[NPL_OP_ATTENTION].scratch != NULL);
}

int main(void) {
    pool = npl_pool_new(2);
    npl_isa best = npl_cpu_best_isa();
    for (int isa = NPL_ISA_GENERIC; isa <= (int)best; isa++) {
        npl_cpu_backend_init(&be, &cc, (npl_isa)isa);
        if ((int)cc.isa != isa) continue;
        printf("isa %s\n", npl_isa_name(cc.isa));
        static const npl_type types[] = {NPL_TYPE_F32, NPL_TYPE_F16, NPL_TYPE_Q4_0, NPL_TYPE_Q4_1, NPL_TYPE_Q5_0,
                                         NPL_TYPE_Q5_1, NPL_TYPE_Q8_0, NPL_TYPE_Q2_K, NPL_TYPE_Q3_K, NPL_TYPE_Q4_K,
                                         NPL_TYPE_Q5_K, NPL_TYPE_Q6_K};
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
            test_matmul(types[t], 256, 33, 1);
            test_matmul(types[t], 512, 17, 9);
        }
        test_op_table();
        test_norm_and_elementwise();
        test_get_rows_reshape();
        test_slice();
        test_softmax(37, 3, 1.0f);
        test_softmax(1000, 9, 0.35f);
        test_rope_attention(64, 4, 1, 9, 0);
        test_rope_attention(128, 8, 2, 37, 5);
        test_rope_attention(256, 4, 4, 20, 0);
        test_matmul_group(1);
        test_matmul_group(3);
        test_matmul_group(20);
        test_arena_reuse();
        test_builder_errors();
    }
    npl_pool_free(pool);
    TEST_MAIN_END();
}
