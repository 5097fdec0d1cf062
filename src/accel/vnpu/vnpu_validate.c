/* vnpu: validate_node and list_ops (ABI version 2). validate_node runs the
 * checks graph_add_node runs (vnpu_node_begin / vnpu_node_end and the
 * tensor description checks of tensor_create) on a scratch context that
 * lives on the stack and holds only the node's tensors; nothing is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"

#define VAL_MAX_T (VNPU_MAX_IN + VNPU_MAX_OUT)

static npl_accel_status validate(struct npl_accel_backend *be, const npl_accel_node_desc *d,
                                 const npl_accel_tensor_desc *inputs, const npl_accel_tensor_desc *outputs,
                                 vnpu_tensor *t, char (*names)[64], uint32_t *n_t) {
    if (!d || !d->op) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: validate_node: NULL node or op");
    char where[160];
    snprintf(where, sizeof where, "node '%s' (%s)", d->name ? d->name : "?", d->op);
    vnpu_node n;
    npl_accel_status st = vnpu_node_begin(be, d, where, &n);
    if (st) return st;
    if ((d->n_inputs && !inputs) || (d->n_outputs && !outputs))
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: %u inputs and %u outputs but a NULL description "
                         "list", where, d->n_inputs, d->n_outputs);
    /* the scratch context: tensor i is input i, tensor n_inputs + j output j */
    for (uint32_t i = 0; i < d->n_inputs + d->n_outputs; i++) {
        const int is_in = i < d->n_inputs;
        const npl_accel_tensor_desc *td = is_in ? &inputs[i] : &outputs[i - d->n_inputs];
        if (td->name && *td->name) snprintf(names[i], sizeof names[i], "%s", td->name);
        else snprintf(names[i], sizeof names[i], "%s %u", is_in ? "input" : "output", is_in ? i : i - d->n_inputs);
        vnpu_tensor *x = &t[i];
        memset(x, 0, sizeof *x);
        if ((st = vnpu_desc_check(be, td, names[i], 0, x->dims, &x->nbytes, &x->q))) {
            char msg[sizeof be->err]; /* name the node too: "vnpu: node 'n' (op): tensor 'x': ..." */
            const char *rest = strncmp(be->err, "vnpu: ", 6) ? be->err : be->err + 6;
            snprintf(msg, sizeof msg, "%s", rest);
            return vnpu_fail(be, st, "vnpu: %s: %s", where, msg);
        }
        *n_t = i + 1; /* t[i] holds quant arrays to free from here on */
        x->name = names[i];
        x->kind = td->kind;
        x->dtype = td->dtype;
        x->rank = td->rank;
        x->nelem = 1;
        for (uint32_t k = 0; k < x->rank; k++) x->nelem *= x->dims[k];
        x->graph = -1;
        if (!is_in && (st = vnpu_check_output_kind(be, where, names[i], td->kind))) return st;
        if (is_in) n.in[i] = i;
        else n.out[i - d->n_inputs] = i;
    }
    struct npl_accel_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.magic = VNPU_MAGIC_CONTEXT;
    ctx.be = be;
    ctx.family = be->family;
    ctx.t = t;
    ctx.n_t = ctx.cap_t = *n_t;
    return vnpu_node_end(be, &ctx, &n, d, where);
}

npl_accel_status vnpu_validate_node(struct npl_accel_backend *be, const npl_accel_node_desc *node,
                                    const npl_accel_tensor_desc *inputs, const npl_accel_tensor_desc *outputs,
                                    char *reason, uint32_t reason_len) {
    if (!vnpu_backend_ok(be)) {
        if (reason && reason_len) snprintf(reason, reason_len, "vnpu: invalid backend handle");
        return NPL_ACCEL_ERR_INVALID_HANDLE;
    }
    vnpu_tensor t[VAL_MAX_T];
    char names[VAL_MAX_T][64];
    uint32_t n_t = 0;
    npl_accel_status st = validate(be, node, inputs, outputs, t, names, &n_t);
    for (uint32_t i = 0; i < n_t; i++) {
        free(t[i].q.scales);
        free(t[i].q.offsets);
    }
    if (reason && reason_len) snprintf(reason, reason_len, "%s", st ? be->err : "");
    return st;
}

npl_accel_status vnpu_list_ops(struct npl_accel_backend *be, const npl_accel_op_info **ops, uint32_t *n_ops) {
    if (!vnpu_backend_ok(be)) return NPL_ACCEL_ERR_INVALID_HANDLE;
    if (!ops || !n_ops) return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: list_ops: NULL argument");
    *ops = vnpu_op_list(n_ops);
    return NPL_ACCEL_OK;
}
