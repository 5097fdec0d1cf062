/* Lowering: one subgraph at one shape -> one accelerator graph. ggml shapes
 * (ne[0] innermost) become ABI dims (dims[0] outermost) by reversal.
 *
 *   MATMUL w[k,n], x[k,m]   -> MatMul x[m,k] . w[n,k] (transpose_in1=1), w STATIC
 *   RMS_NORM, ADD, MUL, SCALE, SWIGLU, GEGLU, ROPE, SOFTMAX -> the op of the same name
 *   ATTENTION q,k,v,kc,vc,pos -> Attention (caches = APP_READWRITE f16 [C, Hkv, D]
 *                               context tensors named like the STATE nodes,
 *                               shared by every graph of the context; kv_len
 *                               for a decode bucket's graph) + Reshape
 *   GET_ROWS act[e,s], ids   -> Gather (a weight table only when it is the tied
 *                               embedding / output matrix: lower_tied.c)
 *   RESHAPE                  -> Reshape
 * (each op's lowering is lower_<x> below, the lower column of core/ops.h).
 * Inputs are APP_WRITE (f32 / i32), the output APP_READ f32; everything in
 * between is NATIVE in the activation precision, except the residual stream
 * (Add, Scale outputs), which stays f32. Attention's q always arrives in f16
 * (a Cast when activations are wider), as the CPU op rounds it: with f32
 * activations the package then computes what the CPU path does.
 *
 * int16 activations are the ABI's dynamic int16 (NPL_ACCEL_QUANT_DYNAMIC): a
 * symmetric scale per block of 32 consecutive elements, computed when the
 * tensor is written (no calibration set needed) — or, with act_lo / act_hi
 * (a target without dynamic int16: QNN HTP), static int16: one scale and
 * offset per tensor from the calibrated range [min(lo, 0), max(hi, 0)],
 * widened 2x (INT16_HEADROOM), cut into 65536 steps (QNN's uint16 with
 * scaleOffset). Then only the matmuls
 * with integer weights (w8 / w4) take and give int16: their input is
 * quantized once per source (Cast -> Quantize), their output dequantized
 * where a consumer reads it (to f32 for the residual Add, else f16). Every
 * other op — norms, RoPE, attention (its scores and softmax), the GLU, the
 * residual — stays an fp16 (f32) island as with --act f16: int16 there would
 * put Gemma's ordinary values on a grid set by its outlier channels.
 *
 * With resid_scale s (a target whose f32 ops compute in f16: QNN HTP, whose
 * ElementWiseAdd gives 68213 + 14446 = 100992) the lowered residual stream
 * holds x * s: Gemma's reaches 1e5 in the BOS row, past f16's 65504, and
 * from the 8th layer on that row, the attention sink of every later one,
 * came out wrong (compile --check). An Add's operands are brought to x * s
 * (a Scale of the branch; s a power of two, exact), a Scale op folds s in,
 * an RmsNorm of x * s takes epsilon * s^2 (it does not see the scale
 * otherwise), and any other consumer, and the segment's output, get x back.
 *
 * Compile option keep_f32 (`npullm compile --keep-f32 class,...`) keeps
 * those tensor classes (see cls_names) in f32 whatever the activation
 * precision, to measure which roundings cost agreement with the CPU path
 * (the compile summary says so). */
#include "compiler/lower.h"
#include "compiler/lower_internal.h"
#include "compiler/requant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant_blocks.h"
#include "core/shape.h"

#define NONE UINT32_MAX

typedef npl_lw lw;

/* Tensor classes of a decoder layer, by op and first consumer: norm_in =
 * RmsNorm feeding a MatMul (attention / FFN / output norms), qkv = the
 * q / k / v MatMuls, qknorm, rope, attn = attention output, o = output
 * projection, post = RmsNorm feeding the residual Add, gu = gate / up
 * MatMuls, glu = the gating product, down = FFN down projection. */
enum { C_NORM_IN, C_QKV, C_QKNORM, C_ROPE, C_ATTN, C_O, C_POST, C_GU, C_GLU, C_DOWN, C_OTHER, C_COUNT };
static const char *const cls_names[C_COUNT] = {"norm_in", "qkv", "qknorm", "rope", "attn", "o",
                                               "post", "gu", "glu", "down", "other"};

int npl_lower_f32_classes(const char *list, uint32_t *mask, char *err, size_t errlen) {
    *mask = 0;
    for (const char *p = list; p && *p;) {
        const size_t len = strcspn(p, ",");
        int c = 0;
        while (c < C_COUNT && !(strlen(cls_names[c]) == len && !strncmp(p, cls_names[c], len))) c++;
        if (c == C_COUNT) {
            size_t o = (size_t)snprintf(err, errlen, "--keep-f32: '%.*s' is not a tensor class (", (int)len, p);
            for (int k = 0; k < C_COUNT && o < errlen; k++)
                o += (size_t)snprintf(err + o, errlen - o, "%s%s", cls_names[k], k + 1 < C_COUNT ? ", " : ")");
            return -1;
        }
        *mask |= 1u << c;
        p += len + (p[len] == ',');
    }
    return 0;
}

static int cls_of(const lw *l, int id);

/* static int16: node id is a matmul with integer weights (w8 / w4), the op
 * that takes and gives int16; every other op is an fp16 island */
static int int16_op(const lw *l, int id) {
    const npl_lower_args *a = l->a;
    const npl_node *nd = npl_graph_node(a->g, id);
    return a->act == NPL_ACCEL_DT_INT16 && a->act_lo && nd->op == NPL_OP_MATMUL &&
           npl_graph_node(a->g, nd->src[0])->op == NPL_OP_WEIGHT && nd->src[0] != a->out_weight &&
           (a->wprec == NPL_WEIGHTS_W8 || a->wprec == NPL_WEIGHTS_W4) && a->act_lo[id] <= a->act_hi[id] &&
           a->act_lo[nd->src[1]] <= a->act_hi[nd->src[1]];
}

/* The activation type of op node id's output. */
static npl_accel_dtype act_of(const lw *l, int id) {
    if (l->f32cls >> cls_of(l, id) & 1) return NPL_ACCEL_DT_F32;
    if (l->a->act == NPL_ACCEL_DT_INT16 && l->a->act_lo && !int16_op(l, id)) return NPL_ACCEL_DT_F16;
    return l->a->act;
}

static int fail_api(lw *l, const char *what) {
    snprintf(l->err, l->errlen, "lowering %s: %s: %s", l->a->gname, what, l->api->last_error(l->be));
    return -1;
}

static void dims_of(const npl_shape *s, npl_accel_tensor_desc *d) {
    d->rank = (uint32_t)s->n_dims;
    for (int i = 0; i < s->n_dims; i++) d->dims[i] = (uint32_t)s->ne[s->n_dims - 1 - i];
}

/* int16 blocks: 32 elements, like q8_0's. The step is then max|block| /
 * 32767: as fine as f16's for an element at 1/32 of its block's largest and
 * finer above, where a scale per row would be set by Gemma's outlier
 * channels (~1e3 times the rest). A row must be a multiple of 32. */
#define INT16_BLOCK 32
static uint32_t int16_block(int64_t row) {
    uint32_t b = INT16_BLOCK;
    while (b >= 32 && row % b) b >>= 1;
    return b >= 32 ? b : 0;
}

/* Static int16 ranges are the calibrated ones widened this much around 0:
 * the min / max over a calibration text underestimates what other inputs
 * reach, and a clipped value's error is unbounded while rounding's is half a
 * step. One bit of the 16 buys 2x: the grid stays finer than fp16 on any
 * tensor whose calibrated range is within 32x its rms (test_qnn_int16: without
 * it, prompts of other tokens than the text's clip). */
#define INT16_HEADROOM 2.0

static int mk(lw *l, const char *name, npl_accel_kind kind, npl_accel_dtype dt, const npl_shape *s, uint32_t *out) {
    npl_accel_tensor_desc d = {.name = name, .kind = kind, .dtype = dt};
    dims_of(s, &d);
    float scale;
    int32_t offset;
    if (dt == NPL_ACCEL_DT_INT16 && l->a->act_lo) {
        /* float = (q + offset) * scale, q in -32768..32767 spanning [lo, hi]
         * (0 included, so padding zeros and ReLU-like zeros are exact) */
        int r = l->rid >= 0 ? l->rid : l->cur;
        for (const npl_node *nd; (nd = npl_graph_node(l->a->g, r))->op == NPL_OP_RESHAPE;) r = nd->src[0]; /* same values */
        const double lo = INT16_HEADROOM * (l->a->act_lo[r] < 0 ? l->a->act_lo[r] : 0),
                     hi = INT16_HEADROOM * (l->a->act_hi[r] > 0 ? l->a->act_hi[r] : 0);
        scale = (float)((hi - lo > 1e-20 ? hi - lo : 1e-20) / 65535.0);
        offset = (int32_t)lrint(lo / scale) + 32768;
        d.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &scale, &offset};
    } else if (dt == NPL_ACCEL_DT_INT16) {
        d.quant.encoding = NPL_ACCEL_QUANT_DYNAMIC;
        if (!(d.quant.block_size = l->blk[l->cur])) {
            snprintf(l->err, l->errlen, "lowering %s: tensor %s: int16 activations need rows (and heads) of a multiple "
                     "of 32 elements", l->a->gname, name);
            return -1;
        }
    }
    if (l->api->tensor_create(l->ag, &d, out) != NPL_ACCEL_OK) return fail_api(l, name);
    return 0;
}

static int node_sfx(lw *l, const char *op, const char *sfx, const npl_accel_param *p, uint32_t np, const uint32_t *in,
                    uint32_t nin, uint32_t out, int id) {
    char nm[64];
    snprintf(nm, sizeof nm, "n%d.%s%s", id, op, sfx); /* validate.c reads the graph node id back */
    npl_accel_node_desc d = {nm, op, p, np, in, nin, &out, 1};
    if (l->api->graph_add_node(l->ag, &d) != NPL_ACCEL_OK) return fail_api(l, nm);
    return 0;
}
static int node(lw *l, const char *op, const npl_accel_param *p, uint32_t np, const uint32_t *in, uint32_t nin,
                uint32_t out, int id) {
    return node_sfx(l, op, "", p, np, in, nin, out, id);
}

/* ---- weights ---- */

/* The accelerator type of a model type, or -1 if it has none. */
static int accel_dt_of(npl_type t) {
    switch (t) {
    case NPL_TYPE_F32: return NPL_ACCEL_DT_F32;
    case NPL_TYPE_F16: return NPL_ACCEL_DT_F16;
    case NPL_TYPE_BF16: return NPL_ACCEL_DT_BF16;
    case NPL_TYPE_I32: return NPL_ACCEL_DT_INT32;
    case NPL_TYPE_Q4_0: return NPL_ACCEL_DT_Q4_0;
    case NPL_TYPE_Q8_0: return NPL_ACCEL_DT_Q8_0;
    case NPL_TYPE_Q4_1: return NPL_ACCEL_DT_Q4_1;
    case NPL_TYPE_Q5_0: return NPL_ACCEL_DT_Q5_0;
    case NPL_TYPE_Q5_1: return NPL_ACCEL_DT_Q5_1;
    case NPL_TYPE_Q2_K: return NPL_ACCEL_DT_Q2_K;
    case NPL_TYPE_Q3_K: return NPL_ACCEL_DT_Q3_K;
    case NPL_TYPE_Q4_K: return NPL_ACCEL_DT_Q4_K;
    case NPL_TYPE_Q5_K: return NPL_ACCEL_DT_Q5_K;
    case NPL_TYPE_Q6_K: return NPL_ACCEL_DT_Q6_K;
    default: return -1;
    }
}

/* keep: every type the accelerator takes stays bit for bit what the model
 * holds (GGML blocks included); only the others are requantized to q8_0. */
static npl_type target_type(npl_type t, npl_weight_prec wp, int64_t k) {
    const npl_type_traits *tr = npl_type_get(t);
    if (wp == NPL_WEIGHTS_KEEP && tr && accel_dt_of(t) >= 0 && t != NPL_TYPE_I32 && k % tr->block_size == 0) return t;
    if (k % 32) return NPL_TYPE_F32;
    if (wp == NPL_WEIGHTS_Q4) return NPL_TYPE_Q4_0;
    return NPL_TYPE_Q8_0;
}

static npl_accel_dtype accel_dt(npl_type t) {
    const int dt = accel_dt_of(t);
    return dt >= 0 ? (npl_accel_dtype)dt : NPL_ACCEL_DT_F32;
}

/* q5_0 -> q8_0 without loss: a q5_0 value is d * (q - 16) with q in [0, 31],
 * so the q8_0 block keeps d and stores q - 16. (Going through floats and
 * requantizing would round every weight a second time.) */
static void q5_0_to_q8_0(const block_q5_0 *x, block_q8_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        y[i].d = x[i].d;
        for (int j = 0; j < QK5_0 / 2; j++) {
            y[i].qs[j] = (int8_t)(((x[i].qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10)) - 16);
            y[i].qs[j + QK5_0 / 2] = (int8_t)(((x[i].qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16);
        }
    }
}

/* Converted bytes of weight node id: use 0 = matmul weights, 1 = f32 vector. */
static int weight_bytes(lw *l, int id, int use) {
    npl_lower_weight *w = &l->a->wc[id];
    if (!use && w->data[0] && w->block && l->a->no_lpbq) { /* an LPBQ weight, wanted per channel now */
        free(w->data[0]), free(w->scales);
        const npl_lower_weight keep1 = *w;
        memset(w, 0, sizeof *w);
        w->data[1] = keep1.data[1], w->size[1] = keep1.size[1], w->dt[1] = keep1.dt[1];
    }
    if (w->data[use]) return 0;
    const npl_node *nd = npl_graph_node(l->a->g, id);
    const npl_type_traits *src = npl_type_get(nd->type);
    int64_t k = nd->shape.ne[0], rows = nd->shape.ne[1] * nd->shape.ne[2] * nd->shape.ne[3];
    /* w4 under a static int16 matmul: QNN's blockwise expansion (LPBQ), which
     * takes integer activations only; fp16 ones keep one scale per channel.
     * The logits matrix keeps one too: its LPBQ FullyConnected, cut into the
     * slices the HTP computes right (qnn_lpbq.c), crashed QNN's finalize
     * (SIGFPE in GraphPrepare) inside a whole-decoder graph, and a crash
     * cannot fall back to the CPU. */
    if (!use && !l->a->no_lpbq && id != l->a->out_weight && l->a->wprec == NPL_WEIGHTS_W4 && int16_op(l, l->cur) &&
        k % NPL_LPBQ_BLOCK == 0 &&
        strcmp(npl_requant_class(nd->name), "output"))
        return npl_requant_lpbq(nd, w, l->err, l->errlen);
    if (!use && id != l->a->out_weight && (l->a->wprec == NPL_WEIGHTS_W8 || l->a->wprec == NPL_WEIGHTS_W4))
        return npl_requant_rows(nd, l->a->wprec == NPL_WEIGHTS_W4 ? 4 : 8, w, l->err, l->errlen);
    npl_type tt = use ? NPL_TYPE_F32 : target_type(nd->type, l->a->wprec, k);
    if (!use && id == l->a->out_weight && k % npl_type_get(l->a->out_type)->block_size == 0) tt = l->a->out_type;
    size_t row_src, row_dst;
    if (!src || !src->to_float || npl_row_size(nd->type, k, &row_src) || npl_row_size(tt, k, &row_dst)) {
        snprintf(l->err, l->errlen, "weight %s: type %s cannot be converted", nd->name, npl_type_name(nd->type));
        return -1;
    }
    w->size[use] = row_dst * (size_t)rows;
    w->dt[use] = accel_dt(tt);
    if (!(w->data[use] = malloc(w->size[use] ? w->size[use] : 1))) goto oom;
    if (tt == nd->type) {
        memcpy(w->data[use], nd->data, w->size[use]);
        return 0;
    }
    if (nd->type == NPL_TYPE_Q5_0 && tt == NPL_TYPE_Q8_0) {
        q5_0_to_q8_0(nd->data, w->data[use], (int64_t)(w->size[use] / sizeof(block_q8_0)));
        return 0;
    }
    float *tmp = malloc((size_t)k * sizeof(float));
    if (!tmp) goto oom;
    const npl_type_traits *dst = npl_type_get(tt);
    for (int64_t r = 0; r < rows; r++) {
        src->to_float((const char *)nd->data + (size_t)r * row_src, tmp, k);
        if (tt == NPL_TYPE_F32) memcpy((char *)w->data[use] + (size_t)r * row_dst, tmp, row_dst);
        else dst->from_float(tmp, (char *)w->data[use] + (size_t)r * row_dst, k);
    }
    free(tmp);
    return 0;
oom:
    snprintf(l->err, l->errlen, "weight %s: out of memory", nd->name);
    return -1;
}

static int weight_tensor(lw *l, int id, int use, uint32_t *out) {
    if (weight_bytes(l, id, use)) return -1;
    const npl_node *nd = npl_graph_node(l->a->g, id);
    npl_lower_weight *w = &l->a->wc[id];
    char name[160];
    snprintf(name, sizeof name, "%s%s", nd->name, use ? "#f32" : "");
    npl_accel_tensor_desc d = {.name = name, .kind = NPL_ACCEL_STATIC, .dtype = w->dt[use], .data = w->data[use],
                               .data_size = w->size[use]};
    float g;
    if (!use && id == l->a->tied) { /* one scale; the rows' own come back as factors (tied_factors) */
        if (npl_lw_tied_factors(l, id, &g)) return -1;
        d.quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &g, NULL};
    } else if (!use && w->scales) { /* per output channel (or per block of it): ABI dims [n, k], axis 0 */
        d.quant = (npl_accel_quant){w->block ? NPL_ACCEL_QUANT_PER_BLOCK : NPL_ACCEL_QUANT_PER_AXIS, 0, w->block,
                                    w->n_scales, w->scales, NULL};
    }
    if (use) { /* a vector: [n] */
        d.rank = 1;
        d.dims[0] = (uint32_t)npl_shape_nelements(&nd->shape);
    } else {
        dims_of(&nd->shape, &d);
    }
    if (l->api->tensor_create(l->ag, &d, out) != NPL_ACCEL_OK) return fail_api(l, name);
    if (!use && id == l->a->tied && l->tied_counted++) return 0;
    l->a->static_bytes += w->size[use];
    return 0;
}

/* A converted copy of node id's tensor in dt (static int16 only): made once
 * per graph, where the first consumer needs it. */
static int converted(lw *l, int id, npl_accel_dtype dt, uint32_t *slot, uint32_t *out) {
    if (*slot == NONE) {
        char name[sizeof l->a->out_name + 16];
        snprintf(name, sizeof name, "%s.n%d.%s", l->a->gname, id, dt == NPL_ACCEL_DT_INT16 ? "i16" : dt == NPL_ACCEL_DT_F16 ? "f16" : "f32");
        l->rid = id;
        const int rc = mk(l, name, NPL_ACCEL_NATIVE, dt, &l->a->shapes[id], slot);
        l->rid = -1;
        if (rc) return -1;
        char nm[48];
        snprintf(nm, sizeof nm, "n%d.Cast.%s", id, name + strlen(name) - 3); /* unique: one per (node, type) */
        npl_accel_node_desc d = {nm, "Cast", NULL, 0, &l->tid[id], 1, slot, 1};
        if (l->api->graph_add_node(l->ag, &d) != NPL_ACCEL_OK) return fail_api(l, nm);
    }
    *out = *slot;
    return 0;
}

/* The type node id's tensor reaches the node being lowered in: static int16
 * tensors are dequantized for every consumer but a Reshape (and an int16
 * matmul, which takes its input through matmul_input) — to f32 for the ops
 * whose output is f32 (the residual Add / Scale), else f16. */
static npl_accel_dtype seen_dt(const lw *l, int id) {
    if (!l->a->act_lo || l->tdt[id] != NPL_ACCEL_DT_INT16) return l->tdt[id];
    const int op = npl_graph_node(l->a->g, l->cur)->op;
    if (op == NPL_OP_RESHAPE) return NPL_ACCEL_DT_INT16;
    return op == NPL_OP_ADD || op == NPL_OP_SCALE || act_of(l, l->cur) == NPL_ACCEL_DT_F32 ? NPL_ACCEL_DT_F32 : NPL_ACCEL_DT_F16;
}

/* Tensor of source node id for a non-matmul-weight use. */
static int src_tensor(lw *l, int id, uint32_t *out) {
    if (l->tid[id] != NONE) {
        const npl_accel_dtype dt = seen_dt(l, id);
        if (dt != l->tdt[id]) {
            if (converted(l, id, dt, dt == NPL_ACCEL_DT_F16 ? &l->deq16[id] : &l->deq32[id], out)) return -1;
        } else {
            *out = l->tid[id];
        }
        if (l->rs == 1.0f) return 0;
        /* the residual scale: an Add takes x * s, a norm and a Scale either
         * (they know which), every other op x */
        const int op = npl_graph_node(l->a->g, l->cur)->op;
        if (op == NPL_OP_ADD && !l->rsc[id]) return npl_lw_rescaled(l, id, *out, dt, l->rs, &l->up[id], out);
        /* x back from the f32 original, whatever the consumer's type (the
         * target casts floats to it), so one copy serves every consumer */
        if (op != NPL_OP_ADD && op != NPL_OP_RMS_NORM && op != NPL_OP_SCALE && l->rsc[id])
            return npl_lw_rescaled(l, id, l->tid[id], l->tdt[id], 1.0f / l->rs, &l->down[id], out);
        return 0;
    }
    if (npl_graph_node(l->a->g, id)->op == NPL_OP_WEIGHT) return weight_tensor(l, id, 1, out);
    snprintf(l->err, l->errlen, "lowering %s: node %d used before it is lowered", l->a->gname, id);
    return -1;
}

/* The output tensor of op node id (dtype: act, f32 for the subgraph output). */
static int out_tensor(lw *l, int id, npl_accel_dtype natural, uint32_t *out) {
    char name[sizeof l->a->out_name];
    if (id == l->a->seg->outputs[0]) {
        snprintf(name, sizeof name, "%s.out", l->a->gname);
        snprintf(l->a->out_name, sizeof l->a->out_name, "%s", name);
        if (mk(l, name, NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F32, &l->a->shapes[id], out)) return -1;
        l->tdt[id] = NPL_ACCEL_DT_F32;
    } else {
        snprintf(name, sizeof name, "%s.n%d", l->a->gname, id);
        if (mk(l, name, NPL_ACCEL_NATIVE, natural, &l->a->shapes[id], out)) return -1;
        l->tdt[id] = natural;
    }
    l->tid[id] = *out;
    return 0;
}

static npl_accel_param pint(const char *n, int64_t v) { return (npl_accel_param){.name = n, .type = NPL_ACCEL_PARAM_INT, .i = v}; }
static npl_accel_param pflt(const char *n, double v) { return (npl_accel_param){.name = n, .type = NPL_ACCEL_PARAM_FLOAT, .f = v}; }

static int cache_tensor(lw *l, int state, const npl_shape *k, uint32_t *out) {
    const npl_node *nd = npl_graph_node(l->a->g, state);
    npl_accel_tensor_desc d = {.name = nd->name, .kind = NPL_ACCEL_APP_READWRITE, .dtype = NPL_ACCEL_DT_F16, .rank = 3};
    d.dims[0] = (uint32_t)nd->shape.ne[1]; /* C */
    d.dims[1] = (uint32_t)k->ne[1];        /* Hkv */
    d.dims[2] = (uint32_t)k->ne[0];        /* D */
    if (nd->type != NPL_TYPE_F16 || nd->shape.ne[0] != k->ne[0] * k->ne[1]) {
        snprintf(l->err, l->errlen, "lowering %s: cache %s is not f16 [head_dim*n_kv, n_ctx]", l->a->gname, nd->name);
        return -1;
    }
    if (l->api->tensor_create(l->ag, &d, out) != NPL_ACCEL_OK) return fail_api(l, nd->name);
    return 0;
}

/* ---- per-op lowerings: the op table's lower column (core/ops.h) ----
 * lower() adds node id's accelerator nodes; refuse() (optional) says why a
 * node of a lowerable op stays on the CPU; tensor_class() (optional, else
 * C_OTHER) names the decoder-layer class of its output. */

typedef struct {
    int (*lower)(lw *l, int id); /* NULL: the op stays on the CPU, for why_not */
    const char *(*refuse)(const npl_graph *g, int id);
    int (*tensor_class)(const lw *l, int id);
    const char *why_not;
} op_lowering;

static const op_lowering lower_cpu_only = {.why_not = "no accelerator op"};
static const op_lowering lower_leaf = {.why_not = "a leaf: inputs, weights and caches become tensors, not nodes"};
static const op_lowering lower_plugin = {.why_not = "already a plugin op"};

/* the op of node id's first consumer in the segment, or -1 */
static int consumer_op(const lw *l, int id) { return l->cons[id] ? l->cons[id] - 1 : -1; }

static int lower_matmul_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    if (nd->src[0] == l->a->tied) return npl_lw_tied_matmul(l, id);
    npl_accel_param p = pint("transpose_in1", 1);
    uint32_t in[2], o;
    const int q = int16_op(l, id), x = nd->src[1];
    if (!q && src_tensor(l, x, &in[0])) return -1;
    if (q) { /* int16 in: the source itself, or its quantized copy (one per source: q, k, v share it) */
        if (l->tid[x] == NONE && src_tensor(l, x, &in[0])) return -1;
        if (l->tdt[x] == NPL_ACCEL_DT_INT16) in[0] = l->tid[x];
        else if (converted(l, x, NPL_ACCEL_DT_INT16, &l->qin[x], &in[0])) return -1;
    }
    if (npl_graph_node(l->a->g, nd->src[0])->op == NPL_OP_WEIGHT) {
        if (weight_tensor(l, nd->src[0], 0, &in[1])) return -1;
    } else if (src_tensor(l, nd->src[0], &in[1])) {
        return -1;
    }
    if (q && id == l->a->seg->outputs[0]) { /* int16 out, then the f32 segment output */
        char name[sizeof l->a->out_name + 16];
        snprintf(name, sizeof name, "%s.n%d.mm16", l->a->gname, id);
        uint32_t t;
        if (mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_INT16, &l->a->shapes[id], &t) || node(l, "MatMul", &p, 1, in, 2, t, id) ||
            out_tensor(l, id, NPL_ACCEL_DT_F32, &o))
            return -1;
        return node(l, "Cast", NULL, 0, &t, 1, o, id);
    }
    if (out_tensor(l, id, act_of(l, id), &o)) return -1;
    return node(l, "MatMul", &p, 1, in, 2, o, id);
}
static int matmul_class(const lw *l, int id) {
    const int s = npl_graph_node(l->a->g, npl_graph_node(l->a->g, id)->src[1])->op, c = consumer_op(l, id);
    if (s == NPL_OP_ATTENTION) return C_O;
    if (s == NPL_OP_GEGLU || s == NPL_OP_SWIGLU) return C_DOWN;
    if (c == NPL_OP_GEGLU || c == NPL_OP_SWIGLU) return C_GU;
    return c == NPL_OP_RESHAPE ? C_QKV : C_OTHER;
}
static const op_lowering lower_matmul = {.lower = lower_matmul_fn, .tensor_class = matmul_class};

static int lower_rms_norm_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    const double k = l->rsc[nd->src[0]] ? l->rs : 1.0; /* x * k: epsilon * k^2 */
    npl_accel_param p = pflt("epsilon", nd->fp[0] * k * k);
    uint32_t in[2], o;
    for (int s = 0; s < nd->n_src; s++)
        if (src_tensor(l, nd->src[s], &in[s])) return -1;
    if (out_tensor(l, id, act_of(l, id), &o)) return -1;
    return node(l, "RmsNorm", &p, 1, in, (uint32_t)nd->n_src, o, id);
}
static int rms_norm_class(const lw *l, int id) {
    const int c = consumer_op(l, id);
    return c == NPL_OP_MATMUL ? C_NORM_IN : c == NPL_OP_ROPE ? C_QKNORM : c == NPL_OP_ADD ? C_POST : C_OTHER;
}
static const op_lowering lower_rms_norm = {.lower = lower_rms_norm_fn, .tensor_class = rms_norm_class};

/* a two-input op of the accelerator op set, output in dt */
static int binary(lw *l, int id, const char *op, npl_accel_dtype dt) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    uint32_t in[2], o;
    if (src_tensor(l, nd->src[0], &in[0]) || src_tensor(l, nd->src[1], &in[1])) return -1;
    if (out_tensor(l, id, dt, &o)) return -1;
    return node(l, op, NULL, 0, in, 2, o, id);
}
/* the residual stream stays f32: Gemma's reaches 3e4, where f16 has a step of 16 */
static int lower_add_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    uint32_t in[2];
    if (src_tensor(l, nd->src[0], &in[0]) || src_tensor(l, nd->src[1], &in[1])) return -1;
    return npl_lw_resid_node(l, id, "Add", NULL, 0, in, 2);
}
static int lower_mul_fn(lw *l, int id) { return binary(l, id, "Mul", act_of(l, id)); }
static int lower_swiglu_fn(lw *l, int id) { return binary(l, id, "SwiGLU", act_of(l, id)); }
static int lower_geglu_fn(lw *l, int id) { return binary(l, id, "GeGLU", act_of(l, id)); }
static int glu_class(const lw *l, int id) { (void)l; (void)id; return C_GLU; }
static const op_lowering lower_add = {.lower = lower_add_fn};
static const op_lowering lower_mul = {.lower = lower_mul_fn};
static const op_lowering lower_swiglu = {.lower = lower_swiglu_fn, .tensor_class = glu_class};
static const op_lowering lower_geglu = {.lower = lower_geglu_fn, .tensor_class = glu_class};

static int lower_scale_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    uint32_t in;
    if (src_tensor(l, nd->src[0], &in)) return -1;
    /* residual: x * s out, s folded in unless x came scaled */
    npl_accel_param p = pflt("scale", nd->fp[0] * (l->rs != 1.0f && !l->rsc[nd->src[0]] ? l->rs : 1.0));
    return npl_lw_resid_node(l, id, "Scale", &p, 1, &in, 1);
}
static const op_lowering lower_scale = {.lower = lower_scale_fn};

/* freq factors (3rd input) and yarn carried over: the CPU op's arithmetic */
static int lower_rope_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    npl_accel_param p[8] = {pint("n_rot", nd->ip[0]), pint("neox", nd->ip[1]), pflt("base", nd->fp[0]),
                            pflt("freq_scale", nd->fp[1])};
    uint32_t np = 4, in[3], o;
    if (nd->ip[2]) {
        p[np++] = pflt("ext_factor", nd->fp[2]);
        p[np++] = pflt("attn_factor", nd->fp[3]);
        p[np++] = pint("corr_low", nd->ip[3]);
        p[np++] = pint("corr_high", nd->ip[4]);
    }
    for (int s = 0; s < nd->n_src; s++)
        if (src_tensor(l, nd->src[s], &in[s])) return -1;
    if (out_tensor(l, id, act_of(l, id), &o)) return -1;
    return node(l, "Rope", p, np, in, (uint32_t)nd->n_src, o, id);
}
static int rope_class(const lw *l, int id) { (void)l; (void)id; return C_ROPE; }
static const op_lowering lower_rope = {.lower = lower_rope_fn, .tensor_class = rope_class};

static int lower_attention_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    const npl_accel_dtype act = act_of(l, id);
    npl_accel_param p[4] = {pflt("scale", nd->fp[0]), pint("window", nd->ip[0]), pflt("softcap", nd->fp[1]),
                            pint("kv_len", l->a->kv_len)};
    const npl_shape *q = &l->a->shapes[nd->src[0]], *k = &l->a->shapes[nd->src[1]];
    uint32_t in[6], o;
    for (int s = 0; s < 3; s++)
        if (src_tensor(l, nd->src[s], &in[s])) return -1;
    if (seen_dt(l, nd->src[0]) != NPL_ACCEL_DT_F16) { /* the CPU op rounds q through f16 (llama.cpp's K.Q) */
        char qn[128];
        snprintf(qn, sizeof qn, "%s.n%d.q16", l->a->gname, id);
        uint32_t q16;
        if (mk(l, qn, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, q, &q16) || node(l, "Cast", NULL, 0, &in[0], 1, q16, id))
            return -1;
        in[0] = q16;
    }
    if (cache_tensor(l, nd->src[3], k, &in[3]) || cache_tensor(l, nd->src[4], k, &in[4]) ||
        src_tensor(l, nd->src[5], &in[5]))
        return -1;
    char name[128];
    snprintf(name, sizeof name, "%s.n%d.heads", l->a->gname, id);
    uint32_t heads;
    npl_accel_dtype hdt = id == l->a->seg->outputs[0] ? NPL_ACCEL_DT_F32 : act;
    if (mk(l, name, NPL_ACCEL_NATIVE, hdt, q, &heads)) return -1; /* [S, Hq, D] */
    if (node(l, "Attention", p, l->a->kv_len > 0 ? 4 : 3, in, 6, heads, id)) return -1;
    if (out_tensor(l, id, act, &o)) return -1;
    return node(l, "Reshape", NULL, 0, &heads, 1, o, id);
}
static int attention_class(const lw *l, int id) { (void)l; (void)id; return C_ATTN; }
static const op_lowering lower_attention = {.lower = lower_attention_fn, .tensor_class = attention_class};

static int lower_get_rows_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    if (nd->src[0] == l->a->tied) return npl_lw_tied_rows(l, id);
    uint32_t in[2], o;
    if (src_tensor(l, nd->src[0], &in[0]) || src_tensor(l, nd->src[1], &in[1]) ||
        out_tensor(l, id, seen_dt(l, nd->src[0]), &o))
        return -1;
    return node(l, "Gather", NULL, 0, in, 2, o, id);
}
static const char *get_rows_refuse(const npl_graph *g, int id) {
    if (npl_graph_node(g, npl_graph_node(g, id)->src[0])->op == NPL_OP_WEIGHT)
        return "row lookup in a weight table (embedding): memory lookup, no matrix work";
    return NULL;
}
static const op_lowering lower_get_rows = {.lower = lower_get_rows_fn, .refuse = get_rows_refuse};

static int lower_reshape_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    uint32_t in, o;
    if (src_tensor(l, nd->src[0], &in)) return -1;
    npl_accel_dtype sdt = seen_dt(l, nd->src[0]);
    if (out_tensor(l, id, sdt, &o)) return -1;
    return node(l, l->tdt[id] == sdt ? "Reshape" : "Cast", NULL, 0, &in, 1, o, id);
}
static const op_lowering lower_reshape = {.lower = lower_reshape_fn};

/* Softmax over the innermost dim (the ABI's last) of beta * x */
static int lower_softmax_fn(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    npl_accel_param p = pflt("beta", nd->fp[0]);
    uint32_t in, o;
    if (src_tensor(l, nd->src[0], &in) || out_tensor(l, id, act_of(l, id), &o)) return -1;
    return node(l, "Softmax", &p, 1, &in, 1, o, id);
}
static const op_lowering lower_softmax = {.lower = lower_softmax_fn};

static const op_lowering *const lowerings[NPL_OP_COUNT] = {
#define LOWERING(e, name, lo, hi, shape, cpu, file, lower) [NPL_OP_##e] = &lower_##lower,
    NPL_OP_LIST(LOWERING)
#undef LOWERING
};

static int cls_of(const lw *l, int id) {
    const op_lowering *x = lowerings[npl_graph_node(l->a->g, id)->op];
    return x->tensor_class ? x->tensor_class(l, id) : C_OTHER;
}

const char *npl_lower_refusal(const npl_graph *g, int id) {
    const npl_node *nd = npl_graph_node(g, id);
    if (!nd || (unsigned)nd->op >= NPL_OP_COUNT) return "no such node";
    const op_lowering *x = lowerings[nd->op];
    if (!x->lower) return x->why_not;
    return x->refuse ? x->refuse(g, id) : NULL;
}

const char *npl_lower_refusal_tied(const npl_graph *g, int id, int tied) {
    const npl_node *nd = npl_graph_node(g, id);
    if (tied >= 0 && nd && nd->op == NPL_OP_GET_ROWS && nd->src[0] == tied) return NULL;
    return npl_lower_refusal(g, id);
}

const char *npl_lower_tied_refusal(const npl_graph *g, int w, npl_weight_prec wprec, npl_accel_dtype act) {
    const npl_node *nd = npl_graph_node(g, w);
    if (wprec != NPL_WEIGHTS_W8) return "the row lookup on the NPU needs --weights w8 (int8 rows with a scale each)";
    if (act != NPL_ACCEL_DT_F16) return "the row lookup on the NPU is built for --act fp16";
    if (!nd || nd->op != NPL_OP_WEIGHT || nd->shape.ne[2] * nd->shape.ne[3] != 1) return "not a 2-D weight matrix";
    return NULL;
}

static int lower_op(lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    l->cur = id;
    const char *why = npl_lower_refusal_tied(l->a->g, id, l->a->tied);
    if (why) {
        snprintf(l->err, l->errlen, "lowering %s: op %s is not lowered: %s", l->a->gname, npl_op_name(nd->op), why);
        return -1;
    }
    return lowerings[nd->op]->lower(l, id);
}

int npl_lower_segment(const npl_accel_api *api, npl_accel_backend *be, npl_accel_context *ctx, npl_lower_args *a,
                      char *err, size_t errlen) {
    int n = npl_graph_n_nodes(a->g), rc = -1;
    lw l = {api, be, ctx, NULL, a, malloc((size_t)n * sizeof(uint32_t)), calloc((size_t)n, sizeof(npl_accel_dtype)),
            err, errlen, calloc((size_t)n, 1), a->f32_classes, NULL, -1, -1, malloc((size_t)n * sizeof(uint32_t)),
            malloc((size_t)n * sizeof(uint32_t)), malloc((size_t)n * sizeof(uint32_t)), 0,
            a->resid_scale > 0 ? a->resid_scale : 1.0f, calloc((size_t)n, 1), malloc((size_t)n * sizeof(uint32_t)),
            malloc((size_t)n * sizeof(uint32_t))};
    if (l.cons)
        for (int k = a->seg->n_nodes - 1; k >= 0; k--) {
            const npl_node *nd = npl_graph_node(a->g, a->seg->nodes[k]);
            for (int s = 0; s < nd->n_src; s++) l.cons[nd->src[s]] = (uint8_t)(nd->op + 1);
        }
    l.blk = calloc((size_t)n, sizeof(uint32_t));
    if (!l.tid || !l.tdt || !l.cons || !l.blk || !l.qin || !l.deq16 || !l.deq32 || !l.rsc || !l.up || !l.down) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* int16 blocks: each tensor's row (and an attention's heads); a Reshape
     * copies values and scales as they are, so its input and output share
     * the smaller block */
    for (int k = 0; k < a->seg->n_nodes; k++) {
        const int id = a->seg->nodes[k];
        const npl_node *nd = npl_graph_node(a->g, id);
        l.blk[id] = int16_block(a->shapes[id].ne[0]);
        if (nd->op == NPL_OP_ATTENTION) {
            const uint32_t h = int16_block(a->shapes[nd->src[0]].ne[0]);
            l.blk[id] = h < l.blk[id] ? h : l.blk[id];
        }
    }
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < a->seg->n_nodes; k++) {
            const int id = a->seg->nodes[pass ? a->seg->n_nodes - 1 - k : k];
            const npl_node *nd = npl_graph_node(a->g, id);
            if (nd->op != NPL_OP_RESHAPE) continue;
            const uint32_t m = l.blk[nd->src[0]] < l.blk[id] ? l.blk[nd->src[0]] : l.blk[id];
            l.blk[nd->src[0]] = l.blk[id] = m;
        }
    for (int i = 0; i < n; i++) l.tid[i] = l.qin[i] = l.deq16[i] = l.deq32[i] = l.up[i] = l.down[i] = NONE;
    if (api->graph_create(ctx, a->gname, &l.ag) != NPL_ACCEL_OK) {
        fail_api(&l, "graph_create");
        goto done;
    }
    for (int i = 0; i < a->seg->n_inputs; i++) {
        int id = a->seg->inputs[i];
        const npl_node *nd = npl_graph_node(a->g, id);
        npl_accel_dtype dt = nd->type == NPL_TYPE_I32 ? NPL_ACCEL_DT_INT32 : NPL_ACCEL_DT_F32;
        if (nd->type != NPL_TYPE_I32 && nd->type != NPL_TYPE_F32) {
            snprintf(err, errlen, "lowering %s: input node %d is %s (f32 or i32 only)", a->gname, id,
                     npl_type_name(nd->type));
            goto done;
        }
        snprintf(a->in_names[i], sizeof a->in_names[i], "%s.in.%s", a->gname,
                 nd->name && nd->op == NPL_OP_INPUT ? nd->name : "x");
        if (nd->op != NPL_OP_INPUT) snprintf(a->in_names[i], sizeof a->in_names[i], "%s.in%d", a->gname, i);
        if (mk(&l, a->in_names[i], NPL_ACCEL_APP_WRITE, dt, &a->shapes[id], &l.tid[id])) goto done;
        l.tdt[id] = dt;
    }
    for (int k = 0; k < a->seg->n_nodes; k++)
        if (lower_op(&l, a->seg->nodes[k])) goto done;
    if (api->graph_finalize(l.ag) != NPL_ACCEL_OK) {
        a->finalize_failed = 1;
        fail_api(&l, "finalize");
        goto done;
    }
    rc = 0;
done:
    free(l.tid);
    free(l.tdt);
    free(l.cons);
    free(l.blk);
    free(l.qin);
    free(l.deq16);
    free(l.deq32);
    free(l.rsc);
    free(l.up);
    free(l.down);
    return rc;
}

void npl_lower_weights_free(npl_lower_weight *wc, int n) {
    if (!wc) return;
    for (int i = 0; i < n; i++) {
        free(wc[i].data[0]);
        free(wc[i].data[1]);
        free(wc[i].scales);
    }
    free(wc);
}

int npl_infer_all(const npl_graph *g, int seq, int n_out, npl_shape *shapes, char *err, size_t errlen) {
    int n = npl_graph_n_nodes(g);
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(g, i);
        if (nd->op == NPL_OP_INPUT) {
            shapes[i] = nd->shape;
            int is_rows = nd->name && !strcmp(nd->name, "out_rows");
            for (int d = 0; d < nd->shape.n_dims; d++)
                if (nd->shape.ne[d] == NPL_DIM_SEQ) shapes[i].ne[d] = is_rows ? n_out : seq;
            continue;
        }
        npl_shape src[NPL_MAX_SRC];
        for (int s = 0; s < nd->n_src; s++) src[s] = shapes[nd->src[s]];
        if (nd->op == NPL_OP_PLUGIN) {
            snprintf(err, errlen, "node %d: the graph already has plugin ops", i);
            return -1;
        }
        if (npl_infer_shape(g, i, src, &shapes[i], err, errlen)) return -1;
    }
    return 0;
}

/* The helpers lower_tied.c builds on. */
int npl_lw_fail_api(npl_lw *l, const char *what) { return fail_api(l, what); }
void npl_lw_dims_of(const npl_shape *s, npl_accel_tensor_desc *d) { dims_of(s, d); }
int npl_lw_mk(npl_lw *l, const char *name, npl_accel_kind kind, npl_accel_dtype dt, const npl_shape *s, uint32_t *out) {
    return mk(l, name, kind, dt, s, out);
}
int npl_lw_node(npl_lw *l, const char *op, const char *sfx, const npl_accel_param *p, uint32_t np, const uint32_t *in,
                uint32_t nin, uint32_t out, int id) {
    return node_sfx(l, op, sfx, p, np, in, nin, out, id);
}
int npl_lw_weight_bytes(npl_lw *l, int id, int use) { return weight_bytes(l, id, use); }
int npl_lw_weight_tensor(npl_lw *l, int id, int use, uint32_t *out) { return weight_tensor(l, id, use, out); }
int npl_lw_src_tensor(npl_lw *l, int id, uint32_t *out) { return src_tensor(l, id, out); }
int npl_lw_out_tensor(npl_lw *l, int id, npl_accel_dtype natural, uint32_t *out) { return out_tensor(l, id, natural, out); }
