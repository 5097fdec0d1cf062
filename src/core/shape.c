/* Shape inference per op (see shape.h). */
#include "core/shape.h"

#include <stdio.h>
#include <string.h>

typedef int (*shape_fn)(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n);

#define FAIL(...) do { snprintf(err, n, __VA_ARGS__); return -1; } while (0)

static npl_shape make(int n_dims, int64_t a, int64_t b, int64_t c, int64_t d) {
    npl_shape s = {n_dims, {a, b, c, d}};
    return s;
}
static int64_t rows_of(const npl_shape *s) { return s->ne[1] * s->ne[2] * s->ne[3]; }

static int shape_leaf(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)src; (void)err; (void)n;
    *out = nd->shape;
    return 0;
}
static int shape_get_rows(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd;
    if (src[1].ne[1] != 1 || src[1].ne[2] != 1 || src[1].ne[3] != 1) FAIL("ids must be 1-D");
    *out = make(2, src[0].ne[0], src[1].ne[0], 1, 1);
    return 0;
}
static int shape_same(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd; (void)err; (void)n;
    *out = src[0];
    return 0;
}
static int shape_rms_norm(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    if (nd->n_src == 2 && (src[1].ne[0] != src[0].ne[0] || rows_of(&src[1]) != 1))
        FAIL("weight has %lld elements, rows have %lld", (long long)src[1].ne[0], (long long)src[0].ne[0]);
    *out = src[0];
    return 0;
}
static int shape_matmul(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd;
    if (src[0].ne[0] != src[1].ne[0])
        FAIL("inner dims differ: weight %lld, input %lld", (long long)src[0].ne[0], (long long)src[1].ne[0]);
    if (src[0].ne[2] != 1 || src[0].ne[3] != 1) FAIL("weight must be 2-D");
    *out = make(src[1].n_dims < 2 ? 2 : src[1].n_dims, src[0].ne[1], src[1].ne[1], src[1].ne[2], src[1].ne[3]);
    return 0;
}
static int shape_binary(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd;
    int same = 1;
    for (int i = 0; i < NPL_MAX_DIMS; i++) same &= src[0].ne[i] == src[1].ne[i];
    if (!same && !(src[1].ne[0] == src[0].ne[0] && rows_of(&src[1]) == 1))
        FAIL("shapes do not broadcast: [%lld,%lld] and [%lld,%lld]", (long long)src[0].ne[0],
             (long long)rows_of(&src[0]), (long long)src[1].ne[0], (long long)rows_of(&src[1]));
    *out = src[0];
    return 0;
}
static int shape_rope(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    if (src[1].ne[0] != src[0].ne[2]) FAIL("pos has %lld entries for %lld positions", (long long)src[1].ne[0], (long long)src[0].ne[2]);
    if (nd->ip[0] <= 0 || nd->ip[0] > src[0].ne[0] || (nd->ip[0] & 1)) FAIL("n_rot %d invalid for head size %lld", nd->ip[0], (long long)src[0].ne[0]);
    if (nd->n_src == 3 && (src[2].ne[0] != nd->ip[0] / 2 || npl_shape_nelements(&src[2]) != src[2].ne[0]))
        FAIL("frequency factors have %lld entries for n_rot %d (expected n_rot/2)", (long long)npl_shape_nelements(&src[2]), nd->ip[0]);
    *out = src[0];
    return 0;
}
static int shape_attention(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd;
    const npl_shape *q = &src[0], *k = &src[1], *v = &src[2], *kc = &src[3], *vc = &src[4], *pos = &src[5];
    int64_t hd = q->ne[0], nh = q->ne[1], nkv = k->ne[1], seq = q->ne[2];
    if (k->ne[0] != hd || v->ne[0] != hd || v->ne[1] != nkv) FAIL("q/k/v head shapes differ");
    if (k->ne[2] != seq || v->ne[2] != seq || pos->ne[0] != seq) FAIL("q/k/v/pos lengths differ");
    if (nkv <= 0 || nh % nkv) FAIL("%lld heads not a multiple of %lld kv heads", (long long)nh, (long long)nkv);
    if (kc->ne[0] != hd * nkv || vc->ne[0] != hd * nkv || kc->ne[1] != vc->ne[1])
        FAIL("cache rows are %lld, need %lld", (long long)kc->ne[0], (long long)(hd * nkv));
    *out = make(2, hd * nh, seq, 1, 1);
    return 0;
}
static int shape_glu(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd;
    for (int i = 0; i < NPL_MAX_DIMS; i++)
        if (src[0].ne[i] != src[1].ne[i]) FAIL("gate and up shapes differ");
    *out = src[0];
    return 0;
}
static int shape_reshape(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    int64_t total = npl_shape_nelements(&src[0]), known = 1;
    int infer = -1, nd_ = nd->ip[0];
    npl_shape s = make(nd_, 1, 1, 1, 1);
    for (int i = 0; i < nd_; i++) {
        int64_t d = nd->ip[1 + i];
        if (d == -1) {
            if (infer >= 0) FAIL("two inferred dims");
            infer = i;
        } else {
            s.ne[i] = d;
            known *= d;
        }
    }
    if (infer >= 0) {
        if (known <= 0 || total % known) FAIL("%lld elements do not split by %lld", (long long)total, (long long)known);
        s.ne[infer] = total / known;
    }
    if (npl_shape_nelements(&s) != total) FAIL("%lld elements reshaped to %lld", (long long)total, (long long)npl_shape_nelements(&s));
    *out = s;
    return 0;
}

static int shape_slice(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    int64_t off = nd->ip[0], len = nd->ip[1];
    if (off < 0 || len < 1 || off + len > src[0].ne[0])
        FAIL("elements %lld..%lld of rows of %lld", (long long)off, (long long)(off + len), (long long)src[0].ne[0]);
    *out = src[0];
    out->ne[0] = len;
    return 0;
}

/* plugin ops take their shape from the plugin layer's hook (npl_infer_shape_ex) */
static int shape_plugin(const npl_node *nd, const npl_shape *src, npl_shape *out, char *err, size_t n) {
    (void)nd; (void)src; (void)out;
    FAIL("no shape kernel registered");
}

static const shape_fn shape_table[NPL_OP_COUNT] = {
#define SHAPE_FN(e, name, lo, hi, shape, cpu, file, lower) [NPL_OP_##e] = shape_##shape,
    NPL_OP_LIST(SHAPE_FN)
#undef SHAPE_FN
};

int npl_op_shape_is_dynamic(npl_op op) { (void)op; return 0; }

int npl_infer_shape_ex(const npl_graph *g, int id, const npl_shape *src, npl_shape *out,
                       const npl_plugin_shape_hook *hook, char *err, size_t errlen) {
    const npl_node *nd = npl_graph_node(g, id);
    if (!nd) {
        snprintf(err, errlen, "node %d does not exist", id);
        return -1;
    }
    if (nd->op == NPL_OP_PLUGIN && hook && hook->fn) return hook->fn(hook->user, g, id, src, out, err, errlen);
    char msg[200];
    if (shape_table[nd->op](nd, src, out, msg, sizeof(msg)) != 0) {
        snprintf(err, errlen, "node %d (%s%s%s): %s", id, npl_op_name(nd->op), nd->name ? " " : "",
                 nd->name ? nd->name : "", msg);
        return -1;
    }
    return 0;
}

int npl_infer_shape(const npl_graph *g, int id, const npl_shape *src, npl_shape *out, char *err, size_t errlen) {
    return npl_infer_shape_ex(g, id, src, out, NULL, err, errlen);
}
