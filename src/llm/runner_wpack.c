/* A model's matmul weights packed for its CPU kernel family at open
 * (kernels/wpack.h): which weights, found on the model's own graph. */
#include "llm/runner_wpack.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/graph.h"
#include "core/status.h"

int npl_runner_wpack_build(npl_wpack_table *tab, const npl_gguf *f, const npl_hparams *hp, npl_isa isa, size_t budget,
                           char *err, size_t errlen) {
    size_t wanted = 0; /* bytes of the tensors of types this family reads packed */
    for (int64_t i = 0; i < npl_gguf_n_tensors(f); i++) {
        const npl_gguf_tensor *t = npl_gguf_tensor_at(f, i);
        if (t->n_dims == 2 && npl_wpack_wanted(isa, (npl_type)t->type, t->ne[0], t->ne[1]))
            wanted += npl_wpack_bytes((npl_type)t->type, t->ne[0], t->ne[1]);
    }
    if (!wanted) return 0;
    npl_wpack_reserve(tab, wanted < budget ? wanted : budget); /* or, failing, one allocation per copy */
    npl_model_graph mg;
    /* the weights do not depend on the context length: the smallest graph */
    if (npl_model_build(f, hp, 1, &mg, err, errlen)) return -1;
    const int n = npl_graph_n_nodes(mg.g);
    /* a weight something other than a matmul reads (an embedding tied to
     * the output) keeps its original pages mapped */
    char *other = calloc((size_t)n + 1, 1);
    if (!other) {
        npl_graph_free(mg.g);
        npl_err_memory(err, errlen);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const npl_node *nd = npl_graph_node(mg.g, i);
        for (int s = 0; s < nd->n_src; s++)
            if (nd->op != NPL_OP_MATMUL || s != 0) other[nd->src[s]] = 1;
    }
    /* ... also when it is another node on the same bytes */
    for (int i = 0; i < n; i++) {
        const npl_node *w = npl_graph_node(mg.g, i);
        if (w->op != NPL_OP_WEIGHT || other[i]) continue;
        for (int j = 0; j < n; j++)
            if (other[j] && j != i && npl_graph_node(mg.g, j)->op == NPL_OP_WEIGHT && npl_graph_node(mg.g, j)->data == w->data)
                other[i] = 1;
    }
    /* within the budget, types by what packing gains them (q5_0's 5th bit
     * costs the most to unpack; the q4_1 GEMV's horizontal sums next), each
     * in the graph's order, whole tensors while they fit */
    static const npl_type order[] = {NPL_TYPE_Q5_0, NPL_TYPE_Q4_1, NPL_TYPE_Q4_K, NPL_TYPE_Q6_K};
    int rc = 0;
    for (int ti = 0; ti < (int)(sizeof order / sizeof order[0]); ti++)
    for (int i = 0; i < n && !rc; i++) {
        const npl_node *nd = npl_graph_node(mg.g, i);
        if (nd->op != NPL_OP_MATMUL) continue;
        const npl_node *w = npl_graph_node(mg.g, nd->src[0]);
        const npl_shape *s = &w->shape;
        if (w->op != NPL_OP_WEIGHT || !w->data || s->n_dims != 2 || w->type != order[ti] ||
            !npl_wpack_wanted(isa, w->type, s->ne[0], s->ne[1]) || npl_wpack_find(tab, w->data) ||
            tab->bytes + npl_wpack_bytes(w->type, s->ne[0], s->ne[1]) > budget)
            continue;
        if (npl_wpack_add(tab, w->type, w->data, s->ne[0], s->ne[1], !other[nd->src[0]])) {
            npl_errf(err, errlen, NPL_ERR_MEMORY, "out of memory packing %s (%.1f MiB)", w->name ? w->name : "a weight",
                     (double)npl_wpack_bytes(w->type, s->ne[0], s->ne[1]) / 1048576.0);
            rc = -1;
        }
    }
    free(other);
    npl_graph_free(mg.g);
    if (rc) npl_wpack_free(tab);
    return rc;
}
