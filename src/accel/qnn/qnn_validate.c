/* validate_node and list_ops (ABI version 2) of the QNN HTP adapter.
 *
 * validate_node lowers the node exactly as graph_add_node would (qnn_ops.c,
 * qnn_ops_compose.c, qnn_rope.c), into a scratch context that has no QNN
 * context: its tensors are records only, and each QNN op the lowering emits
 * goes to QNN's backendValidateOpConfig instead of graphAddNode. So a node is
 * refused for what the adapter refuses (op, inputs, params, types) and for
 * what QNN's validation refuses, with QNN's message and its error log lines
 * in the reason. Validation and finalize disagree in places (the probe found
 * both directions); a graph is only known good after finalize + execute.
 *
 * list_ops is qnn_op_table() with each param's type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

/* Types of the params qnn_op_table() names (include/npullm_accel.h). */
static npl_accel_param_type param_type(const char *name) {
    static const char *const floats[] = {"scale", "softcap", "beta", "epsilon", "base", "freq_scale", "ext_factor", "attn_factor"};
    static const char *const ints[] = {"perm", "begin", "end", "strides"};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (!strcmp(name, floats[i])) return NPL_ACCEL_PARAM_FLOAT;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(name, ints[i])) return NPL_ACCEL_PARAM_INTS;
    return NPL_ACCEL_PARAM_INT;
}

npl_accel_status qnn_list_ops(npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops) {
    if (!be || !ops || !n_ops) return NPL_ACCEL_ERR_INVALID_ARG;
    if (!be->ops) {
        uint32_t n, np = 0;
        const qnn_op_row *rows = qnn_op_table(&n);
        for (uint32_t i = 0; i < n; i++)
            for (int k = 0; k < QNN_MAX_PARAMS && rows[i].params[k]; k++) np++;
        npl_accel_op_info *o = calloc(n, sizeof *o);
        npl_accel_param_info *p = calloc(np ? np : 1, sizeof *p);
        if (!o || !p) {
            free(o), free(p);
            return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        }
        np = 0;
        for (uint32_t i = 0; i < n; i++) {
            o[i] = (npl_accel_op_info){rows[i].abi, rows[i].min_in, rows[i].max_in, 1, 0, p + np};
            for (int k = 0; k < QNN_MAX_PARAMS && rows[i].params[k]; k++, o[i].n_params++)
                p[np++] = (npl_accel_param_info){rows[i].params[k], param_type(rows[i].params[k])};
        }
        be->ops = o, be->op_params = p, be->n_ops = n;
    }
    *ops = be->ops;
    *n_ops = be->n_ops;
    return NPL_ACCEL_OK;
}

void qnn_ops_free(npl_accel_backend *be) {
    free(be->ops);
    free(be->op_params);
    be->ops = NULL, be->op_params = NULL, be->n_ops = 0;
}

/* The description as a scratch record: a name of its own if it has none or
 * repeats one (a tensor used twice), zeros as STATIC data if none is given. */
static npl_accel_status scratch_tensor(npl_accel_context *c, qnn_graph *g, const npl_accel_tensor_desc *d, const char *role,
                                       uint32_t i, npl_accel_tensor_id *id) {
    npl_accel_tensor_desc x = *d;
    char name[96];
    int taken = !x.name || !*x.name;
    for (uint32_t k = 0; k < c->n_t && !taken; k++) taken = !strcmp(c->t[k].name, x.name);
    if (taken) snprintf(name, sizeof name, "%s%u", role, i), x.name = name;
    void *zeros = NULL;
    if (x.kind == NPL_ACCEL_STATIC && !x.data) {
        uint64_t bytes = x.rank <= NPL_ACCEL_MAX_RANK ? qnn_n_elems(x.rank, x.dims) * qnn_elem_bytes(x.dtype) : 0;
        if (bytes && bytes <= UINT32_MAX && !(zeros = calloc(1, bytes))) return qnn_fail(c->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        x.data = zeros, x.data_size = bytes;
    }
    npl_accel_status st = qnn_new_tensor(c, x.kind == NPL_ACCEL_STATIC ? NULL : g, &x, id);
    free(zeros);
    return st;
}

npl_accel_status qnn_validate_node(npl_accel_backend *be, const npl_accel_node_desc *node, const npl_accel_tensor_desc *inputs,
                                   const npl_accel_tensor_desc *outputs, char *reason, uint32_t reason_len) {
    if (reason && reason_len) reason[0] = 0;
    if (!be || !node || !node->op || (node->n_inputs && !inputs) || (node->n_outputs && !outputs)) return NPL_ACCEL_ERR_INVALID_ARG;
    enum { MAX_IO = QNN_MAX_IN + 4 };
    const char *nm = node->name ? node->name : node->op;
    npl_accel_status st = NPL_ACCEL_OK;
    if (node->n_inputs > MAX_IO || node->n_outputs > MAX_IO)
        st = qnn_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "qnn-htp: node '%s': %u inputs and %u outputs (at most %u)", nm,
                      node->n_inputs, node->n_outputs, (unsigned)MAX_IO);
    npl_accel_context *c = NULL;
    qnn_graph *g = NULL;
    if (!st) st = qnn_context_new(be, NULL, &c);
    if (!st) c->validate = 1, st = qnn_add_graph(c, "validate", &g);
    npl_accel_tensor_id in[MAX_IO], out[MAX_IO];
    for (uint32_t i = 0; i < node->n_inputs && !st; i++) st = scratch_tensor(c, g, &inputs[i], "input", i, &in[i]);
    for (uint32_t i = 0; i < node->n_outputs && !st; i++) st = scratch_tensor(c, g, &outputs[i], "output", i, &out[i]);
    if (!st) {
        npl_accel_node_desc n = *node;
        n.name = nm, n.inputs = in, n.outputs = out;
        st = qnn_lower_node(g, &n);
    }
    qnn_context_free(c);
    if (st && reason && reason_len) snprintf(reason, reason_len, "%s", be->err);
    return st;
}
