/* Attention on QNN HTP, composed: QNN has no usable fused op (the probe:
 * GroupQueryAttention and MaskedSoftmax refused the inputs tried, no
 * ScaledDotProductAttention) and no context tensors for the KV cache.
 *
 *   q [S, Hq, D], k, v [S, Hkv, D], k_cache, v_cache (APP_READWRITE F16
 *   [C, Hkv, D]), positions INT32 [S] -> [S, Hq, D]; kv_len (0: C) = len,
 *   the cache rows the graph reads (a KV-length bucket: its positions < len)
 *
 * The caches are host buffers of the context (qnn_plugin.c), read by the
 * graph as hidden F16 inputs [len, Hkv, D] (the first len cache rows, bound
 * to the buffer itself: no copy); the chunk's k / v rows leave the graph as
 * hidden outputs and the host writes them into the buffers at their
 * positions after execute (qnn_attn_store), so the AR-N and AR-1 graphs of a
 * context share one cache. In the graph (F16 throughout; G = Hq / Hkv query
 * heads per KV head, head h reads KV head h / G):
 *   qh  = (q * scale) as [Hkv, G*S, D]          Reshape, Transpose, Reshape
 *   s   = [qh . Kc^T | qh . k^T]                 MatMul x2, Concat: [Hkv, G*S, len + S]
 *   s   = softcap * tanh(s / softcap)            (softcap > 0: gemma2)
 *   p   = Softmax(s + mask)                      mask [1, 1, S, len + S] from the host
 *   out = p[.., :len] . Vc + p[.., len:] . v     StridedSlice x2, MatMul x2, Add
 * then back to [S, Hq, D]. The mask (qnn_attn_mask) allows, for a row at
 * position p, cache rows j < p that are not rows of this chunk (those are
 * stale until the host writes them) and this chunk's rows at positions <= p,
 * both within the last `window` positions when window > 0 (gemma3's local
 * layers). A padding row (position -1) attends to its own new row only: its
 * output is some v row, not 0 (the ABI leaves nothing reading it). A
 * Transpose that moves no data (a dim of 1) is a Reshape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

#define MASKED (-30000.0f) /* exp() of it is 0 in fp16; far from -inf, so no inf - inf */

void qnn_attn_mask(const qnn_attn *a, const int32_t *pos, uint16_t *mask, uint8_t *in_chunk) {
    const uint32_t S = a->n_pos, L = a->len, T = L + S, W = a->window;
    const uint16_t neg = qnn_f32_to_f16(MASKED);
    memset(in_chunk, 0, L);
    for (uint32_t i = 0; i < S; i++)
        if (pos[i] >= 0 && (uint32_t)pos[i] < L) in_chunk[pos[i]] = 1;
    for (uint32_t i = 0; i < S; i++) {
        const int64_t p = pos[i];
        uint16_t *row = mask + (size_t)i * T;
        for (uint32_t j = 0; j < L; j++)
            row[j] = p >= 0 && j < p && !in_chunk[j] && (!W || p - j < W) ? 0 : neg;
        for (uint32_t k = 0; k < S; k++) {
            const int64_t pk = pos[k];
            const int ok = p < 0 ? k == i : pk >= 0 && pk <= p && (!W || p - pk < W);
            row[L + k] = ok ? 0 : neg;
        }
    }
}

void qnn_attn_store(npl_accel_context *c, const qnn_attn *a, const int32_t *pos, const void *knew, const void *vnew) {
    const qnn_tensor *kc = &c->t[a->kc], *vc = &c->t[a->vc];
    const uint32_t C = kc->dims[0];
    const uint64_t row = kc->bytes / C;
    for (uint32_t i = 0; i < a->n_pos; i++) {
        if (pos[i] < 0 || (uint32_t)pos[i] >= C) continue;
        memcpy((uint8_t *)kc->data + row * (uint64_t)pos[i], (const uint8_t *)knew + row * i, row);
        memcpy((uint8_t *)vc->data + row * (uint64_t)pos[i], (const uint8_t *)vnew + row * i, row);
    }
}

/* one lowering's F16 intermediates are made like this tensor */
typedef struct {
    qnn_lw *L;
    Qnn_Tensor_t like;
} ab;

static npl_accel_status nat(ab *B, const char *sfx, uint32_t rank, const uint32_t *dims, Qnn_Tensor_t *t) {
    return qnn_native(B->L->g, B->L->nm, sfx, &B->like, rank, dims, t);
}

static npl_accel_status op1(ab *B, const char *sfx, const char *type, Qnn_Tensor_t x, uint32_t rank, const uint32_t *dims,
                            Qnn_Param_t *prm, uint32_t np, Qnn_Tensor_t *out) {
    npl_accel_status st = nat(B, sfx, rank, dims, out);
    return st ? st : qnn_node(B->L, sfx, type, &x, 1, out, prm, np);
}

static npl_accel_status reshape(ab *B, const char *sfx, Qnn_Tensor_t x, uint32_t rank, const uint32_t *dims, Qnn_Tensor_t *out) {
    return op1(B, sfx, "Reshape", x, rank, dims, NULL, 0, out);
}

/* out dims[i] = x dims[perm[i]]; a Reshape when the dims larger than 1 keep their order */
static npl_accel_status transpose(ab *B, const char *sfx, Qnn_Tensor_t x, const uint32_t *perm, Qnn_Tensor_t *out) {
    const uint32_t rank = x.v2.rank;
    uint32_t dims[NPL_ACCEL_MAX_RANK];
    int moves = 0;
    for (uint32_t i = 0, last = 0, any = 0; i < rank; i++) {
        dims[i] = x.v2.dimensions[perm[i]];
        if (dims[i] == 1) continue;
        if (any && perm[i] < last) moves = 1;
        last = perm[i], any = 1;
    }
    if (!moves) return reshape(B, sfx, x, rank, dims, out);
    Qnn_Param_t prm;
    char pn[48];
    snprintf(pn, sizeof pn, "%s.perm", sfx + 1);
    npl_accel_status st = qnn_tensor_param(B->L->g, B->L->nm, pn, QNN_DATATYPE_UINT_32, 1, &rank, perm, 4 * rank, &prm);
    if (st) return st;
    prm.name = "perm";
    return op1(B, sfx, "Transpose", x, rank, dims, &prm, 1, out);
}

static npl_accel_status matmul(ab *B, const char *sfx, Qnn_Tensor_t a, Qnn_Tensor_t b, int tb, uint32_t rank,
                               const uint32_t *dims, Qnn_Tensor_t *out) {
    Qnn_Param_t prm[2] = {qnn_scalar("transpose_in0", QNN_DATATYPE_BOOL_8), qnn_scalar("transpose_in1", QNN_DATATYPE_BOOL_8)};
    prm[0].scalarParam.b8 = 0, prm[1].scalarParam.b8 = (uint8_t)tb;
    Qnn_Tensor_t in[2] = {a, b};
    npl_accel_status st = nat(B, sfx, rank, dims, out);
    return st ? st : qnn_node(B->L, sfx, "MatMul", in, 2, out, prm, 2);
}

static npl_accel_status binary(ab *B, const char *sfx, const char *type, Qnn_Tensor_t a, Qnn_Tensor_t b, Qnn_Tensor_t *out) {
    Qnn_Tensor_t in[2] = {a, b};
    npl_accel_status st = nat(B, sfx, a.v2.rank, a.v2.dimensions, out);
    return st ? st : qnn_node(B->L, sfx, type, in, 2, out, NULL, 0);
}

static npl_accel_status scaled(ab *B, const char *sfx, Qnn_Tensor_t x, double v, Qnn_Tensor_t *out) {
    const qnn_tensor f16 = {.dtype = NPL_ACCEL_DT_F16};
    Qnn_Tensor_t c;
    char cs[32] = ".k";
    strncat(cs, sfx + 1, sizeof cs - 3);
    npl_accel_status st = qnn_scalar_const(B->L, cs, &f16, v, &c);
    return st ? st : binary(B, sfx, "ElementWiseMultiply", x, c, out);
}

static npl_accel_status slice(ab *B, const char *sfx, Qnn_Tensor_t x, const uint32_t *lo, const uint32_t *hi, Qnn_Tensor_t *out) {
    const uint32_t rank = x.v2.rank, rd[2] = {rank, 3};
    uint32_t dims[NPL_ACCEL_MAX_RANK];
    int32_t r[NPL_ACCEL_MAX_RANK * 3];
    for (uint32_t i = 0; i < rank; i++) r[3 * i] = (int32_t)lo[i], r[3 * i + 1] = (int32_t)hi[i], r[3 * i + 2] = 1, dims[i] = hi[i] - lo[i];
    Qnn_Param_t prm;
    char pn[48];
    snprintf(pn, sizeof pn, "%s.ranges", sfx + 1);
    npl_accel_status st = qnn_tensor_param(B->L->g, B->L->nm, pn, QNN_DATATYPE_INT_32, 2, rd, r, 12 * rank, &prm);
    if (st) return st;
    prm.name = "ranges";
    return op1(B, sfx, "StridedSlice", x, rank, dims, &prm, 1, out);
}

/* A graph tensor's dims point into the graph's per-id storage, which moves
 * when later tensors are created: the copy used here gets dims of its own. */
static npl_accel_status stable(ab *B, Qnn_Tensor_t *x) {
    uint32_t *d = qnn_keep(B->L->g, sizeof *d * x->v2.rank);
    if (!d) return qnn_fail(B->L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    memcpy(d, x->v2.dimensions, sizeof *d * x->v2.rank);
    x->v2.dimensions = d;
    return NPL_ACCEL_OK;
}

static double fparam(const npl_accel_node_desc *n, const char *name, double dflt) {
    const npl_accel_param *p = qnn_param(n, name);
    return !p ? dflt : p->type == NPL_ACCEL_PARAM_FLOAT ? p->f : (double)p->i;
}

#define BAD(...) qnn_fail(L->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "qnn-htp: node '%s': Attention " __VA_ARGS__)

npl_accel_status qnn_lower_attention(qnn_lw *L) {
    npl_accel_context *c = L->g->ctx;
    const npl_accel_node_desc *n = L->n;
    const char *nm = L->nm;
    const qnn_tensor *q = qnn_lw_t(L, 0), *k = qnn_lw_t(L, 1), *v = qnn_lw_t(L, 2), *kc = qnn_lw_t(L, 3), *vc = qnn_lw_t(L, 4),
                     *pt = qnn_lw_t(L, 5), *o = &c->t[n->outputs[0]];
    if (q->rank != 3 || k->rank != 3 || v->rank != 3 || kc->rank != 3 || vc->rank != 3 || o->rank != 3)
        return BAD("takes q [S, Hq, D], k / v [S, Hkv, D], caches [C, Hkv, D] -> [S, Hq, D]", nm);
    const uint32_t S = q->dims[0], Hq = q->dims[1], D = q->dims[2], Hkv = k->dims[1], C_all = kc->dims[0];
    for (uint32_t i = 0; i < 3; i++)
        if (v->dims[i] != k->dims[i] || vc->dims[i] != kc->dims[i] || o->dims[i] != q->dims[i])
            return BAD("needs v shaped like k, v_cache like k_cache and the output like q", nm);
    if (k->dims[0] != S || k->dims[2] != D || kc->dims[1] != Hkv || kc->dims[2] != D || !Hkv || Hq % Hkv)
        return BAD("shapes: q [%u, %u, %u], k [%u, %u, %u], cache [%u, %u, %u] (Hq must be a multiple of Hkv)", nm, S, Hq, D,
                   k->dims[0], k->dims[1], k->dims[2], C_all, kc->dims[1], kc->dims[2]);
    if (kc->kind != NPL_ACCEL_APP_READWRITE || vc->kind != NPL_ACCEL_APP_READWRITE || kc->dtype != NPL_ACCEL_DT_F16 ||
        vc->dtype != NPL_ACCEL_DT_F16 || n->inputs[3] == n->inputs[4])
        return BAD("needs two APP_READWRITE F16 caches", nm);
    if (pt->dtype != NPL_ACCEL_DT_INT32 || pt->rank != 1 || pt->dims[0] != S || pt->kind != NPL_ACCEL_APP_WRITE)
        return BAD("positions must be a graph input INT32 [%u]", nm, S);
    const npl_accel_dtype qdt[3] = {q->dtype, k->dtype, v->dtype};
    for (int i = 0; i < 3; i++)
        if (qdt[i] != NPL_ACCEL_DT_F16 && qdt[i] != NPL_ACCEL_DT_F32)
            return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': Attention of a quantized tensor is not lowered; use F16 / F32", nm);
    if (o->dtype != NPL_ACCEL_DT_F16 && o->dtype != NPL_ACCEL_DT_F32)
        return qnn_fail(L->be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: node '%s': Attention's output must be F16 / F32", nm);
    const double scale = fparam(n, "scale", 1.0 / __builtin_sqrt((double)D)), softcap = fparam(n, "softcap", 0);
    const int64_t window = (int64_t)fparam(n, "window", 0), kv_len = (int64_t)fparam(n, "kv_len", 0);
    if (!(scale > 0) || softcap < 0 || window < 0 || window > UINT32_MAX)
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': Attention needs scale > 0, softcap >= 0, window >= 0", nm);
    if (kv_len < 0 || kv_len > C_all)
        return qnn_fail(L->be, NPL_ACCEL_ERR_BAD_PARAM, "qnn-htp: node '%s': Attention kv_len %lld is outside [0, %u] (the cache rows)",
                        nm, (long long)kv_len, C_all);
    /* the cache rows this graph reads: a decode bucket's graph reads the first
     * kv_len (the host picks the bucket that holds the positions) */
    const uint32_t C = kv_len ? (uint32_t)kv_len : C_all;
    const npl_accel_dtype odt = o->dtype;
    const uint32_t G = Hq / Hkv, T = C + S;
    qnn_attn A = {n->inputs[5], n->inputs[3], n->inputs[4], 0, 0, 0, 0, 0, S, C, (uint32_t)window};
    /* q, k, v come as F16 (qnn_in casts an F32 one): the HTP computes in fp16 */
    L->cdt = NPL_ACCEL_DT_F16;
    ab B = {L, L->out};
    B.like.v2.dataType = QNN_DATATYPE_FLOAT_16;
    Qnn_Tensor_t xq, xk, xv, kin, vin, mask, kout, vout, t1, t2, qh, kh, vh, kch, vch, sc, sn, s, p, pc, pn, oc, on, y;
    npl_accel_status st = qnn_in(L, 0, &xq);
    if (!st && !(st = stable(&B, &xq))) st = qnn_in(L, 1, &xk);
    if (!st && !(st = stable(&B, &xk))) st = qnn_in(L, 2, &xv);
    if (!st) st = stable(&B, &xv);
    const uint32_t cd[3] = {C, Hkv, D}, nd[3] = {S, Hkv, D}, md[4] = {1, 1, S, T};
    if (!st) st = qnn_hidden_tensor(L, ".kc", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 3, cd, &A.kin, &kin);
    if (!st && !(st = stable(&B, &kin))) st = qnn_hidden_tensor(L, ".vc", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 3, cd, &A.vin, &vin);
    if (!st && !(st = stable(&B, &vin))) st = qnn_hidden_tensor(L, ".mask", NPL_ACCEL_APP_WRITE, NPL_ACCEL_DT_F16, 4, md, &A.mask, &mask);
    if (!st && !(st = stable(&B, &mask))) st = qnn_hidden_tensor(L, ".knew", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 3, nd, &A.kout, &kout);
    if (!st && !(st = stable(&B, &kout))) st = qnn_hidden_tensor(L, ".vnew", NPL_ACCEL_APP_READ, NPL_ACCEL_DT_F16, 3, nd, &A.vout, &vout);
    if (!st) st = stable(&B, &vout);
    if (st) return st;
    qnn_attn *as = realloc(L->g->attns, sizeof *as * (L->g->n_attns + 1));
    if (!as) return qnn_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    L->g->attns = as;
    as[L->g->n_attns++] = A;
    /* the new rows out, as the cache stores them */
    if ((st = qnn_node(L, ".knew", "Reshape", &xk, 1, &kout, NULL, 0)) || (st = qnn_node(L, ".vnew", "Reshape", &xv, 1, &vout, NULL, 0)))
        return st;
    /* q: scaled (exact for the power-of-two scales of head sizes 64 / 256), as [Hkv, G*S, D] */
    const uint32_t q4[4] = {S, Hkv, G, D}, pq[4] = {1, 2, 0, 3}, qd[3] = {Hkv, G * S, D}, p3[3] = {1, 0, 2};
    if (scale != 1.0 && (st = scaled(&B, ".qs", xq, scale, &xq))) return st;
    if ((st = reshape(&B, ".q4", xq, 4, q4, &t1)) || (st = transpose(&B, ".qt", t1, pq, &t2)) || (st = reshape(&B, ".qh", t2, 3, qd, &qh)))
        return st;
    if ((st = transpose(&B, ".kh", xk, p3, &kh)) || (st = transpose(&B, ".vh", xv, p3, &vh)) || (st = transpose(&B, ".kch", kin, p3, &kch)) ||
        (st = transpose(&B, ".vch", vin, p3, &vch)))
        return st;
    const uint32_t scd[3] = {Hkv, G * S, C}, snd[3] = {Hkv, G * S, S}, sd[3] = {Hkv, G * S, T};
    if ((st = matmul(&B, ".sc", qh, kch, 1, 3, scd, &sc)) || (st = matmul(&B, ".sn", qh, kh, 1, 3, snd, &sn))) return st;
    Qnn_Tensor_t parts[2] = {sc, sn};
    Qnn_Param_t ax = qnn_scalar("axis", QNN_DATATYPE_UINT_32);
    ax.scalarParam.u32 = 2;
    if ((st = nat(&B, ".s", 3, sd, &s)) || (st = qnn_node(L, ".s", "Concat", parts, 2, &s, &ax, 1))) return st;
    if (softcap > 0) {
        if ((st = scaled(&B, ".cap_in", s, 1.0 / softcap, &t1)) || (st = op1(&B, ".tanh", "Tanh", t1, 3, sd, NULL, 0, &t2)) ||
            (st = scaled(&B, ".cap_out", t2, softcap, &s)))
            return st;
    }
    const uint32_t s4[4] = {Hkv, G, S, T};
    Qnn_Param_t sm[2] = {qnn_scalar("axis", QNN_DATATYPE_UINT_32), qnn_scalar("beta", QNN_DATATYPE_FLOAT_32)};
    sm[0].scalarParam.u32 = 3, sm[1].scalarParam.f32 = 1.0f;
    if ((st = reshape(&B, ".s4", s, 4, s4, &t1)) || (st = binary(&B, ".masked", "ElementWiseAdd", t1, mask, &t2)) ||
        (st = op1(&B, ".p", "Softmax", t2, 4, s4, sm, 2, &t1)) || (st = reshape(&B, ".p3", t1, 3, sd, &p)))
        return st;
    const uint32_t z[3] = {0, 0, 0}, ec[3] = {Hkv, G * S, C}, bn[3] = {0, 0, C}, en[3] = {Hkv, G * S, T};
    const uint32_t od[3] = {Hkv, G * S, D};
    if ((st = slice(&B, ".pc", p, z, ec, &pc)) || (st = slice(&B, ".pn", p, bn, en, &pn)) ||
        (st = matmul(&B, ".oc", pc, vch, 0, 3, od, &oc)) || (st = matmul(&B, ".on", pn, vh, 0, 3, od, &on)) ||
        (st = binary(&B, ".o", "ElementWiseAdd", oc, on, &y)))
        return st;
    /* [Hkv, G*S, D] -> [Hkv, G, S, D] -> [S, Hkv, G, D] -> [S, Hq, D] */
    const uint32_t o4[4] = {Hkv, G, S, D}, po[4] = {2, 0, 1, 3}, out3[3] = {S, Hq, D};
    if ((st = reshape(&B, ".o4", y, 4, o4, &t1)) || (st = transpose(&B, ".ot", t1, po, &t2))) return st;
    if (odt == NPL_ACCEL_DT_F16) return qnn_node(L, "", "Reshape", &t2, 1, &L->out, NULL, 0);
    if ((st = reshape(&B, ".o3", t2, 3, out3, &t1))) return st;
    return qnn_node(L, "", "Cast", &t1, 1, &L->out, NULL, 0);
}
