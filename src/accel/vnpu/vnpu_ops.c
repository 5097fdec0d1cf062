/* vnpu op set: names, params and the type / shape check of every op.
 *
 * The ops and their semantics are the vocabulary in include/npullm_accel.h;
 * this file adds what vnpu takes of it. "float" = F32, F16, BF16,
 * INT8/UINT8/INT16 with per-tensor quant params or INT16 with dynamic
 * per-block scales (not for Transpose or Concat); all compute in f32.
 *   MatMul        w: F32/F16/BF16, INT8/UINT8/INT16 with per-tensor, per-axis
 *                 (output channel) or per-block (along K, block % 32 == 0) params,
 *                 or GGML blocks Q4_0..Q6_K (STATIC, transpose_in1=1);
 *                 transpose_in0 = 0 only. FullyConnected's keep_dims is ignored.
 *   Attention     D <= NPL_ATTN_MAX_HD (1024); kv_len (the rows read) only bounds the
 *                 positions: the kernels read the rows up to each position anyway.
 *   Gather        table: float, GGML blocks or per-row (axis 0) quantized ints.
 *   Cast          to any float type. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"

/* Params per op, in the order they fill the node's slots: INT and INTS
 * params fill ip[] and FLOAT params fp[], each from slot 0 in the order
 * listed (so Rope's corr_low is ip[2] and attn_factor fp[3]). */
#define INT_P NPL_ACCEL_PARAM_INT
#define FLOAT_P NPL_ACCEL_PARAM_FLOAT
static const npl_accel_param_info p_matmul[] = {{"transpose_in0", INT_P}, {"transpose_in1", INT_P}};
static const npl_accel_param_info p_fc[] = {{"keep_dims", INT_P}};
static const npl_accel_param_info p_rms[] = {{"epsilon", FLOAT_P}};
static const npl_accel_param_info p_rope[] = {{"n_rot", INT_P},       {"neox", INT_P},
                                              {"base", FLOAT_P},      {"freq_scale", FLOAT_P},
                                              {"ext_factor", FLOAT_P}, {"attn_factor", FLOAT_P},
                                              {"corr_low", INT_P},    {"corr_high", INT_P}};
static const npl_accel_param_info p_attn[] = {{"window", INT_P}, {"kv_len", INT_P}, {"scale", FLOAT_P}, {"softcap", FLOAT_P}};
static const npl_accel_param_info p_scale[] = {{"scale", FLOAT_P}};
static const npl_accel_param_info p_softmax[] = {{"beta", FLOAT_P}};
static const npl_accel_param_info p_transpose[] = {{"perm", NPL_ACCEL_PARAM_INTS}};
static const npl_accel_param_info p_axis[] = {{"axis", INT_P}};
#define NP(a) (uint32_t)(sizeof a / sizeof a[0]), a
#define NP_NONE 0, NULL

static const vnpu_op_info op_infos[VNPU_OP_COUNT] = {
#define INFO_ROW(e, nm, mi, ma, no, ...) [VNPU_OP_##e] = {nm, mi, ma, no, 0, __VA_ARGS__},
#define INTERNAL_ROW(e, nm, mi, ma, no, ...) [VNPU_OP_##e] = {nm, mi, ma, no, 1, __VA_ARGS__},
    VNPU_OPS(INFO_ROW) VNPU_INTERNAL_OPS(INTERNAL_ROW)
#undef INFO_ROW
#undef INTERNAL_ROW
};

/* list_ops: the same rows, in the ABI's form (internal ops are not listed) */
static const npl_accel_op_info op_list[VNPU_OP_N_PUBLIC] = {
#define LIST_ROW(e, nm, mi, ma, no, ...) {nm, mi, ma, no, __VA_ARGS__},
    VNPU_OPS(LIST_ROW)
#undef LIST_ROW
};

const npl_accel_op_info *vnpu_op_list(uint32_t *n) {
    *n = VNPU_OP_N_PUBLIC;
    return op_list;
}

const vnpu_op_info *vnpu_op_get(uint32_t op) { return op < VNPU_OP_COUNT ? &op_infos[op] : NULL; }

int vnpu_op_from_name(const char *name) {
    for (int i = 0; i < VNPU_OP_COUNT; i++)
        if (!strcmp(op_infos[i].name, name)) return i;
    return -1;
}

/* ---- params ---- */

static void set_defaults(vnpu_node *n) {
    switch (n->op) {
    case VNPU_OP_RMS_NORM: n->fp[0] = 1e-6f; break;
    case VNPU_OP_ROPE: n->ip[0] = -1; n->fp[0] = 10000.0f; n->fp[1] = 1.0f; n->fp[3] = 1.0f; break;
    case VNPU_OP_SCALE: case VNPU_OP_SOFTMAX: n->fp[0] = 1.0f; break;
    case VNPU_OP_TRANSPOSE: n->ip[0] = -1; break;
    default: break;
    }
}

npl_accel_status vnpu_parse_params(struct npl_accel_backend *be, vnpu_node *n, const npl_accel_param *p,
                                   uint32_t np, const char *where) {
    set_defaults(n);
    const vnpu_op_info *oi = vnpu_op_get(n->op);
    for (uint32_t i = 0; i < np; i++) {
        if (!p[i].name) return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: param %u has no name", where, i);
        uint32_t j = 0;
        while (j < oi->n_params && strcmp(oi->params[j].name, p[i].name)) j++;
        if (j == oi->n_params)
            return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: unknown param '%s'", where, p[i].name);
        const npl_accel_param_type want = oi->params[j].type;
        int slot = 0; /* earlier params of the same class (ip[] or fp[]) */
        for (uint32_t k = 0; k < j; k++) slot += (oi->params[k].type == NPL_ACCEL_PARAM_FLOAT) == (want == NPL_ACCEL_PARAM_FLOAT);
        if (want == NPL_ACCEL_PARAM_INT && p[i].type == NPL_ACCEL_PARAM_INT) {
            n->ip[slot] = p[i].i;
        } else if (want == NPL_ACCEL_PARAM_FLOAT && (p[i].type == NPL_ACCEL_PARAM_FLOAT || p[i].type == NPL_ACCEL_PARAM_INT)) {
            double v = p[i].type == NPL_ACCEL_PARAM_FLOAT ? p[i].f : (double)p[i].i;
            if (!isfinite(v))
                return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: param '%s' is not finite", where, p[i].name);
            n->fp[slot] = (float)v;
        } else if (want == NPL_ACCEL_PARAM_INTS && p[i].type == NPL_ACCEL_PARAM_INTS) {
            if (p[i].count > VNPU_MAX_INTS || (p[i].count && !p[i].ints))
                return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: param '%s' has %u values (max %d)", where,
                                 p[i].name, p[i].count, VNPU_MAX_INTS);
            for (uint32_t k = 0; k < p[i].count; k++) n->ip[k] = p[i].ints[k];
            n->n_ip = p[i].count;
        } else {
            return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: param '%s' has the wrong type %u (%s expected)",
                             where, p[i].name, p[i].type, want == NPL_ACCEL_PARAM_INT ? "INT" : want == NPL_ACCEL_PARAM_FLOAT ? "FLOAT" : "INTS");
        }
    }
    return NPL_ACCEL_OK;
}

/* ---- checks ---- */

int vnpu_is_floatlike(const vnpu_tensor *t) {
    switch (t->dtype) {
    case NPL_ACCEL_DT_F32: case NPL_ACCEL_DT_F16: case NPL_ACCEL_DT_BF16: return 1;
    case NPL_ACCEL_DT_INT8: case NPL_ACCEL_DT_UINT8:
        return t->q.enc == NPL_ACCEL_QUANT_PER_TENSOR;
    case NPL_ACCEL_DT_INT16: return t->q.enc == NPL_ACCEL_QUANT_PER_TENSOR || t->q.enc == NPL_ACCEL_QUANT_DYNAMIC;
    default: return 0;
    }
}

typedef struct {
    struct npl_accel_backend *be;
    const struct npl_accel_context *ctx;
    const vnpu_node *n;
    const char *where;
} chk;

static const vnpu_tensor *IN(const chk *c, uint32_t i) { return &c->ctx->t[c->n->in[i]]; }
static const vnpu_tensor *OUT(const chk *c) { return &c->ctx->t[c->n->out[0]]; }

static void dims_str(const vnpu_tensor *t, char *buf, size_t len) {
    size_t o = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < t->rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

static npl_accel_status type_err(const chk *c, const vnpu_tensor *t, const char *want) {
    return vnpu_fail(c->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "vnpu: %s: tensor '%s' is %s%s; expected %s", c->where, t->name,
                     vnpu_dtype_name(t->dtype), t->q.enc ? " (quantized)" : "", want);
}

static npl_accel_status shape_err(const chk *c, const vnpu_tensor *t, const char *want) {
    char d[96];
    dims_str(t, d, sizeof d);
    return vnpu_fail(c->be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "vnpu: %s: tensor '%s' has shape %s; expected %s", c->where,
                     t->name, d, want);
}

static npl_accel_status need_float(const chk *c, const vnpu_tensor *t) {
    return vnpu_is_floatlike(t) ? NPL_ACCEL_OK
                                : type_err(c, t, "f32, f16, bf16, int8/uint8/int16 with per-tensor quant params or "
                                                 "dynamic int16");
}

static int same_shape(const vnpu_tensor *a, const vnpu_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* out must have exactly these dims */
static npl_accel_status want_out(const chk *c, uint32_t rank, const int64_t *dims) {
    const vnpu_tensor *o = OUT(c);
    int ok = o->rank == rank;
    for (uint32_t i = 0; ok && i < rank; i++) ok = o->dims[i] == dims[i];
    if (ok) return need_float(c, o);
    char d[96] = "[";
    size_t off = 1;
    for (uint32_t i = 0; i < rank && off < sizeof d; i++)
        off += (size_t)snprintf(d + off, sizeof d - off, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (off < sizeof d) snprintf(d + off, sizeof d - off, "]");
    return shape_err(c, o, d);
}

static npl_accel_status want_out_like(const chk *c, const vnpu_tensor *t) { return want_out(c, t->rank, t->dims); }

static npl_accel_status check_weight(const chk *c, const vnpu_tensor *w, int trans, int64_t *k, int64_t *n) {
    if (w->rank != 2) return shape_err(c, w, trans ? "rank 2 [N, K]" : "rank 2 [K, N]");
    *k = w->dims[trans ? 1 : 0];
    *n = w->dims[trans ? 0 : 1];
    int naxis = trans ? 0 : 1;
    switch (w->dtype) {
    case NPL_ACCEL_DT_F32: case NPL_ACCEL_DT_F16: case NPL_ACCEL_DT_BF16: return NPL_ACCEL_OK;
    case NPL_ACCEL_DT_Q4_0: case NPL_ACCEL_DT_Q8_0: case NPL_ACCEL_DT_Q4_1: case NPL_ACCEL_DT_Q5_0:
    case NPL_ACCEL_DT_Q5_1: case NPL_ACCEL_DT_Q2_K: case NPL_ACCEL_DT_Q3_K: case NPL_ACCEL_DT_Q4_K:
    case NPL_ACCEL_DT_Q5_K: case NPL_ACCEL_DT_Q6_K:
        if (!trans)
            return vnpu_fail(c->be, NPL_ACCEL_ERR_TYPE_MISMATCH, "vnpu: %s: %s weights '%s' need transpose_in1=1 "
                             "(blocks run along K)", c->where, vnpu_dtype_name(w->dtype), w->name);
        return NPL_ACCEL_OK;
    case NPL_ACCEL_DT_INT8: case NPL_ACCEL_DT_UINT8: case NPL_ACCEL_DT_INT16:
        if (w->q.enc == NPL_ACCEL_QUANT_NONE) return type_err(c, w, "weights with quant params");
        if (w->q.enc != NPL_ACCEL_QUANT_PER_TENSOR && w->q.axis != naxis)
            return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: weights '%s': quant axis %d is not the output "
                             "channel axis %d", c->where, w->name, w->q.axis, naxis);
        if (w->q.enc == NPL_ACCEL_QUANT_PER_BLOCK && w->q.block % 32)
            return vnpu_fail(c->be, NPL_ACCEL_ERR_UNSUPPORTED, "vnpu: %s: weights '%s': quant block %u is not a "
                             "multiple of 32", c->where, w->name, w->q.block);
        if (*k > (w->dtype == NPL_ACCEL_DT_INT16 ? 32768 : 65536))
            return vnpu_fail(c->be, NPL_ACCEL_ERR_UNSUPPORTED, "vnpu: %s: integer weights '%s': K = %lld is over the "
                             "int32 accumulator's limit (65536 for 8-bit, 32768 for 16-bit)", c->where, w->name,
                             (long long)*k);
        return NPL_ACCEL_OK;
    default: return type_err(c, w, "f32, f16, bf16, quantized int8/uint8/int16 or GGML block weights");
    }
}

static npl_accel_status check_matmul(const chk *c, int gated) {
    const vnpu_tensor *x = IN(c, 0);
    npl_accel_status st;
    int trans = (int)c->n->ip[1];
    int64_t k = 0, n = 0, k2 = 0, n2 = 0;
    if (c->n->ip[0])
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: transpose_in0 is not supported", c->where);
    if ((st = need_float(c, x))) return st;
    if ((st = check_weight(c, IN(c, 1), trans, &k, &n))) return st;
    if (gated) {
        const vnpu_tensor *w2 = IN(c, 2);
        if ((st = check_weight(c, w2, trans, &k2, &n2))) return st;
        if (k2 != k || n2 != n || w2->dtype != IN(c, 1)->dtype) return shape_err(c, w2, "the gate weights' shape");
    } else if (c->n->n_in == 3) {
        const vnpu_tensor *b = IN(c, 2);
        if ((st = need_float(c, b))) return st;
        if (b->nelem != n || b->dims[b->rank - 1] != n) return shape_err(c, b, "[N] matching the weights");
    }
    if (x->dims[x->rank - 1] != k) return shape_err(c, x, "a last dimension equal to the weights' K");
    int64_t od[NPL_ACCEL_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    od[x->rank - 1] = n;
    return want_out(c, x->rank, od);
}

static npl_accel_status check_broadcast(const chk *c) {
    const vnpu_tensor *a = IN(c, 0), *b = IN(c, 1), *big = a, *small = b;
    npl_accel_status st;
    if ((st = need_float(c, a)) || (st = need_float(c, b))) return st;
    if (b->nelem > a->nelem) big = b, small = a;
    uint32_t r = small->rank;
    while (r > 1 && small->dims[small->rank - r] == 1) r--;
    int ok = r <= big->rank;
    for (uint32_t i = 0; ok && i < r; i++) ok = small->dims[small->rank - 1 - i] == big->dims[big->rank - 1 - i];
    if (!ok) return shape_err(c, small, "the other input's shape or its trailing dimensions");
    return want_out_like(c, big);
}

static npl_accel_status check_attention(const chk *c) {
    const vnpu_tensor *q = IN(c, 0), *k = IN(c, 1), *v = IN(c, 2), *kc = IN(c, 3), *vc = IN(c, 4), *pos = IN(c, 5);
    npl_accel_status st;
    for (int i = 0; i < 3; i++)
        if ((st = need_float(c, IN(c, (uint32_t)i)))) return st;
    if (q->rank != 3) return shape_err(c, q, "[S, Hq, D]");
    int64_t s = q->dims[0], hd = q->dims[2];
    if (hd > NPL_ATTN_MAX_HD)
        return vnpu_fail(c->be, NPL_ACCEL_ERR_UNSUPPORTED, "vnpu: %s: q '%s': head size D = %lld is larger than %d, "
                         "the most the attention kernels take", c->where, q->name, (long long)hd, NPL_ATTN_MAX_HD);
    if (k->rank != 3 || k->dims[0] != s || k->dims[2] != hd) return shape_err(c, k, "[S, Hkv, D] like q");
    int64_t hkv = k->dims[1];
    if (!same_shape(k, v)) return shape_err(c, v, "k's shape");
    if (q->dims[1] % hkv) return shape_err(c, q, "a head count that is a multiple of k's");
    for (int i = 3; i < 5; i++) {
        const vnpu_tensor *t = IN(c, (uint32_t)i);
        if (t->kind != NPL_ACCEL_APP_READWRITE)
            return vnpu_fail(c->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: cache '%s' must be APP_READWRITE, not %s",
                             c->where, t->name, vnpu_kind_name(t->kind));
        if (t->dtype != NPL_ACCEL_DT_F16) return type_err(c, t, "f16 (KV cache)");
        if (t->rank != 3 || t->dims[1] != hkv || t->dims[2] != hd) return shape_err(c, t, "[C, Hkv, D]");
    }
    if (kc->dims[0] != vc->dims[0]) return shape_err(c, vc, "k_cache's shape");
    if (pos->dtype != NPL_ACCEL_DT_INT32) return type_err(c, pos, "int32 positions");
    if (pos->rank != 1 || pos->dims[0] != s) return shape_err(c, pos, "[S]");
    if (c->n->ip[0] < 0 || c->n->fp[0] < 0 || c->n->fp[1] < 0)
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: window, scale and softcap must be >= 0", c->where);
    if (c->n->ip[1] < 0 || c->n->ip[1] > kc->dims[0])
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: kv_len %lld is outside [0, %lld] (the cache rows)",
                         c->where, (long long)c->n->ip[1], (long long)kc->dims[0]);
    return want_out_like(c, q);
}

static npl_accel_status check_rope(const chk *c) {
    const vnpu_tensor *x = IN(c, 0), *pos = IN(c, 1);
    npl_accel_status st;
    if ((st = need_float(c, x))) return st;
    if (x->rank != 3) return shape_err(c, x, "[S, H, D]");
    if (pos->dtype != NPL_ACCEL_DT_INT32) return type_err(c, pos, "int32 positions");
    if (pos->rank != 1 || pos->dims[0] != x->dims[0]) return shape_err(c, pos, "[S]");
    int64_t nr = c->n->ip[0] < 0 ? x->dims[2] : c->n->ip[0];
    if (nr <= 0 || nr % 2 || nr > x->dims[2] || !(c->n->fp[0] > 0))
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: n_rot must be even and <= D, base > 0", c->where);
    if (c->n->n_in == 3) {
        const vnpu_tensor *ff = IN(c, 2);
        if (ff->dtype != NPL_ACCEL_DT_F32) return type_err(c, ff, "f32 frequency factors");
        if (ff->rank != 1 || ff->dims[0] != nr / 2) return shape_err(c, ff, "[n_rot/2]");
    }
    if (c->n->fp[2] != 0 && !(c->n->fp[1] > 0))
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: yarn (ext_factor != 0) needs freq_scale > 0", c->where);
    return want_out_like(c, x);
}

static npl_accel_status check_gather(const chk *c) {
    const vnpu_tensor *tab = IN(c, 0), *idx = IN(c, 1);
    if (c->n->ip[0] != 0) return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: only axis 0 is supported", c->where);
    int ok = vnpu_is_floatlike(tab) || vnpu_dtype_ggml(tab->dtype) >= 0 ||
             ((tab->dtype == NPL_ACCEL_DT_INT8 || tab->dtype == NPL_ACCEL_DT_UINT8 || tab->dtype == NPL_ACCEL_DT_INT16) &&
              tab->q.enc == NPL_ACCEL_QUANT_PER_AXIS && tab->q.axis == 0);
    if (!ok) return type_err(c, tab, "a float, GGML block or per-row quantized table");
    if (tab->rank != 2) return shape_err(c, tab, "[V, D]");
    if (idx->dtype != NPL_ACCEL_DT_INT32) return type_err(c, idx, "int32 indices");
    if (idx->rank >= NPL_ACCEL_MAX_RANK) return shape_err(c, idx, "rank < 6");
    int64_t od[NPL_ACCEL_MAX_RANK];
    memcpy(od, idx->dims, sizeof od);
    od[idx->rank] = tab->dims[1];
    return want_out(c, idx->rank + 1, od);
}

static npl_accel_status check_view(const chk *c) {
    const vnpu_tensor *x = IN(c, 0), *o = OUT(c);
    const vnpu_node *n = c->n;
    if (x->dtype != o->dtype || x->q.enc != o->q.enc || x->q.block != o->q.block)
        return type_err(c, o, "the input's type (and quant block)");
    if (n->op == VNPU_OP_RESHAPE) {
        if (x->nelem != o->nelem) return shape_err(c, o, "the input's element count");
        return NPL_ACCEL_OK;
    }
    if (vnpu_dtype_ggml(x->dtype) >= 0) return type_err(c, x, "a non-block type");
    for (uint32_t i = 0; i < n->n_in; i++) /* element copies: the per-block scales would not follow */
        if (IN(c, i)->q.enc == NPL_ACCEL_QUANT_DYNAMIC) return type_err(c, IN(c, i), "a type without dynamic scales");
    if (n->op == VNPU_OP_TRANSPOSE) {
        int seen[NPL_ACCEL_MAX_RANK] = {0};
        if (n->n_ip != x->rank)
            return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: perm needs %u entries", c->where, x->rank);
        int64_t od[NPL_ACCEL_MAX_RANK] = {0};
        for (uint32_t i = 0; i < x->rank; i++) {
            int64_t p = n->ip[i];
            if (p < 0 || p >= x->rank || seen[p]++)
                return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: perm is not a permutation", c->where);
            od[i] = x->dims[p];
        }
        if (o->rank != x->rank || memcmp(o->dims, od, x->rank * sizeof od[0])) return shape_err(c, o, "the permuted shape");
        return NPL_ACCEL_OK;
    }
    /* CONCAT */
    int64_t axis = n->ip[0] < 0 ? n->ip[0] + x->rank : n->ip[0], sum = 0;
    if (axis < 0 || axis >= x->rank)
        return vnpu_fail(c->be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: axis out of range", c->where);
    for (uint32_t i = 0; i < n->n_in; i++) {
        const vnpu_tensor *t = IN(c, i);
        if (t->dtype != x->dtype || t->q.enc != x->q.enc) return type_err(c, t, "the first input's type");
        int ok = t->rank == x->rank;
        for (uint32_t d = 0; ok && d < x->rank; d++) ok = d == axis || t->dims[d] == x->dims[d];
        if (!ok) return shape_err(c, t, "the first input's shape except along the axis");
        sum += t->dims[axis];
    }
    int ok = o->rank == x->rank;
    for (uint32_t d = 0; ok && d < x->rank; d++) ok = o->dims[d] == (d == axis ? sum : x->dims[d]);
    return ok ? NPL_ACCEL_OK : shape_err(c, o, "the concatenated shape");
}

npl_accel_status vnpu_check_node(struct npl_accel_backend *be, const struct npl_accel_context *ctx, const vnpu_node *n,
                                 const char *where) {
    chk c = {be, ctx, n, where};
    npl_accel_status st;
    switch (n->op) {
    case VNPU_OP_MATMUL: return check_matmul(&c, 0);
    case VNPU_OP_MATMUL_GATED: return check_matmul(&c, 1);
    case VNPU_OP_RMS_NORM:
        if ((st = need_float(&c, IN(&c, 0)))) return st;
        if (n->n_in == 2) {
            const vnpu_tensor *w = IN(&c, 1);
            if ((st = need_float(&c, w))) return st;
            if (w->nelem != IN(&c, 0)->dims[IN(&c, 0)->rank - 1]) return shape_err(&c, w, "[D] like x's last dim");
        }
        if (!(n->fp[0] >= 0)) return vnpu_fail(be, NPL_ACCEL_ERR_BAD_PARAM, "vnpu: %s: epsilon < 0", where);
        return want_out_like(&c, IN(&c, 0));
    case VNPU_OP_ROPE: return check_rope(&c);
    case VNPU_OP_ATTENTION: return check_attention(&c);
    case VNPU_OP_ADD: case VNPU_OP_MUL: return check_broadcast(&c);
    case VNPU_OP_SWIGLU: case VNPU_OP_GEGLU:
        if ((st = need_float(&c, IN(&c, 0))) || (st = need_float(&c, IN(&c, 1)))) return st;
        if (!same_shape(IN(&c, 0), IN(&c, 1))) return shape_err(&c, IN(&c, 1), "the gate's shape");
        return want_out_like(&c, IN(&c, 0));
    case VNPU_OP_SCALE: case VNPU_OP_SILU: case VNPU_OP_GELU: case VNPU_OP_SOFTMAX: case VNPU_OP_CAST:
        if ((st = need_float(&c, IN(&c, 0)))) return st;
        return want_out_like(&c, IN(&c, 0));
    case VNPU_OP_RESHAPE: case VNPU_OP_TRANSPOSE: case VNPU_OP_CONCAT: return check_view(&c);
    case VNPU_OP_GATHER: return check_gather(&c);
    default: return vnpu_fail(be, NPL_ACCEL_ERR_UNKNOWN_OP, "vnpu: %s: unknown op", where);
    }
}

/* ---- what graph_add_node and validate_node share ---- */

npl_accel_status vnpu_node_begin(struct npl_accel_backend *be, const npl_accel_node_desc *d, const char *where,
                                 vnpu_node *n) {
    int op = vnpu_op_from_name(d->op);
    if (op < 0 || vnpu_op_get((uint32_t)op)->internal)
        return vnpu_fail(be, NPL_ACCEL_ERR_UNKNOWN_OP, "vnpu: %s: unknown op type", where);
    const vnpu_op_info *oi = vnpu_op_get((uint32_t)op);
    if ((int)d->n_inputs < oi->min_in || (int)d->n_inputs > oi->max_in || (int)d->n_outputs != oi->n_out)
        return vnpu_fail(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "vnpu: %s: takes %d..%d inputs and %d outputs, got %u and %u",
                         where, oi->min_in, oi->max_in, oi->n_out, d->n_inputs, d->n_outputs);
    memset(n, 0, sizeof *n);
    n->op = (uint32_t)op;
    n->pack = -1;
    n->n_in = d->n_inputs;
    n->n_out = d->n_outputs;
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_check_output_kind(struct npl_accel_backend *be, const char *where, const char *tname,
                                        uint32_t kind) {
    if (kind == NPL_ACCEL_NATIVE || kind == NPL_ACCEL_APP_READ) return NPL_ACCEL_OK;
    return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: output '%s' is %s; outputs must be NATIVE or APP_READ",
                     where, tname, vnpu_kind_name(kind));
}

npl_accel_status vnpu_node_end(struct npl_accel_backend *be, const struct npl_accel_context *ctx, vnpu_node *n,
                               const npl_accel_node_desc *d, const char *where) {
    if (d->n_params && !d->params)
        return vnpu_fail(be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: %s: params is NULL", where);
    npl_accel_status st = vnpu_parse_params(be, n, d->params, d->n_params, where);
    if (st) return st;
    if (n->op == VNPU_OP_FULLY_CONNECTED) { /* QNN's FullyConnected: weights [N, K] */
        n->op = VNPU_OP_MATMUL;
        n->ip[0] = 0;
        n->ip[1] = 1;
    }
    return vnpu_check_node(be, ctx, n, where);
}
