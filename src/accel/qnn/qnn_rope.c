/* Rope on QNN HTP: x [S, H, D] (F16 / F32), positions INT32 [S] (a graph
 * input), freq_factors F32 [n_rot/2]? (STATIC) -> x's shape, with vnpu's
 * params (n_rot = D, neox 0, base 10000, freq_scale 1, ext_factor 0,
 * attn_factor 1, corr_low, corr_high): llama.cpp's ggml_rope_ext.
 *
 * The angles are computed on the host at execute (qnn_rope_angles, the
 * arithmetic of the CPU kernels' rope_pair: double recurrences, theta
 * reduced to [-pi, pi]) from the bound positions and reach the graph as two
 * hidden inputs "<node>.cos" / "<node>.sin" [S, 1, n_rot/2] (interleaved:
 * [S, 1, n_rot/2, 1]); position -1 gives cos 1, sin 0: the row passes
 * unchanged. The graph rotates with StridedSlice, ElementWise Multiply /
 * Subtract / Add and Concat:
 *   neox:        x1 = x[.., :h], x2 = x[.., h:2h]; [x1 c - x2 s, x2 c + x1 s, x[.., 2h:]]
 *   interleaved: x as [S, H, D/2, 2], pairs (e, o) of the first h:
 *                [e c - o s, e s + o c] along the last dim, then the rest.
 * A context binary carries the host side (which inputs are cos / sin, the
 * params) in a record after QNN's bytes (qnn_binrec.c), so a reloaded graph
 * takes the positions as before. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

void qnn_rope_angles(const qnn_rope *r, const int32_t *pos, void *cos_out, void *sin_out) {
    const double two_pi = 6.283185307179586, step = pow(r->base, -1.0 / r->half);
    for (uint32_t p = 0; p < r->n_pos; p++) {
        double fr = (double)pos[p] * r->freq_scale, ex = (double)pos[p];
        for (uint32_t i = 0; i < r->half; i++, fr *= step, ex *= step) {
            float c = 1, s = 0;
            if (pos[p] >= 0) {
                double th = fr, e = ex, ms = r->attn_factor;
                if (r->factors) th /= r->factors[i], e /= r->factors[i];
                if (r->ext_factor != 0) { /* yarn, as ggml's rope_yarn */
                    const double y = (i - r->corr_lo) / fmax(0.001, r->corr_hi - r->corr_lo);
                    const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * r->ext_factor;
                    th = th * (1.0 - mix) + e * mix;
                    ms *= 1.0 + 0.1 * log(1.0 / r->freq_scale);
                }
                th -= two_pi * nearbyint(th / two_pi);
                c = (float)(cos(th) * ms), s = (float)(sin(th) * ms);
            }
            if (r->width) { /* pair i is elements 2i, 2i+1 of the row: out = x c + swap(x) (-s, s) */
                const size_t k = (size_t)p * r->width + 2 * i;
                const uint16_t hc = qnn_f32_to_f16(c), hs = qnn_f32_to_f16(s);
                ((uint16_t *)cos_out)[k] = ((uint16_t *)cos_out)[k + 1] = hc;
                ((uint16_t *)sin_out)[k] = (uint16_t)(hs ^ 0x8000u), ((uint16_t *)sin_out)[k + 1] = hs;
                continue;
            }
            const size_t k = (size_t)p * r->half + i;
            if (r->f16) ((uint16_t *)cos_out)[k] = qnn_f32_to_f16(c), ((uint16_t *)sin_out)[k] = qnn_f32_to_f16(s);
            else ((float *)cos_out)[k] = c, ((float *)sin_out)[k] = s;
        }
        for (uint32_t j = 2 * r->half; j < r->width; j++) /* past n_rot: unchanged */
            ((uint16_t *)cos_out)[(size_t)p * r->width + j] = 0x3c00u, ((uint16_t *)sin_out)[(size_t)p * r->width + j] = 0;
    }
}

static double fparam(const npl_accel_node_desc *n, const char *name, double dflt) {
    const npl_accel_param *p = qnn_param(n, name);
    return !p ? dflt : p->type == NPL_ACCEL_PARAM_FLOAT ? p->f : (double)p->i;
}

/* A NATIVE [rank, dims] of the output's type, named node + sfx. */
static npl_accel_status mk(qnn_lw *L, const char *sfx, uint32_t rank, const uint32_t *dims, Qnn_Tensor_t *t) {
    return qnn_native(L->g, L->nm, sfx, &L->out, rank, dims, t);
}

static npl_accel_status slice(qnn_lw *L, const char *sfx, Qnn_Tensor_t *x, const uint32_t *lo, const uint32_t *hi,
                              Qnn_Tensor_t *out) {
    const uint32_t rank = x->v2.rank, rd[2] = {rank, 3};
    uint32_t dims[NPL_ACCEL_MAX_RANK];
    int32_t r[NPL_ACCEL_MAX_RANK * 3];
    for (uint32_t i = 0; i < rank; i++) r[3 * i] = (int32_t)lo[i], r[3 * i + 1] = (int32_t)hi[i], r[3 * i + 2] = 1, dims[i] = hi[i] - lo[i];
    Qnn_Param_t prm;
    char pn[48] = "ranges";
    strncat(pn, sfx, sizeof pn - 8);
    npl_accel_status st = mk(L, sfx, rank, dims, out);
    if (!st) st = qnn_tensor_param(L->g, L->nm, pn, QNN_DATATYPE_INT_32, 2, rd, r, 12 * rank, &prm);
    if (st) return st;
    prm.name = "ranges";
    return qnn_node(L, sfx, "StridedSlice", x, 1, out, &prm, 1);
}

static npl_accel_status bin(qnn_lw *L, const char *sfx, const char *type, Qnn_Tensor_t a, Qnn_Tensor_t b, Qnn_Tensor_t *out) {
    Qnn_Tensor_t in[2] = {a, b};
    npl_accel_status st = mk(L, sfx, a.v2.rank, a.v2.dimensions, out);
    return st ? st : qnn_node(L, sfx, type, in, 2, out, NULL, 0);
}

npl_accel_status qnn_lower_rope(qnn_lw *L) {
    const qnn_tensor *x = qnn_lw_t(L, 0), *pt = qnn_lw_t(L, 1);
    const npl_accel_node_desc *n = L->n;
    const char *nm = L->nm;
    if (x->rank != 3 || (x->dtype != NPL_ACCEL_DT_F16 && x->dtype != NPL_ACCEL_DT_F32))
        return qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': Rope takes x [S, H, D] of F16 / F32", nm);
    const uint32_t S = x->dims[0], H = x->dims[1], D = x->dims[2];
    const int64_t n_rot = (int64_t)fparam(n, "n_rot", D);
    if (n_rot < 2 || n_rot > D || n_rot % 2)
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': n_rot %lld must be even and in 2..%u", nm,
                        (long long)n_rot, D);
    if (pt->dtype != NPL_ACCEL_DT_INT32 || pt->rank != 1 || pt->dims[0] != S || pt->kind != NPL_ACCEL_APP_WRITE)
        return qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': Rope's positions must be a graph input INT32 [%u]",
                        nm, S);
    const uint32_t h = (uint32_t)n_rot / 2;
    const qnn_tensor *ff = n->n_inputs == 3 ? qnn_lw_t(L, 2) : NULL;
    if (ff && (ff->kind != NPL_ACCEL_STATIC || ff->dtype != NPL_ACCEL_DT_F32 || ff->rank != 1 || ff->dims[0] != h))
        return qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': Rope's freq_factors must be STATIC F32 [%u]", nm, h);
    const npl_accel_dtype dt = L->cdt != NPL_ACCEL_DT_COUNT ? L->cdt : x->dtype; /* x comes converted to it (qnn_in) */
    qnn_rope r = {n->inputs[1], 0, 0, S, h, dt == NPL_ACCEL_DT_F16, fparam(n, "neox", 0) != 0,
                  fparam(n, "base", 10000), fparam(n, "freq_scale", 1), fparam(n, "ext_factor", 0),
                  fparam(n, "attn_factor", 1), fparam(n, "corr_low", 0), fparam(n, "corr_high", 0), NULL, 0};
    if (!(r.base > 0) || (r.ext_factor != 0 && !(r.freq_scale > 0)))
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': Rope needs base > 0 (and freq_scale > 0 with yarn)", nm);
    if (ff) {
        if (!(r.factors = malloc(sizeof(float) * h))) return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        memcpy(r.factors, ff->data, sizeof(float) * h);
    }
    qnn_rope *rs = realloc(L->g->ropes, sizeof *rs * (L->g->n_ropes + 1));
    if (!rs) {
        free(r.factors);
        return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    L->g->ropes = rs;
    qnn_rope *R = &rs[L->g->n_ropes++]; /* owned by the graph from here on, factors included */
    *R = r;
    /* interleaved pairs in f16: no [S, H, D/2, 2] views (a last dim of 2 makes
     * the HTP's compiled graph grow with the rows: SmolLM2's weight-shared
     * binary 1.161x its weights at chunk 128, NEOX models' not). The pair swap
     * as an exact 0/1 FullyConnected over [S * H, D] finalized for one
     * SmolLM2 layer but not for all 30 in one AR-128 graph ("split too large",
     * 1002); a Gather on the last axis has no such matmul */
    if (!R->neox && dt == NPL_ACCEL_DT_F16) R->width = D;
    Qnn_Tensor_t xq, c, s, a, b, o1, o2, parts[3], xr;
    const uint32_t cd[4] = {S, 1, h, 1}, cw[3] = {S, 1, D};
    npl_accel_status st = qnn_in(L, 0, &xq);
    if (!st) st = qnn_hidden_tensor(L, ".cos", NPL_ACCEL_APP_WRITE, dt, R->width ? 3 : R->neox ? 3 : 4, R->width ? cw : cd, &R->cos, &c);
    if (!st) st = qnn_hidden_tensor(L, ".sin", NPL_ACCEL_APP_WRITE, dt, R->width ? 3 : R->neox ? 3 : 4, R->width ? cw : cd, &R->sin, &s);
    if (st) return st;
    /* xq's dims pointed into the graph's per-id storage, which the hidden tensors may have moved */
    uint32_t *xqd = qnn_keep(L->g, sizeof(uint32_t) * 3);
    if (!xqd) return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    xqd[0] = S, xqd[1] = H, xqd[2] = D;
    xq.v2.dimensions = xqd;
    uint32_t np = 2;
    if (R->neox) {
        const uint32_t z[3] = {0, 0, 0}, e1[3] = {S, H, h}, b2[3] = {0, 0, h}, e2[3] = {S, H, 2 * h}, e3[3] = {S, H, D};
        Qnn_Tensor_t x1, x2, t1, t2;
        if ((st = slice(L, ".x1", &xq, z, e1, &x1)) || (st = slice(L, ".x2", &xq, b2, e2, &x2))) return st;
        if ((st = bin(L, ".x1c", "ElementWiseMultiply", x1, c, &a)) || (st = bin(L, ".x2s", "ElementWiseMultiply", x2, s, &b)) ||
            (st = bin(L, ".o1", "ElementWiseSubtract", a, b, &o1)))
            return st;
        if ((st = bin(L, ".x2c", "ElementWiseMultiply", x2, c, &t1)) || (st = bin(L, ".x1s", "ElementWiseMultiply", x1, s, &t2)) ||
            (st = bin(L, ".o2", "ElementWiseAdd", t1, t2, &o2)))
            return st;
        parts[0] = o1, parts[1] = o2;
        const uint32_t b3[3] = {0, 0, 2 * h};
        if (2 * h < D && (st = slice(L, ".pass", &xq, b3, e3, &parts[np++]))) return st;
        Qnn_Param_t ax = qnn_scalar("axis", QNN_DATATYPE_UINT_32);
        ax.scalarParam.u32 = 2;
        return qnn_node(L, "", "Concat", parts, np, &L->out, &ax, 1);
    }
    if (D % 2) return qnn_fail(L->be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "qnn-htp: node '%s': interleaved Rope needs an even D", nm);
    if (R->width) { /* f16: out = x * C + swap(x) * S', swap a Gather of the last axis by static indices */
        int32_t *ix = malloc(sizeof(int32_t) * D);
        if (!ix) return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        for (uint32_t j = 0; j < D; j++) ix[j] = (int32_t)(j < 2 * h ? j ^ 1u : j); /* element j takes x[j ^ 1] */
        const uint32_t xd[3] = {S, H, D}; /* not x->dims: the hidden tensors above may have moved the records */
        Qnn_Tensor_t idx, sw, in[2];
        Qnn_Param_t ax = qnn_scalar("axis", QNN_DATATYPE_INT_32);
        ax.scalarParam.i32 = 2;
        st = qnn_const(L->g, nm, ".swapix", QNN_DATATYPE_INT_32, NULL, 1, &D, ix, 4 * D, &idx);
        free(ix);
        if (st || (st = mk(L, ".swap", 3, xd, &sw))) return st;
        in[0] = xq, in[1] = idx;
        if ((st = qnn_node(L, ".swap", "Gather", in, 2, &sw, &ax, 1))) return st;
        if ((st = bin(L, ".xc", "ElementWiseMultiply", xq, c, &a)) || (st = bin(L, ".ss", "ElementWiseMultiply", sw, s, &b)))
            return st;
        in[0] = a, in[1] = b;
        return qnn_node(L, "", "ElementWiseAdd", in, 2, &L->out, NULL, 0);
    }
    const uint32_t d4[4] = {S, H, D / 2, 2}, z[4] = {0, 0, 0, 0}, ee[4] = {S, H, h, 1}, ob[4] = {0, 0, 0, 1}, oe[4] = {S, H, h, 2};
    Qnn_Tensor_t xe, xo, t1, t2, pr;
    if ((st = mk(L, ".pairs", 4, d4, &xr)) || (st = qnn_node(L, ".pairs", "Reshape", &xq, 1, &xr, NULL, 0))) return st;
    if ((st = slice(L, ".xe", &xr, z, ee, &xe)) || (st = slice(L, ".xo", &xr, ob, oe, &xo))) return st;
    if ((st = bin(L, ".ec", "ElementWiseMultiply", xe, c, &a)) || (st = bin(L, ".os", "ElementWiseMultiply", xo, s, &b)) ||
        (st = bin(L, ".oe", "ElementWiseSubtract", a, b, &o1)))
        return st;
    if ((st = bin(L, ".es", "ElementWiseMultiply", xe, s, &t1)) || (st = bin(L, ".oc", "ElementWiseMultiply", xo, c, &t2)) ||
        (st = bin(L, ".oo", "ElementWiseAdd", t1, t2, &o2)))
        return st;
    Qnn_Param_t ax = qnn_scalar("axis", QNN_DATATYPE_UINT_32);
    ax.scalarParam.u32 = 3;
    parts[0] = o1, parts[1] = o2;
    const uint32_t rd[4] = {S, H, h, 2};
    if ((st = mk(L, ".rot", 4, rd, &pr)) || (st = qnn_node(L, ".rot", "Concat", parts, 2, &pr, &ax, 1))) return st;
    if (h < D / 2) {
        const uint32_t pb[4] = {0, 0, h, 0};
        Qnn_Tensor_t ps, all;
        if ((st = slice(L, ".pass", &xr, pb, d4, &ps))) return st;
        parts[0] = pr, parts[1] = ps;
        ax.scalarParam.u32 = 2;
        if ((st = mk(L, ".all", 4, d4, &all)) || (st = qnn_node(L, ".all", "Concat", parts, 2, &all, &ax, 1))) return st;
        pr = all;
    }
    return qnn_node(L, "", "Reshape", &pr, 1, &L->out, NULL, 0);
}
