/* Asking the target: every candidate subgraph is lowered at every compiled
 * shape through a probe table that builds nothing. Its graph_add_node hands
 * each accelerator node, with the descriptions of its tensors, to the
 * target's validate_node (QNN's backendValidateOpConfig, ggml's
 * supports_op); a node the target refuses makes the graph node it came from
 * a break op. The probe runs the same lowering code as the real one, so the
 * target is asked about exactly the nodes, types and shapes it will get. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/validate.h"

typedef struct {
    const npl_accel_api *target;
    npl_accel_backend *be;
    const char *target_name;
    npl_accel_tensor_desc *t; /* tensors created so far (names copied) */
    float *qs;                /* per tensor: a per-tensor scale / offset, copied (the */
    int32_t *qo;              /* caller's may be on its stack: static int16) */
    uint32_t n_t, cap_t;
    int n_graph;              /* graph nodes, for the id read back from a node name */
    char (*refused)[NPL_WHY_LEN];
    int n_new;
    int oom;
    char err[256];
} probe;

/* The opaque handles of the probe table are the probe itself. */
static probe *P(const void *h) { return (probe *)(uintptr_t)h; }

static const char *p_last_error(const npl_accel_backend *be) { return P(be)->err; }

static npl_accel_status p_graph_create(npl_accel_context *ctx, const char *name, npl_accel_graph **out) {
    *out = (npl_accel_graph *)(void *)P(ctx);
    return NPL_ACCEL_OK;
}

static npl_accel_status p_tensor_create(npl_accel_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    probe *pr = P(g);
    if (pr->n_t == pr->cap_t) {
        uint32_t cap = pr->cap_t ? 2 * pr->cap_t : 64;
        npl_accel_tensor_desc *t = realloc(pr->t, cap * sizeof(*t));
        if (t) pr->t = t;
        float *qs = t ? realloc(pr->qs, cap * sizeof(float)) : NULL;
        if (qs) pr->qs = qs;
        int32_t *qo = qs ? realloc(pr->qo, cap * sizeof(int32_t)) : NULL;
        if (!qo) goto oom;
        pr->qo = qo;
        pr->cap_t = cap;
    }
    npl_accel_tensor_desc c = *d;
    if (!(c.name = strdup(d->name ? d->name : ""))) goto oom;
    if (d->quant.n_scales == 1 && d->quant.scales) { /* re-pointed where a node reads it (tensor()) */
        pr->qs[pr->n_t] = d->quant.scales[0];
        pr->qo[pr->n_t] = d->quant.offsets ? d->quant.offsets[0] : 0;
    }
    pr->t[pr->n_t] = c;
    *out = pr->n_t++;
    return NPL_ACCEL_OK;
oom:
    pr->oom = 1;
    snprintf(pr->err, sizeof pr->err, "asking the target: out of memory");
    return NPL_ACCEL_ERR_NO_MEMORY;
}

/* The target's answer for one node; a v1 table cannot be asked, so it takes
 * everything and the lowering finds out. */
static npl_accel_status ask(const probe *pr, const npl_accel_node_desc *nd, const npl_accel_tensor_desc *in,
                            const npl_accel_tensor_desc *out, char *why, uint32_t len) {
#if NPL_ACCEL_ABI_VERSION >= 2
    if (!NPL_ACCEL_API_HAS(pr->target, validate_node)) return NPL_ACCEL_OK;
    return pr->target->validate_node(pr->be, nd, in, out, why, len);
#else
    (void)pr, (void)nd, (void)in, (void)out, (void)why, (void)len;
    return NPL_ACCEL_OK;
#endif
}

/* Tensor id as created, a per-tensor scale / offset pointing at the copy. */
static npl_accel_tensor_desc tensor(const probe *pr, uint32_t id) {
    npl_accel_tensor_desc d = pr->t[id];
    if (d.quant.n_scales == 1 && d.quant.scales) {
        d.quant.scales = &pr->qs[id];
        d.quant.offsets = &pr->qo[id];
    }
    return d;
}

static npl_accel_status p_add_node(npl_accel_graph *g, const npl_accel_node_desc *nd) {
    probe *pr = P(g);
    npl_accel_tensor_desc in[16], out[4];
    if (nd->n_inputs > 16 || nd->n_outputs > 4) {
        snprintf(pr->err, sizeof pr->err, "asking the target: node %s has too many tensors", nd->name);
        return NPL_ACCEL_ERR_INVALID_ARG;
    }
    for (uint32_t i = 0; i < nd->n_inputs; i++) in[i] = tensor(pr, nd->inputs[i]);
    for (uint32_t i = 0; i < nd->n_outputs; i++) out[i] = tensor(pr, nd->outputs[i]);
    char why[160] = "";
    if (ask(pr, nd, in, out, why, sizeof why) == NPL_ACCEL_OK) return NPL_ACCEL_OK;
    /* lower.c names accelerator nodes "n<graph node id>.<op>" */
    int id = -1;
    if (sscanf(nd->name, "n%d.", &id) != 1 || id < 0 || id >= pr->n_graph) {
        snprintf(pr->err, sizeof pr->err, "asking the target: node name %s names no graph node", nd->name);
        return NPL_ACCEL_ERR_INTERNAL;
    }
    if (!pr->refused[id][0]) {
        snprintf(pr->refused[id], NPL_WHY_LEN, "target %s refuses %s: %s", pr->target_name, nd->op,
                 why[0] ? why : "no reason given");
        pr->n_new++;
    }
    return NPL_ACCEL_OK; /* go on: every refusal of the subgraph in one pass */
}

static npl_accel_status p_finalize(npl_accel_graph *g) { return NPL_ACCEL_OK; }

static void probe_reset(probe *pr) {
    for (uint32_t i = 0; i < pr->n_t; i++) free((void *)(uintptr_t)pr->t[i].name);
    pr->n_t = 0;
}

int npl_validate_segments(const npl_validate_args *a, char (*refused)[NPL_WHY_LEN], char *err, size_t errlen) {
    npl_accel_api tbl = {.abi_version = NPL_ACCEL_ABI_VERSION, .struct_size = sizeof(npl_accel_api), .name = "probe",
                         .last_error = p_last_error, .graph_create = p_graph_create, .tensor_create = p_tensor_create,
                         .graph_add_node = p_add_node, .graph_finalize = p_finalize};
    probe pr = {.target = a->target, .be = a->be, .target_name = a->target_name, .refused = refused,
                .n_graph = npl_graph_n_nodes(a->g)};
    npl_shape *shapes = malloc((size_t)pr.n_graph * sizeof(npl_shape));
    int rc = -1;
    if (!shapes) goto oom;
    for (int c = 0; c < a->n_cases; c++) {
        if (npl_infer_all(a->g, a->seq[c], a->n_out[c], shapes, err, errlen)) goto done;
        for (int si = 0; si < a->part->n_segs; si++) {
            const npl_segment *sg = &a->part->segs[si];
            if (!sg->keep) continue;
            npl_lower_args la = *a->lower;
            char gname[64];
            snprintf(gname, sizeof gname, "probe%d_%d", si, c);
            la.g = a->g;
            la.seg = sg;
            la.shapes = shapes;
            la.gname = gname;
            probe_reset(&pr);
            void *h = &pr;
            if (npl_lower_segment(&tbl, h, h, &la, err, errlen)) {
                if (pr.oom) goto oom;
                /* not the target's word: the real lowering reports it and
                 * the subgraph stays on the CPU */
            }
        }
    }
    rc = pr.n_new;
    goto done;
oom:
    snprintf(err, errlen, "asking the target: out of memory");
done:
    probe_reset(&pr);
    free(pr.t);
    free(pr.qs);
    free(pr.qo);
    free(shapes);
    return rc;
}
