/* Lowering of the accelerator op vocabulary (include/npullm_accel.h, the ops
 * vnpu documents in vnpu_ops.c) to QNN HTP ops:
 *   MatMul         x [.., M, K], w [K, N] (or [N, K], transpose_in1=1), bias [N]?.
 *                  A STATIC rank-2 weight (per-tensor, or per-axis on its output
 *                  channel) becomes QNN FullyConnected with an [N, K] copy of the
 *                  weight: the emulator runs FullyConnected ~25x faster than MatMul
 *                  at 512x2048x2048 int8. Otherwise QNN MatMul (transpose_in0 = 0).
 *                  A float x with int8 weights and an f32 output (the logits):
 *                  computed in f16, then Cast to f32 (f32 x int8 fails finalize).
 *   FullyConnected x [M, K], w [N, K], bias [N]? -> QNN FullyConnected.
 *   Add, Mul       -> ElementWiseAdd, ElementWiseMultiply (numpy broadcast).
 *   Scale          x * scale -> ElementWiseMultiply by a STATIC scalar.
 *   Softmax        over the last dim, beta -> Softmax(axis = rank-1, beta).
 *   RmsNorm        x [.., D], gamma [D]?, epsilon (1e-6) -> RmsNorm(axes = {rank-1});
 *                  without gamma a float x gets a gamma of ones.
 *   Gelu, Reshape  -> Gelu, Reshape.
 *   Transpose      perm (INTS, one per dim) -> Transpose.
 *   Concat         inputs along axis (0; negative counts from the end) -> Concat.
 *   Gather         table [V, D], indices INT32 [..] along axis (0) -> Gather.
 *   StridedSlice   begin, end (INTS, one per dim; end clamped to the dim), strides
 *                  (INTS, 1s) -> StridedSlice(ranges).
 *   Cast           float <-> float / INT32 -> float: Cast; float -> INT8/UINT8/INT16:
 *                  Quantize; quantized -> float: Dequantize; quantized -> quantized:
 *                  Convert. Quantize and Dequantize are accepted as names too.
 *   Silu, SwiGLU, GeGLU, Rope: compositions, qnn_ops_compose.c.
 *   Attention      composed, with the KV caches as host buffers: qnn_attn.c.
 * QNN checks types and shapes itself (at add-node, finalize); its refusals
 * reach the caller with QNN's message and log. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

#define NOMEM(be) qnn_fail((be), NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory")

const npl_accel_param *qnn_param(const npl_accel_node_desc *n, const char *name) {
    for (uint32_t i = 0; i < n->n_params; i++)
        if (n->params[i].name && !strcmp(n->params[i].name, name)) return &n->params[i];
    return NULL;
}

Qnn_Param_t qnn_scalar(const char *name, uint32_t dt) {
    Qnn_Param_t p;
    memset(&p, 0, sizeof p);
    p.paramType = QNN_PARAMTYPE_SCALAR;
    p.name = name;
    p.scalarParam.dataType = dt;
    return p;
}

char *qnn_keep_name(qnn_graph *g, const char *base, const char *suffix) {
    char *s = qnn_keep(g, strlen(base) + strlen(suffix) + 1);
    if (s) strcpy(s, base), strcat(s, suffix);
    return s;
}

/* A STATIC graph tensor holding a copy of `data` (kept until finalize). */
npl_accel_status qnn_const(qnn_graph *g, const char *nm, const char *suffix, uint32_t qdt, const Qnn_QuantizeParams_t *qp,
                           uint32_t rank, const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Tensor_t *out) {
    char *name = qnn_keep_name(g, nm, suffix);
    uint32_t *d = qnn_keep(g, sizeof *d * rank);
    void *p = qnn_keep(g, bytes);
    if (!name || !d || !p) return NOMEM(g->ctx->be);
    memcpy(d, dims, sizeof *d * rank);
    memcpy(p, data, bytes);
    return qnn_static_tensor(g, name, qdt, qp, rank, d, p, bytes, out);
}

npl_accel_status qnn_tensor_param(qnn_graph *g, const char *nm, const char *pname, uint32_t qdt, uint32_t rank,
                                  const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Param_t *out) {
    memset(out, 0, sizeof *out);
    out->paramType = QNN_PARAMTYPE_TENSOR;
    out->name = pname;
    char suffix[64] = ".";
    strncat(suffix, pname, sizeof suffix - 2);
    return qnn_const(g, nm, suffix, qdt, NULL, rank, dims, data, bytes, &out->tensorParam);
}

npl_accel_status qnn_native(qnn_graph *g, const char *nm, const char *suffix, const Qnn_Tensor_t *like, uint32_t rank,
                            const uint32_t *dims, Qnn_Tensor_t *out) {
    char *name = qnn_keep_name(g, nm, suffix);
    uint32_t *d = qnn_keep(g, sizeof *d * rank);
    if (!name || !d) return NOMEM(g->ctx->be);
    memcpy(d, dims, sizeof *d * rank);
    memset(out, 0, sizeof *out);
    out->version = QNN_TENSOR_VERSION_2;
    out->v2.name = name;
    out->v2.type = QNN_TENSOR_TYPE_NATIVE;
    out->v2.dataType = like->v2.dataType;
    out->v2.rank = rank;
    out->v2.dimensions = d;
    out->v2.memType = QNN_TENSORMEMTYPE_RAW;
    out->v2.quantizeParams = like->v2.quantizeParams;
    qnn_log_reset();
    Qnn_ErrorHandle_t e = g->ctx->validate ? QNN_SUCCESS : g->ctx->be->q->tensorCreateGraphTensor(g->g, out);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(g->ctx->be, e, NPL_ACCEL_ERR_INTERNAL, "graph '%s': creating tensor '%s'", g->name, name);
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_node(qnn_lw *L, const char *suffix, const char *type, Qnn_Tensor_t *in, uint32_t n_in,
                          Qnn_Tensor_t *out, Qnn_Param_t *prm, uint32_t np) {
    qnn_graph *g = L->g;
    const char *name = *suffix ? qnn_keep_name(g, L->nm, suffix) : L->nm;
    if (!name) return NOMEM(L->be);
    Qnn_OpConfig_t op;
    memset(&op, 0, sizeof op);
    op.version = QNN_OPCONFIG_VERSION_1;
    op.name = name;
    op.packageName = "qti.aisw";
    op.typeName = type;
    op.numOfParams = np;
    op.params = np ? prm : NULL;
    op.numOfInputs = n_in;
    op.inputTensors = in;
    op.numOfOutputs = 1;
    op.outputTensors = out;
    qnn_log_reset();
    if (g->ctx->validate) { /* validate_node: QNN's own check of the op, nothing is added */
        Qnn_ErrorHandle_t e = L->be->q->backendValidateOpConfig && !L->trust_finalize
                                  ? L->be->q->backendValidateOpConfig(L->be->be, op) : QNN_SUCCESS;
        if (e != QNN_SUCCESS) { /* whatever QNN's code (often INVALID_ARGUMENT): the node is not supported */
            qnn_fail_q(L->be, e, NPL_ACCEL_ERR_UNSUPPORTED, "node '%s' (%s as QNN %s%s%s): refused by QNN's validation", L->nm,
                       L->n->op, type, *suffix ? " " : "", suffix);
            return NPL_ACCEL_ERR_UNSUPPORTED;
        }
        g->n_nodes++;
        return NPL_ACCEL_OK;
    }
    Qnn_ErrorHandle_t e = L->be->q->graphAddNode(g->g, op);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(L->be, e, NPL_ACCEL_ERR_TYPE_MISMATCH, "graph '%s': node '%s' (%s as QNN %s) refused", g->name,
                          L->nm, L->n->op, type);
    g->n_nodes++;
    return NPL_ACCEL_OK;
}

/* A hidden tensor node + sfx of the graph: an input or output the adapter binds at execute. */
npl_accel_status qnn_hidden_tensor(qnn_lw *L, const char *sfx, npl_accel_kind kind, npl_accel_dtype dt, uint32_t rank,
                                   const uint32_t *dims, npl_accel_tensor_id *id, Qnn_Tensor_t *q) {
    npl_accel_context *c = L->g->ctx;
    /* graph-qualified: the graphs of one context (one per shape) hold nodes of the same names */
    char *name = malloc(strlen(L->g->name) + strlen(L->nm) + strlen(sfx) + 2);
    if (!name) return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    strcpy(name, L->g->name), strcat(name, ":"), strcat(name, L->nm), strcat(name, sfx);
    for (uint32_t i = 0; i < c->n_t; i++)
        if (!strcmp(c->t[i].name, name)) {
            npl_accel_status st = qnn_fail(L->be, NPL_ACCEL_ERR_DUPLICATE_NAME,
                                           "qnn-htp: node '%s': its hidden tensor '%s' exists already (node names must be unique)", L->nm, name);
            free(name);
            return st;
        }
    qnn_tensor *t = qnn_context_append_tensor(c);
    if (!t) {
        free(name);
        return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    t->name = name, t->kind = kind, t->dtype = dt, t->rank = rank, t->graph = L->g, t->hidden = 1;
    memcpy(t->dims, dims, sizeof(uint32_t) * rank);
    t->bytes = qnn_n_elems(rank, dims) * qnn_elem_bytes(dt);
    *id = c->n_t++;
    Qnn_Tensor_t *qt;
    npl_accel_status st = qnn_graph_tensor(L->g, *id, &qt);
    if (!st) *q = *qt;
    return st;
}

static int is_float(npl_accel_dtype dt) { return dt == NPL_ACCEL_DT_F16 || dt == NPL_ACCEL_DT_F32; }

npl_accel_status qnn_in(qnn_lw *L, uint32_t i, Qnn_Tensor_t *out) {
    Qnn_Tensor_t *t;
    npl_accel_tensor_id id = L->n->inputs[i];
    const npl_accel_dtype dt = L->g->ctx->t[id].dtype;
    const int conv = L->cdt != NPL_ACCEL_DT_COUNT && is_float(dt) && dt != L->cdt;
    npl_accel_status st = NPL_ACCEL_OK;
    if (conv && L->g->ctx->t[id].kind == NPL_ACCEL_STATIC) st = qnn_static_as(L->g->ctx, id, L->cdt, &id);
    if (!st) st = qnn_graph_tensor(L->g, id, &t);
    if (st) return st;
    *out = *t;
    if (!conv || L->g->ctx->t[id].kind == NPL_ACCEL_STATIC) return NPL_ACCEL_OK;
    Qnn_Tensor_t like = *t, c;
    char sfx[32];
    snprintf(sfx, sizeof sfx, ".in%u.cast", i);
    like.v2.dataType = qnn_dtype(L->cdt);
    if ((st = qnn_native(L->g, L->nm, sfx, &like, t->v2.rank, t->v2.dimensions, &c))) return st;
    if ((st = qnn_node(L, sfx, "Cast", out, 1, &c, NULL, 0))) return st;
    *out = c;
    return NPL_ACCEL_OK;
}

const qnn_tensor *qnn_lw_t(const qnn_lw *L, uint32_t i) { return &L->g->ctx->t[L->n->inputs[i]]; }

static int is_quant(npl_accel_dtype dt) { return dt == NPL_ACCEL_DT_INT8 || dt == NPL_ACCEL_DT_UINT8 || dt == NPL_ACCEL_DT_INT16; }

/* Lowerings whose QNN op takes the node's inputs as they are. */
static npl_accel_status lower_plain(qnn_lw *L) {
    Qnn_Tensor_t in[QNN_MAX_IN];
    npl_accel_status st;
    for (uint32_t i = 0; i < L->n->n_inputs; i++)
        if ((st = qnn_in(L, i, &in[i]))) return st;
    return qnn_node(L, "", L->row->qnn, in, L->n->n_inputs, &L->out, NULL, 0);
}

/* An [N, K] weight with its scales on N, as FullyConnected takes it. */
static int fc_weight_ok(const qnn_tensor *w, int wt) {
    if (w->kind != NPL_ACCEL_STATIC || w->rank != 2) return 0;
    if (w->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK) return wt; /* [N, K] only (checked at create) */
    return w->quant.encoding != NPL_ACCEL_QUANT_PER_AXIS || w->quant.axis == (wt ? 0 : 1);
}

/* A blockwise-expansion FullyConnected cut along its output channels into
 * slices of sl (qnn_lpbq.c: the shapes the HTP gets right), each slice's
 * rows a shared context record, the outputs joined by a Concat on the last
 * axis (same type and quant params as the output: exact). */
static npl_accel_status lower_fc_sliced(qnn_lw *L, const Qnn_Tensor_t *x, npl_accel_tensor_id wid, uint32_t sl,
                                        Qnn_Tensor_t *out, Qnn_Param_t *prm, uint32_t np) {
    npl_accel_context *c = L->g->ctx;
    const uint32_t N = c->t[wid].dims[0], ns = (N + sl - 1) / sl, rank = out->v2.rank;
    Qnn_Tensor_t *parts = qnn_keep(L->g, sizeof *parts * ns);
    if (!parts) return NOMEM(L->be);
    npl_accel_status st = NPL_ACCEL_OK;
    for (uint32_t i = 0; i < ns && !st; i++) {
        const uint32_t n0 = i * sl, n = N - n0 < sl ? N - n0 : sl;
        npl_accel_tensor_id sid;
        Qnn_Tensor_t *w, in[2] = {*x};
        uint32_t dims[NPL_ACCEL_MAX_RANK];
        char sfx[32];
        memcpy(dims, out->v2.dimensions, sizeof(uint32_t) * rank);
        dims[rank - 1] = n;
        snprintf(sfx, sizeof sfx, ".n%u", n0);
        if ((st = qnn_weight_rows(c, wid, n0, n, &sid)) || (st = qnn_graph_tensor(L->g, sid, &w))) break;
        in[1] = *w;
        if (!(st = qnn_native(L->g, L->nm, sfx, out, rank, dims, &parts[i])))
            st = qnn_node(L, sfx, "FullyConnected", in, 2, &parts[i], prm, np);
    }
    if (st) return st;
    Qnn_Param_t ax = qnn_scalar("axis", QNN_DATATYPE_UINT_32);
    ax.scalarParam.u32 = rank - 1;
    return qnn_node(L, ".concat", "Concat", parts, ns, out, &ax, 1);
}

static npl_accel_status lower_matmul(qnn_lw *L) {
    const npl_accel_param *t0 = qnn_param(L->n, "transpose_in0"), *t1 = qnn_param(L->n, "transpose_in1");
    const int fc = !strcmp(L->n->op, "FullyConnected"), wt = fc || (t1 && t1->i);
    if (t0 && t0->i) return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': transpose_in0 is not supported", L->nm);
    Qnn_Tensor_t in[3], out = L->out;
    Qnn_Param_t prm[2];
    uint32_t np = 0, n_in = L->n->n_inputs, xrank = qnn_lw_t(L, 0)->rank;
    /* f32 x int8 weights fail finalize (1002): a float x with int8 weights and
     * an f32 output (the logits) computes in f16, then a Cast to f32 */
    const int f16_out = L->cdt == NPL_ACCEL_DT_F32 && is_float(qnn_lw_t(L, 0)->dtype) && is_quant(qnn_lw_t(L, 1)->dtype);
    if (f16_out) {
        Qnn_Tensor_t like = L->out;
        like.v2.dataType = QNN_DATATYPE_FLOAT_16;
        L->cdt = NPL_ACCEL_DT_F16;
        npl_accel_status st = qnn_native(L->g, L->nm, ".f16", &like, L->out.v2.rank, L->out.v2.dimensions, &out);
        if (st) return st;
    }
    npl_accel_status st = qnn_in(L, 0, &in[0]);
    if (!st && n_in == 3) st = qnn_in(L, 2, &in[2]);
    if (st) return st;
    /* QNN 2.51's HTP (seen in its x86 emulator) computes a FullyConnected
     * with a quantized input of exactly 16 rows wrong inside a compiled model
     * (Cast in, Cast out): rows 2-15 come out 0, so a chunk-16 int16 package
     * failed its check (15, 17, 32, 128 rows are right; alone the op is:
     * test_qnn_ops; in a model: test_qnn_int16). MatMul gets them right; a
     * per-block weight has no MatMul form, so it stays. */
    uint32_t m_rows = 1;
    for (uint32_t i = 0; i + 1 < xrank; i++) m_rows *= qnn_lw_t(L, 0)->dims[i];
    const int m16 = m_rows == 16 && is_quant(qnn_lw_t(L, 0)->dtype) && (!fc || (n_in == 2 && xrank == 2)) &&
                    qnn_lw_t(L, 1)->quant.encoding != NPL_ACCEL_QUANT_PER_BLOCK;
    if (!m16 && (fc || fc_weight_ok(qnn_lw_t(L, 1), wt))) {
        npl_accel_tensor_id wid = L->n->inputs[1];
        const npl_accel_dtype wdt = L->g->ctx->t[wid].dtype;
        if (L->cdt != NPL_ACCEL_DT_COUNT && is_float(wdt) && wdt != L->cdt && (st = qnn_static_as(L->g->ctx, wid, L->cdt, &wid))) return st;
        if (!wt && (st = qnn_weight_nk(L->g->ctx, wid, &wid))) return st;
        const npl_accel_param *kd = qnn_param(L->n, "keep_dims");
        if (xrank > 2 || (kd && kd->i)) prm[np] = qnn_scalar("keep_dims", QNN_DATATYPE_BOOL_8), prm[np++].scalarParam.b8 = 1;
        const qnn_tensor *wr = &L->g->ctx->t[wid];
        const int lpbq = wr->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK;
        const uint32_t sl = lpbq ? qnn_lpbq_slice(wr->dims[1], wr->dims[0]) : wr->dims[0];
        if (lpbq && sl > L->g->lpbq_widest) L->g->lpbq_widest = sl;
        if (!sl)
            return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': no blockwise-expansion FullyConnected "
                            "shape known to work for K %u", L->nm, wr->dims[1]);
        if (sl < wr->dims[0]) {
            if (n_in == 3)
                return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': a sliced blockwise-expansion "
                                "FullyConnected takes no bias", L->nm);
            if ((st = lower_fc_sliced(L, &in[0], wid, sl, &out, prm, np))) return st;
            return f16_out ? qnn_node(L, "", "Cast", &out, 1, &L->out, NULL, 0) : NPL_ACCEL_OK;
        }
        Qnn_Tensor_t *w;
        if ((st = qnn_graph_tensor(L->g, wid, &w))) return st;
        in[1] = *w;
        /* float x with a per-tensor int8 weight: validation refuses it ("[..] has incorrect Value 0, expected
         * equal to 1", 3110), finalize and execute compute it right (bench/qnn-probe/p11_tied.c, pt / ptrs) */
        L->trust_finalize = is_float(qnn_lw_t(L, 0)->dtype) && wr->dtype == NPL_ACCEL_DT_INT8 &&
                            wr->quant.encoding == NPL_ACCEL_QUANT_PER_TENSOR;
        st = qnn_node(L, f16_out ? ".f16" : "", "FullyConnected", in, n_in, &out, prm, np);
        L->trust_finalize = 0;
        if (st) return st;
    } else {
        if (qnn_lw_t(L, 1)->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK)
            return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': per-block weights need the [N, K] form "
                            "(FullyConnected, or MatMul with transpose_in1)", L->nm);
        if ((st = qnn_in(L, 1, &in[1]))) return st;
        prm[np] = qnn_scalar("transpose_in0", QNN_DATATYPE_BOOL_8), prm[np++].scalarParam.b8 = 0;
        prm[np] = qnn_scalar("transpose_in1", QNN_DATATYPE_BOOL_8), prm[np++].scalarParam.b8 = wt ? 1 : 0;
        if ((st = qnn_node(L, f16_out ? ".f16" : "", "MatMul", in, n_in, &out, prm, np))) return st;
    }
    return f16_out ? qnn_node(L, "", "Cast", &out, 1, &L->out, NULL, 0) : NPL_ACCEL_OK;
}

static npl_accel_status lower_softmax(qnn_lw *L) {
    const npl_accel_param *b = qnn_param(L->n, "beta");
    Qnn_Tensor_t in;
    Qnn_Param_t prm[2];
    npl_accel_status st = qnn_in(L, 0, &in);
    if (st) return st;
    prm[0] = qnn_scalar("axis", QNN_DATATYPE_UINT_32), prm[0].scalarParam.u32 = qnn_lw_t(L, 0)->rank - 1;
    prm[1] = qnn_scalar("beta", QNN_DATATYPE_FLOAT_32), prm[1].scalarParam.f32 = b ? (float)b->f : 1.0f;
    return qnn_node(L, "", "Softmax", &in, 1, &L->out, prm, 2);
}

static npl_accel_status lower_rmsnorm(qnn_lw *L) {
    const qnn_tensor *x = qnn_lw_t(L, 0);
    const npl_accel_param *e = qnn_param(L->n, "epsilon");
    Qnn_Tensor_t in[2];
    Qnn_Param_t prm[2];
    uint32_t n_in = L->n->n_inputs, one = 1, ax = x->rank - 1, d = x->dims[x->rank - 1];
    npl_accel_dtype xdt = L->cdt != NPL_ACCEL_DT_COUNT ? L->cdt : x->dtype;
    npl_accel_status st = qnn_in(L, 0, &in[0]);
    if (!st && n_in == 2) st = qnn_in(L, 1, &in[1]);
    if (st) return st;
    prm[0] = qnn_scalar("epsilon", QNN_DATATYPE_FLOAT_32), prm[0].scalarParam.f32 = e ? (float)e->f : 1e-6f;
    /* axes is a tensor param: it must exist as a graph tensor before add-node
     * (else add-node fails with a misleading 6001). */
    if ((st = qnn_tensor_param(L->g, L->nm, "axes", QNN_DATATYPE_UINT_32, 1, &one, &ax, 4, &prm[1]))) return st;
    if (n_in == 1) {
        if (!is_float(xdt))
            return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': RmsNorm of a quantized x needs a gamma", L->nm);
        uint32_t es = xdt == NPL_ACCEL_DT_F16 ? 2 : 4;
        uint8_t *ones = malloc((size_t)d * es);
        if (!ones) return NOMEM(L->be);
        const uint16_t h1 = 0x3C00; /* 1.0 in f16 */
        const float f1 = 1.0f;
        for (uint32_t i = 0; i < d; i++) memcpy(ones + (size_t)i * es, es == 2 ? (const void *)&h1 : (const void *)&f1, es);
        st = qnn_const(L->g, L->nm, ".gamma", qnn_dtype(xdt), NULL, 1, &d, ones, d * es, &in[1]);
        free(ones);
        if (st) return st;
        n_in = 2;
    }
    return qnn_node(L, "", "RmsNorm", in, n_in, &L->out, prm, 2);
}

/* A scalar constant of x's type holding v exactly (quantized: a uint8 with
 * one level, q = 255 with offset 0 for v > 0, q = 0 with offset -255 below). */
npl_accel_status qnn_scalar_const(qnn_lw *L, const char *suffix, const qnn_tensor *x, double v, Qnn_Tensor_t *out) {
    uint32_t one = 1;
    if (x->dtype == NPL_ACCEL_DT_F16) {
        uint16_t h = qnn_f32_to_f16((float)v);
        return qnn_const(L->g, L->nm, suffix, QNN_DATATYPE_FLOAT_16, NULL, 1, &one, &h, 2, out);
    }
    if (x->dtype == NPL_ACCEL_DT_F32) {
        float f = (float)v;
        return qnn_const(L->g, L->nm, suffix, QNN_DATATYPE_FLOAT_32, NULL, 1, &one, &f, 4, out);
    }
    Qnn_QuantizeParams_t qp;
    memset(&qp, 0, sizeof qp);
    qp.encodingDefinition = QNN_DEFINITION_DEFINED;
    qp.quantizationEncoding = QNN_QUANTIZATION_ENCODING_SCALE_OFFSET;
    qp.scaleOffset.scale = (float)(v == 0 ? 1e-9 : (v > 0 ? v : -v) / 255);
    qp.scaleOffset.offset = v < 0 ? -255 : 0;
    uint8_t q = v > 0 ? 255 : 0;
    return qnn_const(L->g, L->nm, suffix, QNN_DATATYPE_UFIXED_POINT_8, &qp, 1, &one, &q, 1, out);
}

static npl_accel_status lower_scale(qnn_lw *L) {
    const npl_accel_param *s = qnn_param(L->n, "scale");
    qnn_tensor xc = *qnn_lw_t(L, 0), *x = &xc;
    if (L->cdt != NPL_ACCEL_DT_COUNT && is_float(x->dtype)) xc.dtype = L->cdt; /* the type the input comes in */
    Qnn_Tensor_t in[2];
    npl_accel_status st = qnn_in(L, 0, &in[0]);
    if (st) return st;
    if ((st = qnn_scalar_const(L, ".scale", x, s ? s->f : 1.0, &in[1]))) return st;
    return qnn_node(L, "", "ElementWiseMultiply", in, 2, &L->out, NULL, 0);
}

static npl_accel_status lower_transpose(qnn_lw *L) {
    const npl_accel_param *p = qnn_param(L->n, "perm");
    const uint32_t rank = qnn_lw_t(L, 0)->rank;
    if (!p || p->type != NPL_ACCEL_PARAM_INTS || p->count != rank)
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': Transpose needs perm (INTS) with %u values", L->nm, rank);
    uint32_t perm[NPL_ACCEL_MAX_RANK], seen = 0;
    for (uint32_t i = 0; i < rank; i++) {
        if (p->ints[i] < 0 || p->ints[i] >= rank || (seen >> p->ints[i] & 1))
            return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': perm is not a permutation of 0..%u", L->nm, rank - 1);
        perm[i] = (uint32_t)p->ints[i], seen |= 1u << perm[i];
    }
    Qnn_Tensor_t in;
    Qnn_Param_t prm;
    npl_accel_status st = qnn_in(L, 0, &in);
    if (!st) st = qnn_tensor_param(L->g, L->nm, "perm", QNN_DATATYPE_UINT_32, 1, &rank, perm, 4 * rank, &prm);
    return st ? st : qnn_node(L, "", "Transpose", &in, 1, &L->out, &prm, 1);
}

static npl_accel_status axis_param(qnn_lw *L, uint32_t rank, uint32_t *out) {
    const npl_accel_param *p = qnn_param(L->n, "axis");
    int64_t a = p ? p->i : 0;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank)
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': axis %lld is outside rank %u", L->nm,
                        (long long)(p ? p->i : 0), rank);
    *out = (uint32_t)a;
    return NPL_ACCEL_OK;
}

static npl_accel_status lower_concat(qnn_lw *L) {
    Qnn_Tensor_t in[QNN_MAX_IN];
    Qnn_Param_t prm = qnn_scalar("axis", QNN_DATATYPE_UINT_32);
    npl_accel_status st = axis_param(L, qnn_lw_t(L, 0)->rank, &prm.scalarParam.u32);
    for (uint32_t i = 0; i < L->n->n_inputs && !st; i++) st = qnn_in(L, i, &in[i]);
    return st ? st : qnn_node(L, "", "Concat", in, L->n->n_inputs, &L->out, &prm, 1);
}

static npl_accel_status lower_gather(qnn_lw *L) {
    Qnn_Tensor_t in[2];
    uint32_t ax = 0;
    Qnn_Param_t prm = qnn_scalar("axis", QNN_DATATYPE_INT_32);
    npl_accel_status st = axis_param(L, qnn_lw_t(L, 0)->rank, &ax);
    if (!st && qnn_lw_t(L, 1)->dtype != NPL_ACCEL_DT_INT32)
        st = qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': Gather indices must be INT32", L->nm);
    prm.scalarParam.i32 = (int32_t)ax;
    /* an F32 Gather passes validation but QNN HTP's finalize cannot create it
     * ("could not create op: q::Gather", 1002): gather in F16, then Cast */
    const int f32 = L->cdt == NPL_ACCEL_DT_F32;
    /* QNN aborts the execute on an index out of range (the packages' padding
     * rows select row -1): graph-input indices are clamped at execute */
    qnn_tensor *ix = &L->g->ctx->t[L->n->inputs[1]];
    if (!st && ix->kind == NPL_ACCEL_APP_WRITE) ix->gather_rows = qnn_lw_t(L, 0)->dims[ax];
    if (f32) L->cdt = NPL_ACCEL_DT_F16;
    if (!st) st = qnn_in(L, 0, &in[0]);
    if (!st) st = qnn_in(L, 1, &in[1]);
    if (st || !f32) return st ? st : qnn_node(L, "", "Gather", in, 2, &L->out, &prm, 1);
    Qnn_Tensor_t like = L->out, h;
    like.v2.dataType = QNN_DATATYPE_FLOAT_16;
    if ((st = qnn_native(L->g, L->nm, ".f16", &like, L->out.v2.rank, L->out.v2.dimensions, &h)) ||
        (st = qnn_node(L, ".f16", "Gather", in, 2, &h, &prm, 1)))
        return st;
    return qnn_node(L, "", "Cast", &h, 1, &L->out, NULL, 0);
}

static npl_accel_status lower_slice(qnn_lw *L) {
    const qnn_tensor *x = qnn_lw_t(L, 0);
    const npl_accel_param *b = qnn_param(L->n, "begin"), *e = qnn_param(L->n, "end"), *s = qnn_param(L->n, "strides");
    const uint32_t rank = x->rank;
    const npl_accel_param *ps[3] = {b, e, s};
    for (int k = 0; k < 3; k++)
        if ((ps[k] || k < 2) && (!ps[k] || ps[k]->type != NPL_ACCEL_PARAM_INTS || ps[k]->count != rank))
            return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': StridedSlice needs begin, end%s (INTS) with %u values",
                            L->nm, k == 2 ? ", strides" : "", rank);
    int32_t r[NPL_ACCEL_MAX_RANK * 3];
    for (uint32_t i = 0; i < rank; i++) {
        int64_t lo = b->ints[i], hi = e->ints[i], st = s ? s->ints[i] : 1, d = x->dims[i];
        if (hi > d) hi = d;
        if (st < 1 || lo < 0 || lo >= hi)
            return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': dim %u: [%lld, %lld) step %lld is empty or backwards",
                            L->nm, i, (long long)lo, (long long)hi, (long long)st);
        r[3 * i] = (int32_t)lo, r[3 * i + 1] = (int32_t)hi, r[3 * i + 2] = (int32_t)st;
    }
    Qnn_Tensor_t in;
    Qnn_Param_t prm;
    uint32_t rd[2] = {rank, 3};
    npl_accel_status st = qnn_in(L, 0, &in);
    if (!st) st = qnn_tensor_param(L->g, L->nm, "ranges", QNN_DATATYPE_INT_32, 2, rd, r, 12 * rank, &prm);
    return st ? st : qnn_node(L, "", "StridedSlice", &in, 1, &L->out, &prm, 1);
}

static npl_accel_status lower_cast(qnn_lw *L) {
    const npl_accel_dtype from = qnn_lw_t(L, 0)->dtype, to = L->g->ctx->t[L->n->outputs[0]].dtype;
    const char *q = is_quant(from) ? (is_quant(to) ? "Convert" : "Dequantize") : is_quant(to) ? "Quantize" : "Cast";
    const char *want = !strcmp(L->n->op, "Quantize") ? "Quantize" : !strcmp(L->n->op, "Dequantize") ? "Dequantize" : NULL;
    if (want && strcmp(want, q))
        return qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': %s from type %u to %u is a %s", L->nm, want, from, to, q);
    Qnn_Tensor_t in;
    npl_accel_status st = qnn_in(L, 0, &in);
    return st ? st : qnn_node(L, "", q, &in, 1, &L->out, NULL, 0);
}

static const qnn_op_row ops[] = {
    {"MatMul", "MatMul", 2, 3, {"transpose_in0", "transpose_in1"}, lower_matmul},
    {"FullyConnected", "FullyConnected", 2, 3, {"keep_dims"}, lower_matmul},
    {"Add", "ElementWiseAdd", 2, 2, {0}, lower_plain},
    {"Mul", "ElementWiseMultiply", 2, 2, {0}, lower_plain},
    {"Scale", "ElementWiseMultiply", 1, 1, {"scale"}, lower_scale},
    {"Softmax", "Softmax", 1, 1, {"beta"}, lower_softmax},
    {"RmsNorm", "RmsNorm", 1, 2, {"epsilon"}, lower_rmsnorm},
    {"Gelu", "Gelu", 1, 1, {0}, lower_plain},
    {"Silu", "Sigmoid + ElementWiseMultiply", 1, 1, {0}, qnn_lower_silu},
    {"SwiGLU", "Sigmoid + ElementWiseMultiply", 2, 2, {0}, qnn_lower_glu},
    {"GeGLU", "Gelu + ElementWiseMultiply", 2, 2, {0}, qnn_lower_glu},
    {"Rope", "StridedSlice + ElementWise* + Concat", 2, 3,
     {"n_rot", "neox", "base", "freq_scale", "ext_factor", "attn_factor", "corr_low", "corr_high"}, qnn_lower_rope},
    {"Attention", "MatMul + Concat + Softmax (host KV caches)", 6, 6, {"scale", "window", "softcap", "kv_len"}, qnn_lower_attention},
    {"Reshape", "Reshape", 1, 1, {0}, lower_plain},
    {"Transpose", "Transpose", 1, 1, {"perm"}, lower_transpose},
    {"Concat", "Concat", 1, QNN_MAX_IN, {"axis"}, lower_concat},
    {"Gather", "Gather", 2, 2, {"axis"}, lower_gather},
    {"StridedSlice", "StridedSlice", 1, 1, {"begin", "end", "strides"}, lower_slice},
    {"Cast", "Cast / Quantize / Dequantize / Convert", 1, 1, {0}, lower_cast},
    {"Quantize", "Quantize", 1, 1, {0}, lower_cast},
    {"Dequantize", "Dequantize", 1, 1, {0}, lower_cast},
};

const qnn_op_row *qnn_op_table(uint32_t *n) {
    *n = (uint32_t)(sizeof ops / sizeof ops[0]);
    return ops;
}

npl_accel_status qnn_lower_node(qnn_graph *g, const npl_accel_node_desc *n) {
    npl_accel_backend *be = g->ctx->be;
    const char *nm = n->name ? n->name : n->op;
    const qnn_op_row *row = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].abi, n->op)) row = &ops[i];
    if (!row) return qnn_fail(be, NPL_ACCEL_ERR_UNKNOWN_OP, "qnn-htp: node '%s': op '%s' is not in the QNN op set", nm, n->op);
    if (n->n_inputs < row->min_in || n->n_inputs > row->max_in || n->n_outputs != 1)
        return qnn_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "qnn-htp: node '%s': %s takes %u..%u inputs and 1 output, got %u and %u",
                        nm, n->op, row->min_in, row->max_in, n->n_inputs, n->n_outputs);
    for (uint32_t i = 0; i < n->n_params; i++) {
        int ok = 0;
        for (int k = 0; k < QNN_MAX_PARAMS && row->params[k]; k++) ok |= n->params[i].name && !strcmp(n->params[i].name, row->params[k]);
        if (!ok)
            return qnn_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': %s has no param '%s'", nm, n->op,
                            n->params[i].name ? n->params[i].name : "(null)");
    }
    for (uint32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= g->ctx->n_t)
            return qnn_fail(be, NPL_ACCEL_ERR_NOT_FOUND, "qnn-htp: node '%s': no tensor of id %u", nm, n->inputs[i]);
    qnn_lw L = {g, be, n, nm, row, {0}, NPL_ACCEL_DT_COUNT, 0};
    const npl_accel_dtype odt = n->outputs[0] < g->ctx->n_t ? g->ctx->t[n->outputs[0]].dtype : NPL_ACCEL_DT_COUNT;
    if (is_float(odt) && row->lower != lower_cast) L.cdt = odt;
    Qnn_Tensor_t *t;
    npl_accel_status st = qnn_graph_tensor(g, n->outputs[0], &t);
    if (st) return st;
    L.out = *t;
    return row->lower(&L);
}

/* A singly linked list of blocks owned by the graph. */
typedef struct keep_block {
    struct keep_block *next;
    max_align_t data[];
} keep_block;

void *qnn_keep(qnn_graph *g, size_t bytes) {
    keep_block *b = malloc(sizeof *b + bytes);
    if (!b) return NULL;
    b->next = g->keep;
    g->keep = b;
    return b->data;
}

void qnn_keep_free(qnn_graph *g) {
    for (keep_block *b = g->keep, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    g->keep = NULL;
}
