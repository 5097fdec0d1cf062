/* Partition: collect the needed ops backwards from the outputs, cut at break
 * ops (ops the lowering does not support, ops whose output shape depends on
 * input content, table lookups in weights, ops the target refuses), group the remaining
 * ops into subgraphs of consecutive ops in graph order (so subgraphs can
 * never form a cycle through the CPU), compute each one's boundary and keep
 * the ones with matrix work. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/lower.h"
#include "core/shape.h"

static int is_leaf(npl_op op) { return op == NPL_OP_INPUT || op == NPL_OP_WEIGHT || op == NPL_OP_STATE; }

const char *npl_partition_break_reason(const npl_graph *g, int id) {
    const npl_node *nd = npl_graph_node(g, id);
    if (npl_op_shape_is_dynamic(nd->op)) return "output shape depends on input content";
    return npl_lower_refusal(g, id);
}

void npl_partition_free(npl_partition *p) {
    if (!p) return;
    for (int i = 0; i < p->n_segs; i++) free(p->segs[i].nodes);
    free(p->segs);
    free(p->cpu_ops);
    free(p->cpu_why);
    memset(p, 0, sizeof(*p));
}

/* The decoder layer a node's own weights or caches belong to: the largest N
 * of the "blk.N." weights and "kcache.N" / "vcache.N" states it reads,
 * INT_MAX for the output head's "output*" weights (its norm and matrix),
 * -1 when it reads none of these (rope_freqs, gemma4's per-layer embedding
 * tables: it joins the subgraph it follows). */
static int node_layer(const npl_graph *g, int id) {
    const npl_node *nd = npl_graph_node(g, id);
    int layer = -1;
    for (int s = 0; s < nd->n_src; s++) {
        const npl_node *src = npl_graph_node(g, nd->src[s]);
        if ((src->op != NPL_OP_WEIGHT && src->op != NPL_OP_STATE) || !src->name) continue;
        int l = -1;
        char c;
        if (!(sscanf(src->name, "blk.%d%c", &l, &c) == 2 && c == '.') &&
            !((src->name[0] == 'k' || src->name[0] == 'v') && sscanf(src->name + 1, "cache.%d", &l) == 1))
            l = src->op == NPL_OP_WEIGHT && !strncmp(src->name, "output", 6) ? INT_MAX : -1;
        if (l > layer) layer = l;
    }
    return layer;
}

static int add_unique(int *arr, int *n, int v) {
    for (int i = 0; i < *n; i++)
        if (arr[i] == v) return 0;
    if (*n == NPL_SEG_MAX_IO) return -1;
    arr[(*n)++] = v;
    return 0;
}

int npl_partition_graph(const npl_graph *g, const int *outputs, int n_outputs, const char (*refused)[NPL_WHY_LEN],
                        int split_layers, int tied, npl_partition *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    int n = npl_graph_n_nodes(g);
    char *needed = calloc((size_t)n, 1);
    int *seg_of = malloc((size_t)n * sizeof(int));
    out->segs = calloc((size_t)n, sizeof(npl_segment));
    out->cpu_ops = calloc((size_t)n, sizeof(int));
    out->cpu_why = calloc((size_t)n, sizeof(*out->cpu_why));
    if (!needed || !seg_of || !out->segs || !out->cpu_ops || !out->cpu_why) goto oom;
    for (int i = 0; i < n_outputs; i++) needed[outputs[i]] = 1;
    for (int i = n - 1; i >= 0; i--)
        if (needed[i]) {
            const npl_node *nd = npl_graph_node(g, i);
            for (int s = 0; s < nd->n_src; s++) needed[nd->src[s]] = 1;
        }
    /* segments of consecutive supported ops; a break op closes the current one */
    int cur = -1;
    for (int i = 0; i < n; i++) {
        seg_of[i] = -1;
        if (!needed[i] || is_leaf(npl_graph_node(g, i)->op)) continue;
        const char *why = npl_op_shape_is_dynamic(npl_graph_node(g, i)->op) ? "output shape depends on input content"
                                                                              : npl_lower_refusal_tied(g, i, tied);
        if (!why && refused && refused[i][0]) why = refused[i];
        if (why) {
            out->cpu_ops[out->n_cpu_ops] = i;
            snprintf(out->cpu_why[out->n_cpu_ops++], NPL_WHY_LEN, "%s", why);
            cur = -1;
            continue;
        }
        const int layer = split_layers ? node_layer(g, i) : -1;
        if (cur >= 0 && layer > out->segs[cur].layer && out->segs[cur].layer >= 0) cur = -1; /* the next layer begins */
        if (cur < 0) {
            cur = out->n_segs++;
            if (!(out->segs[cur].nodes = malloc((size_t)n * sizeof(int)))) goto oom;
            out->segs[cur].layer = -1;
        }
        npl_segment *sg = &out->segs[cur];
        if (layer > sg->layer) sg->layer = layer;
        sg->nodes[sg->n_nodes++] = i;
        seg_of[i] = cur;
        if (npl_graph_node(g, i)->op == NPL_OP_MATMUL) sg->n_matmul++;
    }
    /* boundaries */
    for (int si = 0; si < out->n_segs; si++) {
        npl_segment *sg = &out->segs[si];
        int overflow = 0;
        for (int k = 0; k < sg->n_nodes; k++) {
            const npl_node *nd = npl_graph_node(g, sg->nodes[k]);
            for (int s = 0; s < nd->n_src; s++) {
                int src = nd->src[s];
                npl_op op = npl_graph_node(g, src)->op;
                if (seg_of[src] == si || op == NPL_OP_WEIGHT || op == NPL_OP_STATE) continue;
                overflow |= add_unique(sg->inputs, &sg->n_inputs, src);
            }
        }
        for (int k = 0; k < sg->n_nodes; k++) {
            int id = sg->nodes[k], used_out = 0;
            for (int o = 0; o < n_outputs; o++) used_out |= outputs[o] == id;
            for (int j = id + 1; j < n && !used_out; j++) {
                if (!needed[j] || seg_of[j] == si) continue;
                const npl_node *nd = npl_graph_node(g, j);
                for (int s = 0; s < nd->n_src; s++) used_out |= nd->src[s] == id;
            }
            if (used_out) overflow |= add_unique(sg->outputs, &sg->n_outputs, id);
        }
        sg->keep = 1;
        if (!sg->n_matmul) {
            sg->keep = 0;
            snprintf(sg->why, sizeof sg->why, "no matrix work (%d ops)", sg->n_nodes);
        } else if (overflow) {
            sg->keep = 0;
            snprintf(sg->why, sizeof sg->why, "more than %d boundary tensors", NPL_SEG_MAX_IO);
        } else if (sg->n_outputs != 1) {
            sg->keep = 0;
            snprintf(sg->why, sizeof sg->why, "%d outputs (the plugin node has one)", sg->n_outputs);
        }
    }
    free(needed);
    free(seg_of);
    return 0;
oom:
    free(needed);
    free(seg_of);
    npl_partition_free(out);
    snprintf(err, errlen, "partition: out of memory");
    return -1;
}
