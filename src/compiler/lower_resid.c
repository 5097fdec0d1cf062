/* The residual stream's scale in a lowered graph (npl_lower_args.resid_scale;
 * lower.c says why and where it applies): the Scale nodes that bring a
 * tensor to x * s and back, and the residual ops' outputs. */
#include <stdio.h>

#include "compiler/lower_internal.h"

#define NONE UINT32_MAX

int npl_lw_rescaled(npl_lw *l, int id, uint32_t src, npl_accel_dtype dt, float k, uint32_t *slot, uint32_t *out) {
    if (*slot == NONE) {
        const int up = k < 1;
        char name[sizeof l->a->out_name + 16];
        snprintf(name, sizeof name, "%s.n%d.%s", l->a->gname, id, up ? "rs" : "unrs");
        if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, dt, &l->a->shapes[id], slot)) return -1;
        const npl_accel_param p = {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = k};
        if (npl_lw_node(l, "Scale", up ? ".rs" : ".unrs", &p, 1, &src, 1, *slot, id)) return -1;
    }
    *out = *slot;
    return 0;
}

int npl_lw_resid_node(npl_lw *l, int id, const char *op, const npl_accel_param *p, uint32_t np, const uint32_t *in,
                      uint32_t nin) {
    uint32_t o;
    if (npl_lw_out_tensor(l, id, NPL_ACCEL_DT_F32, &o)) return -1;
    if (l->rs == 1.0f) return npl_lw_node(l, op, "", p, np, in, nin, o, id);
    l->rsc[id] = 1;
    if (id != l->a->seg->outputs[0]) return npl_lw_node(l, op, "", p, np, in, nin, o, id);
    char name[sizeof l->a->out_name + 16];
    snprintf(name, sizeof name, "%s.n%d.rsout", l->a->gname, id);
    uint32_t t;
    if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F32, &l->a->shapes[id], &t) ||
        npl_lw_node(l, op, "", p, np, in, nin, t, id))
        return -1;
    const npl_accel_param k = {.name = "scale", .type = NPL_ACCEL_PARAM_FLOAT, .f = 1.0 / l->rs};
    l->tid[id] = t; /* consumers in the segment read x * s */
    return npl_lw_node(l, "Scale", ".unrs", &k, 1, &t, 1, o, id);
}
