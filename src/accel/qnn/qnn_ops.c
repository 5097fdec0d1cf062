/* Lowering of the accelerator op vocabulary (include/npullm_accel.h, the ops
 * vnpu documents in vnpu_ops.c) to QNN HTP ops. This first set:
 *   MatMul         x [.., M, K], w [K, N] (or [N, K], transpose_in1=1) -> QNN MatMul.
 *                  No bias input (use FullyConnected) and transpose_in0 = 0.
 *   FullyConnected x [M, K], w [N, K], bias [N]? -> QNN FullyConnected.
 *   Add, Mul       -> ElementWiseAdd, ElementWiseMultiply (numpy broadcast).
 *   Softmax        over the last dim, beta -> Softmax(axis = rank-1, beta).
 *   RmsNorm        x [.., D], gamma [D]? , epsilon (1e-6) -> RmsNorm(axes = {rank-1});
 *                  without gamma a float x gets a gamma of ones.
 *   Gelu, Reshape  -> Gelu, Reshape.
 * QNN checks types and shapes itself (at add-node, finalize); its refusals
 * reach the caller with QNN's message and log. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

typedef struct {
    const char *abi, *qnn;
    uint8_t min_in, max_in;
    const char *params[3]; /* accepted ABI param names */
} op_row;

static const op_row ops[] = {
    {"MatMul", "MatMul", 2, 2, {"transpose_in0", "transpose_in1"}},
    {"FullyConnected", "FullyConnected", 2, 3, {"keep_dims"}},
    {"Add", "ElementWiseAdd", 2, 2, {0}},
    {"Mul", "ElementWiseMultiply", 2, 2, {0}},
    {"Softmax", "Softmax", 1, 1, {"beta"}},
    {"RmsNorm", "RmsNorm", 1, 2, {"epsilon"}},
    {"Gelu", "Gelu", 1, 1, {0}},
    {"Reshape", "Reshape", 1, 1, {0}},
};

static const npl_accel_param *param(const npl_accel_node_desc *n, const char *name) {
    for (uint32_t i = 0; i < n->n_params; i++)
        if (n->params[i].name && !strcmp(n->params[i].name, name)) return &n->params[i];
    return NULL;
}

static Qnn_Param_t scalar(const char *name, uint32_t dt) {
    Qnn_Param_t p;
    memset(&p, 0, sizeof p);
    p.paramType = QNN_PARAMTYPE_SCALAR;
    p.name = name;
    p.scalarParam.dataType = dt;
    return p;
}

/* Memory QNN reads at finalize (param tensors, filler constants): freed with the graph. */
static void *keep(qnn_graph *g, size_t bytes);

npl_accel_status qnn_lower_node(qnn_graph *g, const npl_accel_node_desc *n) {
    npl_accel_backend *be = g->ctx->be;
    const char *nm = n->name ? n->name : n->op;
    const op_row *row = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].abi, n->op)) row = &ops[i];
    if (!row) return qnn_fail(be, NPL_ACCEL_ERR_UNKNOWN_OP, "qnn-htp: node '%s': op '%s' is not in the QNN op set", nm, n->op);
    if (n->n_inputs < row->min_in || n->n_inputs > row->max_in || n->n_outputs != 1)
        return qnn_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "qnn-htp: node '%s': %s takes %u..%u inputs and 1 output, got %u and %u",
                        nm, n->op, row->min_in, row->max_in, n->n_inputs, n->n_outputs);
    for (uint32_t i = 0; i < n->n_params; i++) {
        int ok = 0;
        for (int k = 0; k < 3 && row->params[k]; k++) ok |= n->params[i].name && !strcmp(n->params[i].name, row->params[k]);
        if (!ok)
            return qnn_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': %s has no param '%s'", nm, n->op,
                            n->params[i].name ? n->params[i].name : "(null)");
    }
    Qnn_Tensor_t in[3], out[1], *t;
    npl_accel_status st;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        if ((st = qnn_graph_tensor(g, n->inputs[i], &t))) return st;
        in[i] = *t;
    }
    if ((st = qnn_graph_tensor(g, n->outputs[0], &t))) return st;
    out[0] = *t;
    const qnn_tensor *x = &g->ctx->t[n->inputs[0]];
    uint32_t n_in = n->n_inputs;
    Qnn_Param_t prm[2];
    uint32_t np = 0;
    if (!strcmp(n->op, "MatMul")) {
        const npl_accel_param *t0 = param(n, "transpose_in0"), *t1 = param(n, "transpose_in1");
        if (t0 && t0->i)
            return qnn_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': transpose_in0 is not supported", nm);
        prm[np] = scalar("transpose_in0", QNN_DATATYPE_BOOL_8), prm[np++].scalarParam.b8 = 0;
        prm[np] = scalar("transpose_in1", QNN_DATATYPE_BOOL_8), prm[np++].scalarParam.b8 = t1 && t1->i ? 1 : 0;
    } else if (!strcmp(n->op, "Softmax")) {
        const npl_accel_param *b = param(n, "beta");
        prm[np] = scalar("axis", QNN_DATATYPE_UINT_32), prm[np++].scalarParam.u32 = x->rank - 1;
        prm[np] = scalar("beta", QNN_DATATYPE_FLOAT_32), prm[np++].scalarParam.f32 = b ? (float)b->f : 1.0f;
    } else if (!strcmp(n->op, "RmsNorm")) {
        const npl_accel_param *e = param(n, "epsilon");
        prm[np] = scalar("epsilon", QNN_DATATYPE_FLOAT_32), prm[np++].scalarParam.f32 = e ? (float)e->f : 1e-6f;
        /* axes is a tensor param: it must exist as a graph tensor before add-node
         * (else add-node fails with a misleading 6001). */
        uint32_t *ax = keep(g, sizeof *ax), *ad = keep(g, sizeof *ad);
        if (!ax || !ad) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        *ax = x->rank - 1, *ad = 1;
        memset(&prm[np], 0, sizeof prm[np]);
        prm[np].paramType = QNN_PARAMTYPE_TENSOR;
        prm[np].name = "axes";
        char *tn = keep(g, strlen(nm) + 8);
        if (!tn) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        strcpy(tn, nm), strcat(tn, ".axes");
        if ((st = qnn_static_tensor(g, tn, QNN_DATATYPE_UINT_32, 1, ad, ax, 4, &prm[np].tensorParam))) return st;
        np++;
        if (n_in == 1) {
            if (x->dtype != NPL_ACCEL_DT_F16 && x->dtype != NPL_ACCEL_DT_F32)
                return qnn_fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': RmsNorm of a quantized x needs a gamma", nm);
            uint32_t d = x->dims[x->rank - 1], es = x->dtype == NPL_ACCEL_DT_F16 ? 2 : 4;
            uint8_t *ones = keep(g, (size_t)d * es);
            uint32_t *gd = keep(g, sizeof *gd);
            char *gn = keep(g, strlen(nm) + 8);
            if (!ones || !gd || !gn) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
            const uint16_t h1 = 0x3C00; /* 1.0 in f16 */
            const float f1 = 1.0f;
            for (uint32_t i = 0; i < d; i++) memcpy(ones + (size_t)i * es, es == 2 ? (const void *)&h1 : (const void *)&f1, es);
            *gd = d;
            strcpy(gn, nm), strcat(gn, ".gamma");
            if ((st = qnn_static_tensor(g, gn, qnn_dtype(x->dtype), 1, gd, ones, d * es, &in[1]))) return st;
            n_in = 2;
        }
    }
    Qnn_OpConfig_t op;
    memset(&op, 0, sizeof op);
    op.version = QNN_OPCONFIG_VERSION_1;
    op.name = nm;
    op.packageName = "qti.aisw";
    op.typeName = row->qnn;
    op.numOfParams = np;
    op.params = np ? prm : NULL;
    op.numOfInputs = n_in;
    op.inputTensors = in;
    op.numOfOutputs = 1;
    op.outputTensors = out;
    qnn_log_reset();
    Qnn_ErrorHandle_t e = be->q->graphAddNode(g->g, op);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(be, e, NPL_ACCEL_ERR_TYPE_MISMATCH, "graph '%s': node '%s' (%s as QNN %s) refused", g->name, nm, n->op,
                          row->qnn);
    g->n_nodes++;
    return NPL_ACCEL_OK;
}

/* A singly linked list of blocks owned by the graph. */
typedef struct keep_block {
    struct keep_block *next;
    max_align_t data[];
} keep_block;

static void *keep(qnn_graph *g, size_t bytes) {
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
