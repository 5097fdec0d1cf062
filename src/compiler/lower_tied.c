/* The tied embedding / output matrix on QNN HTP, stored once: its output
 * matmul and its row lookups read one int8 table (npl_lower_args.tied). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "compiler/lower_internal.h"
#include "kernels/dtype.h"

/* ---- the tied embedding / output matrix, stored once (--target qnn-htp) ----
 * QNN HTP refuses a Gather on a per-axis int8 table (finalize 1002; its
 * Dequantize takes no per-channel tensor), and stores a per-axis
 * FullyConnected weight in a layout with no readable int8 rows. But one
 * per-tensor int8 STATIC table read by both a FullyConnected and a Gather is
 * stored once (bench/qnn-probe/p11_tied.c, docs/qnn-lpbq-shapes.md: Gemma's
 * 262144 x 640, binary 1.009x the matrix). So the matrix's per-row int8 values
 * (npl_requant_rows) go in with one scale g, a power of two near the median
 * row scale, and each row's own scale comes back as an f16 factor r[n] =
 * s[n] / g: logits = FC(x, W) * r and rows = Dequantize(Gather(W, ids)) *
 * Gather(r, ids), the per-channel arithmetic. r sits in the weight's f32 slot
 * (data[1], unused by a matrix) as f16. */
int npl_lw_tied_factors(npl_lw *l, int id, float *g) {
    npl_lower_weight *w = &l->a->wc[id];
    if (npl_lw_weight_bytes(l, id, 0)) return -1;
    if (!w->scales || w->block || w->dt[0] != NPL_ACCEL_DT_INT8) {
        snprintf(l->err, l->errlen, "weight %s: a tied matrix needs int8 rows with a scale each (--weights w8)",
                 npl_graph_node(l->a->g, id)->name);
        return -1;
    }
    int hist[320] = {0}, e, med = 0, seen = 0; /* the median binary exponent of the row scales */
    float smax = 0;
    for (uint32_t i = 0; i < w->n_scales; i++) {
        frexpf(w->scales[i], &e);
        hist[e < -160 ? 0 : e > 159 ? 319 : e + 160]++;
        smax = w->scales[i] > smax ? w->scales[i] : smax;
    }
    while (med < 319 && (seen += hist[med]) * 2 < (int)w->n_scales) med++;
    e = med - 160;
    e = e < -14 ? -14 : e; /* q * g stays a normal f16 */
    while (smax / ldexpf(1.0f, e) > 32768.0f) e++; /* and every factor a finite one */
    *g = ldexpf(1.0f, e);
    if (w->data[1]) return 0;
    uint16_t *r = malloc(sizeof(uint16_t) * w->n_scales);
    if (!r) {
        snprintf(l->err, l->errlen, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < w->n_scales; i++) r[i] = npl_f32_to_f16(w->scales[i] / *g);
    w->data[1] = r, w->size[1] = sizeof(uint16_t) * w->n_scales, w->dt[1] = NPL_ACCEL_DT_F16;
    return 0;
}

/* The factors r as a STATIC f16 tensor of rank 1 ([N]) or 4 ([1, 8, 8, N / 64]). */
static int tied_factor_tensor(npl_lw *l, int id, int rank4, uint32_t *out) {
    float g;
    if (npl_lw_tied_factors(l, id, &g)) return -1;
    const npl_lower_weight *w = &l->a->wc[id];
    char name[160];
    snprintf(name, sizeof name, "%s#r%s", npl_graph_node(l->a->g, id)->name, rank4 ? "4" : "");
    npl_accel_tensor_desc d = {.name = name, .kind = NPL_ACCEL_STATIC, .dtype = NPL_ACCEL_DT_F16, .data = w->data[1],
                               .data_size = w->size[1], .rank = rank4 ? 4 : 1};
    if (rank4) d.dims[0] = 1, d.dims[1] = 8, d.dims[2] = 8, d.dims[3] = w->n_scales / 64;
    else d.dims[0] = w->n_scales;
    if (l->api->tensor_create(l->ag, &d, out) != NPL_ACCEL_OK) return npl_lw_fail_api(l, name);
    l->a->static_bytes += w->size[1];
    return 0;
}

/* The tied matrix's output matmul: FC in f16, then times r. A [1, N]
 * multiplier is stored padded (64 bytes an element: 16 MiB for Gemma's
 * vocabulary), a [1, 8, 8, N / 64] one is not, so the product runs as
 * [M, 8, 8, N / 64] when N allows. */
int npl_lw_tied_matmul(npl_lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    npl_accel_param p = {.name = "transpose_in1", .type = NPL_ACCEL_PARAM_INT, .i = 1};
    const npl_shape *s = &l->a->shapes[id];
    const int64_t N = s->ne[0], M = s->ne[1] * s->ne[2] * s->ne[3];
    const int r4 = N % 64 == 0;
    char name[sizeof l->a->out_name + 16];
    uint32_t in[2], raw, t4, m4, r, o;
    if (npl_lw_src_tensor(l, nd->src[1], &in[0]) || npl_lw_weight_tensor(l, nd->src[0], 0, &in[1])) return -1;
    snprintf(name, sizeof name, "%s.n%d.raw", l->a->gname, id);
    if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, s, &raw) || npl_lw_node(l, "MatMul", "", &p, 1, in, 2, raw, id) ||
        tied_factor_tensor(l, nd->src[0], r4, &r))
        return -1;
    uint32_t prod = raw;
    const npl_shape s4 = {.n_dims = 4, .ne = {N / 64, 8, 8, M}};
    if (r4) {
        snprintf(name, sizeof name, "%s.n%d.raw4", l->a->gname, id);
        if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, &s4, &t4) || npl_lw_node(l, "Reshape", ".4", NULL, 0, &raw, 1, t4, id))
            return -1;
        prod = t4;
    }
    snprintf(name, sizeof name, "%s.n%d.scaled", l->a->gname, id);
    if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, r4 ? &s4 : s, &m4)) return -1;
    const uint32_t mi[2] = {prod, r};
    if (npl_lw_node(l, "Mul", "", NULL, 0, mi, 2, m4, id) || npl_lw_out_tensor(l, id, NPL_ACCEL_DT_F16, &o)) return -1;
    if (l->tdt[id] == NPL_ACCEL_DT_F16) return npl_lw_node(l, "Reshape", ".out", NULL, 0, &m4, 1, o, id);
    uint32_t back = m4; /* f32 logits: back to [M, N], then a Cast */
    if (r4) {
        snprintf(name, sizeof name, "%s.n%d.back", l->a->gname, id);
        if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, s, &back) || npl_lw_node(l, "Reshape", ".back", NULL, 0, &m4, 1, back, id))
            return -1;
    }
    return npl_lw_node(l, "Cast", ".out", NULL, 0, &back, 1, o, id);
}

/* The tied matrix's row lookup: rows = Dequantize(Gather(W, ids)) * Gather(r, ids), in f32. */
int npl_lw_tied_rows(npl_lw *l, int id) {
    const npl_node *nd = npl_graph_node(l->a->g, id);
    const npl_shape *s = &l->a->shapes[id], *si = &l->a->shapes[nd->src[1]];
    char name[sizeof l->a->out_name + 16];
    uint32_t ids, w, q, h, r, r1, r2, o, in[2];
    float g;
    if (npl_lw_src_tensor(l, nd->src[1], &ids) || npl_lw_weight_tensor(l, nd->src[0], 0, &w) || npl_lw_tied_factors(l, nd->src[0], &g) ||
        tied_factor_tensor(l, nd->src[0], 0, &r))
        return -1;
    snprintf(name, sizeof name, "%s.n%d.q", l->a->gname, id);
    npl_accel_tensor_desc d = {.name = name, .kind = NPL_ACCEL_NATIVE, .dtype = NPL_ACCEL_DT_INT8,
                               .quant = {NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, &g, NULL}};
    npl_lw_dims_of(s, &d);
    if (l->api->tensor_create(l->ag, &d, &q) != NPL_ACCEL_OK) return npl_lw_fail_api(l, name);
    in[0] = w, in[1] = ids;
    snprintf(name, sizeof name, "%s.n%d.h", l->a->gname, id);
    if (npl_lw_node(l, "Gather", "", NULL, 0, in, 2, q, id) || npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, s, &h) ||
        npl_lw_node(l, "Cast", "", NULL, 0, &q, 1, h, id))
        return -1;
    const npl_shape s1 = {.n_dims = 1, .ne = {si->ne[0] * si->ne[1] * si->ne[2] * si->ne[3], 1, 1, 1}},
                    s2 = {.n_dims = 2, .ne = {1, s1.ne[0], 1, 1}};
    in[0] = r;
    snprintf(name, sizeof name, "%s.n%d.r1", l->a->gname, id);
    if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, &s1, &r1) || npl_lw_node(l, "Gather", ".r", NULL, 0, in, 2, r1, id))
        return -1;
    snprintf(name, sizeof name, "%s.n%d.r2", l->a->gname, id);
    if (npl_lw_mk(l, name, NPL_ACCEL_NATIVE, NPL_ACCEL_DT_F16, &s2, &r2) || npl_lw_node(l, "Reshape", "", NULL, 0, &r1, 1, r2, id) ||
        npl_lw_out_tensor(l, id, NPL_ACCEL_DT_F32, &o))
        return -1;
    in[0] = h, in[1] = r2;
    return npl_lw_node(l, "Mul", "", NULL, 0, in, 2, o, id);
}

