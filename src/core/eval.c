/* Lazy evaluation with a per-node value cache (see eval.h). */
#include "core/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/session.h"

const void *npl_read(npl_graph *g, int id, const npl_backend *be, npl_pool *pool, npl_shape *shape,
                     char *err, size_t errlen) {
    npl_node *nd = npl_graph_node_mut(g, id);
    if (!nd) {
        snprintf(err, errlen, "node %d does not exist", id);
        return NULL;
    }
    if (nd->value) {
        if (shape) *shape = nd->value_shape;
        return nd->value;
    }
    npl_graph_session *s = npl_graph_session_new(g, be, pool, &id, 1, err, errlen);
    if (!s) return NULL;
    for (int i = 0; i < id; i++) {
        const npl_node *in = npl_graph_node(g, i);
        if (in->op == NPL_OP_INPUT && in->data &&
            npl_graph_session_set_input_id(s, i, (void *)in->data, &in->value_shape)) {
            snprintf(err, errlen, "%s", npl_graph_session_error(s));
            npl_graph_session_free(s);
            return NULL;
        }
    }
    const void *result = NULL;
    if (npl_graph_session_run(s)) {
        snprintf(err, errlen, "%s", npl_graph_session_error(s));
    } else {
        const npl_tensor *t = npl_graph_session_output(s, 0);
        size_t row, bytes;
        int64_t rows = npl_shape_nelements(&t->shape) / t->shape.ne[0];
        if (npl_row_size(t->type, t->shape.ne[0], &row) || npl_mul_size(row, (size_t)rows, &bytes) ||
            !(nd->value = malloc(bytes ? bytes : 1))) {
            snprintf(err, errlen, "node %d: cannot hold its value", id);
        } else {
            memcpy(nd->value, t->data, bytes);
            nd->value_shape = t->shape;
            if (shape) *shape = t->shape;
            result = nd->value;
        }
    }
    npl_graph_session_free(s);
    return result;
}
