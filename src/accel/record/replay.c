/* Replay a record file into any implementation of the accelerator ABI. The
 * file is checked as a whole first (every array present with its type and
 * the lengths the counts imply, every index in range), then the context is
 * rebuilt call by call. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/record/record.h"
#include "accel/record/record_impl.h"
#include "format/gguf.h"

typedef struct {
    npl_gguf *g;
    const char *path;
    uint64_t n[V_COUNT];
    int64_t kv[V_COUNT];
    const uint8_t *num[V_COUNT];
    uint32_t n_ctx, ng, nt, nn, np;
    /* slices of the concatenated arrays */
    uint64_t *t_scale, *t_off, *n_in, *n_out, *n_par, *p_arr;
    char *err;
    size_t errlen;
} rfile;

static int rfail(rfile *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rfail(rfile *f, const char *fmt, ...) {
    va_list ap;
    int o = snprintf(f->err, f->errlen, "replay: %s: ", f->path);
    va_start(ap, fmt);
    if (o >= 0 && (size_t)o < f->errlen) vsnprintf(f->err + o, f->errlen - (size_t)o, fmt, ap);
    va_end(ap);
    return -1;
}

static uint32_t U32(const rfile *f, int c, uint64_t i) { uint32_t v; memcpy(&v, f->num[c] + i * 4, 4); return v; }
static int32_t I32(const rfile *f, int c, uint64_t i) { int32_t v; memcpy(&v, f->num[c] + i * 4, 4); return v; }
static float F32(const rfile *f, int c, uint64_t i) { float v; memcpy(&v, f->num[c] + i * 4, 4); return v; }
static uint64_t U64(const rfile *f, int c, uint64_t i) { uint64_t v; memcpy(&v, f->num[c] + i * 8, 8); return v; }
static int64_t I64(const rfile *f, int c, uint64_t i) { int64_t v; memcpy(&v, f->num[c] + i * 8, 8); return v; }
static double F64(const rfile *f, int c, uint64_t i) { double v; memcpy(&v, f->num[c] + i * 8, 8); return v; }
static char *STR(const rfile *f, int c, uint64_t i) {
    npl_gguf_str s = npl_gguf_arr_str(f->g, f->kv[c], i);
    char *r = s.ptr && s.len < (1u << 20) ? malloc((size_t)s.len + 1) : NULL;
    if (r) {
        memcpy(r, s.ptr, (size_t)s.len);
        r[s.len] = 0;
    }
    return r;
}

/* prefix sums of a count column: out[i] = sum of counts before i; returns the total */
static uint64_t prefix(const rfile *f, int c, uint64_t n, uint64_t *out, int only_col, uint32_t only_val) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++) {
        out[i] = s;
        if (only_col < 0 || U32(f, only_col, i) == only_val) s += c == V_TDIMS ? 6 : U32(f, c, i);
    }
    return s;
}

static int check_file(rfile *f) {
    uint32_t ver = 0;
    if (npl_gguf_get_u32(f->g, "accel.record.version", &ver) || ver != 1) return rfail(f, "not a version-1 accel record");
    if (npl_gguf_get_u32(f->g, "accel.n_contexts", &f->n_ctx)) return rfail(f, "accel.n_contexts missing");
    for (int c = 0; c < V_COUNT; c++) {
        f->kv[c] = npl_gguf_find_key(f->g, rec_col_key(c));
        if (f->kv[c] < 0 || npl_gguf_kv_type(f->g, f->kv[c]) != NPL_GGUF_ARRAY ||
            (int)npl_gguf_arr_type(f->g, f->kv[c]) != rec_col_type(c))
            return rfail(f, "%s: missing or of the wrong type", rec_col_key(c));
        f->n[c] = npl_gguf_arr_n(f->g, f->kv[c]);
        f->num[c] = rec_col_type(c) == NPL_GGUF_STRING ? NULL : npl_gguf_arr_data(f->g, f->kv[c]);
        if (f->n[c] > UINT32_MAX) return rfail(f, "%s: too long", rec_col_key(c));
    }
    f->ng = (uint32_t)f->n[V_GNAME];
    f->nt = (uint32_t)f->n[V_TNAME];
    f->nn = (uint32_t)f->n[V_NGRAPH];
    f->np = (uint32_t)f->n[V_PNAME];
    static const int same[][2] = {{V_GCTX, V_GNAME}, {V_GFIN, V_GNAME}, {V_TKIND, V_TNAME}, {V_TDT, V_TNAME},
                                  {V_TRANK, V_TNAME}, {V_TGRAPH, V_TNAME}, {V_TCTX, V_TNAME}, {V_QENC, V_TNAME},
                                  {V_QAXIS, V_TNAME}, {V_QBLOCK, V_TNAME}, {V_QN, V_TNAME}, {V_QHASOFF, V_TNAME},
                                  {V_TSIZE, V_TNAME}, {V_NNAME, V_NGRAPH}, {V_NOP, V_NGRAPH}, {V_NIN, V_NGRAPH},
                                  {V_NOUT, V_NGRAPH}, {V_NNP, V_NGRAPH}, {V_PTYPE, V_PNAME}, {V_PCOUNT, V_PNAME},
                                  {V_PI, V_PNAME}, {V_PF, V_PNAME}, {V_PSTR, V_PNAME}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (f->n[same[i][0]] != f->n[same[i][1]]) return rfail(f, "%s: wrong length", rec_col_key(same[i][0]));
    if (f->n[V_TDIMS] != (uint64_t)f->nt * 6) return rfail(f, "accel.tensor.dims: wrong length");
    f->t_scale = calloc(f->nt + 1, 8), f->t_off = calloc(f->nt + 1, 8);
    f->n_in = calloc(f->nn + 1, 8), f->n_out = calloc(f->nn + 1, 8), f->n_par = calloc(f->nn + 1, 8);
    f->p_arr = calloc(f->np + 1, 8);
    if (!f->t_scale || !f->t_off || !f->n_in || !f->n_out || !f->n_par || !f->p_arr) return rfail(f, "out of memory");
    if (prefix(f, V_QN, f->nt, f->t_scale, -1, 0) != f->n[V_SCALES] ||
        prefix(f, V_QN, f->nt, f->t_off, V_QHASOFF, 1) != f->n[V_OFFS])
        return rfail(f, "quant arrays do not match the tensors' counts");
    if (prefix(f, V_NIN, f->nn, f->n_in, -1, 0) != f->n[V_INS] || prefix(f, V_NOUT, f->nn, f->n_out, -1, 0) != f->n[V_OUTS] ||
        prefix(f, V_NNP, f->nn, f->n_par, -1, 0) != f->np)
        return rfail(f, "node arrays do not match the nodes' counts");
    uint64_t ints = 0, floats = 0;
    for (uint32_t i = 0; i < f->np; i++) {
        uint32_t t = U32(f, V_PTYPE, i), cnt = U32(f, V_PCOUNT, i);
        f->p_arr[i] = t == NPL_ACCEL_PARAM_INTS ? ints : floats;
        if (t == NPL_ACCEL_PARAM_INTS) ints += cnt;
        else if (t == NPL_ACCEL_PARAM_FLOATS) floats += cnt;
        else if (t > NPL_ACCEL_PARAM_STRING || cnt) return rfail(f, "param %u: bad type or count", i);
    }
    if (ints != f->n[V_PINTS] || floats != f->n[V_PFLOATS]) return rfail(f, "param arrays do not match their counts");
    for (uint32_t i = 0; i < f->ng; i++)
        if (U32(f, V_GCTX, i) >= f->n_ctx) return rfail(f, "graph %u: context out of range", i);
    for (uint32_t i = 0; i < f->nt; i++) {
        int32_t g = I32(f, V_TGRAPH, i);
        uint32_t c = U32(f, V_TCTX, i);
        if (c >= f->n_ctx || g < -1 || g >= (int32_t)f->ng || (g >= 0 && U32(f, V_GCTX, (uint32_t)g) != c) ||
            U32(f, V_TRANK, i) > NPL_ACCEL_MAX_RANK)
            return rfail(f, "tensor %u: context, graph or rank out of range", i);
    }
    for (uint32_t i = 0; i < f->nn; i++) {
        uint32_t g = U32(f, V_NGRAPH, i);
        if (g >= f->ng) return rfail(f, "node %u: graph out of range", i);
        for (uint64_t k = 0; k < U32(f, V_NIN, i) + (uint64_t)U32(f, V_NOUT, i); k++) {
            uint32_t t = k < U32(f, V_NIN, i) ? U32(f, V_INS, f->n_in[i] + k) : U32(f, V_OUTS, f->n_out[i] + k - U32(f, V_NIN, i));
            if (t >= f->nt || U32(f, V_TCTX, t) != U32(f, V_GCTX, g)) return rfail(f, "node %u: tensor out of range", i);
        }
    }
    return 0;
}

int64_t npl_accel_record_n_contexts(const char *path, char *err, size_t errlen) {
    rfile f;
    memset(&f, 0, sizeof f);
    f.path = path, f.err = err, f.errlen = errlen;
    if (!(f.g = npl_gguf_open(path, NULL, err, errlen))) return -1;
    int64_t n = check_file(&f) ? -1 : (int64_t)f.n_ctx;
    npl_gguf_close(f.g);
    free(f.t_scale), free(f.t_off), free(f.n_in), free(f.n_out), free(f.n_par), free(f.p_arr);
    return n;
}

/* ---- rebuilding ---- */

typedef struct {
    rfile *f;
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_context *ctx;
    npl_accel_graph **graphs;   /* per record graph */
    npl_accel_tensor_id *ids;   /* per record tensor */
    uint32_t ci;
} rebuild;

static npl_accel_status target_fail(rebuild *r, int st, const char *what) {
    snprintf(r->f->err, r->f->errlen, "replay: %s: %s", what, r->api->last_error(r->be));
    return st;
}

static npl_accel_status make_tensor(rebuild *r, uint32_t i) {
    rfile *f = r->f;
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    char *name = STR(f, V_TNAME, i);
    const uint32_t qn = U32(f, V_QN, i);
    float *sc = malloc((size_t)qn * 4 + 4);
    int32_t *of = U32(f, V_QHASOFF, i) ? malloc((size_t)qn * 4 + 4) : NULL;
    npl_accel_status st = NPL_ACCEL_OK;
    if (!name || !sc || (U32(f, V_QHASOFF, i) && !of)) {
        st = NPL_ACCEL_ERR_NO_MEMORY;
        rfail(f, "out of memory");
    }
    for (uint32_t k = 0; !st && k < qn; k++) {
        sc[k] = F32(f, V_SCALES, f->t_scale[i] + k);
        if (of) of[k] = I32(f, V_OFFS, f->t_off[i] + k);
    }
    if (!st) {
        d.name = name;
        d.kind = U32(f, V_TKIND, i);
        d.dtype = U32(f, V_TDT, i);
        d.rank = U32(f, V_TRANK, i);
        for (int k = 0; k < NPL_ACCEL_MAX_RANK; k++) d.dims[k] = U32(f, V_TDIMS, (uint64_t)i * 6 + (uint64_t)k);
        d.quant = (npl_accel_quant){U32(f, V_QENC, i), I32(f, V_QAXIS, i), U32(f, V_QBLOCK, i), qn, qn ? sc : NULL, of};
        d.data_size = U64(f, V_TSIZE, i);
        if (d.data_size) {
            char tname[48];
            snprintf(tname, sizeof tname, "accel.data.%u", i);
            const npl_gguf_tensor *gt = npl_gguf_find_tensor(f->g, tname);
            if (!gt || gt->size != d.data_size) {
                st = NPL_ACCEL_ERR_BINARY_CORRUPT;
                rfail(f, "tensor '%s': data %s missing or of the wrong size", name, tname);
            } else {
                d.data = gt->data;
            }
        }
    }
    if (!st) {
        int32_t g = I32(f, V_TGRAPH, i);
        st = g < 0 ? r->api->context_tensor_create(r->ctx, &d, &r->ids[i]) : r->api->tensor_create(r->graphs[g], &d, &r->ids[i]);
        if (st) target_fail(r, st, name);
    }
    free(name), free(sc), free(of);
    return st;
}

static npl_accel_status make_node(rebuild *r, uint32_t i) {
    rfile *f = r->f;
    const uint32_t nin = U32(f, V_NIN, i), nout = U32(f, V_NOUT, i), np = U32(f, V_NNP, i);
    npl_accel_tensor_id *in = malloc((nin + 1) * sizeof *in), *out = malloc((nout + 1) * sizeof *out);
    npl_accel_param *p = calloc(np + 1, sizeof *p);
    char *name = STR(f, V_NNAME, i), *op = STR(f, V_NOP, i);
    npl_accel_status st = (!in || !out || !p || !name || !op) ? NPL_ACCEL_ERR_NO_MEMORY : NPL_ACCEL_OK;
    for (uint32_t k = 0; !st && k < nin; k++) in[k] = r->ids[U32(f, V_INS, f->n_in[i] + k)];
    for (uint32_t k = 0; !st && k < nout; k++) out[k] = r->ids[U32(f, V_OUTS, f->n_out[i] + k)];
    for (uint32_t k = 0; !st && k < np; k++) {
        const uint64_t j = f->n_par[i] + k;
        npl_accel_param *q = &p[k];
        q->type = U32(f, V_PTYPE, j);
        q->count = U32(f, V_PCOUNT, j);
        q->i = I64(f, V_PI, j);
        q->f = F64(f, V_PF, j);
        q->name = STR(f, V_PNAME, j);
        q->str = STR(f, V_PSTR, j);
        int64_t *iv = calloc(q->count + 1u, 8);
        float *fv = calloc(q->count + 1u, 4);
        for (uint32_t e = 0; iv && fv && e < q->count; e++) {
            if (q->type == NPL_ACCEL_PARAM_INTS) iv[e] = I64(f, V_PINTS, f->p_arr[j] + e);
            else fv[e] = F32(f, V_PFLOATS, f->p_arr[j] + e);
        }
        q->ints = iv;
        q->floats = fv;
        if (!q->name || !q->str || !iv || !fv) st = NPL_ACCEL_ERR_NO_MEMORY;
    }
    if (st) rfail(f, "out of memory");
    if (!st) {
        npl_accel_node_desc d = {*name ? name : NULL, op, p, np, in, nin, out, nout};
        if ((st = r->api->graph_add_node(r->graphs[U32(f, V_NGRAPH, i)], &d))) target_fail(r, st, op);
    }
    for (uint32_t k = 0; k < np; k++) {
        free((void *)p[k].name), free((void *)p[k].str);
        free((void *)p[k].ints), free((void *)p[k].floats);
    }
    free(p), free(in), free(out), free(name), free(op);
    return st;
}

static npl_accel_status replay_context(rebuild *r) {
    rfile *f = r->f;
    npl_accel_status st;
    for (uint32_t i = 0; i < f->ng; i++) {
        if (U32(f, V_GCTX, i) != r->ci) continue;
        char *name = STR(f, V_GNAME, i);
        if (!name) return rfail(f, "out of memory"), NPL_ACCEL_ERR_NO_MEMORY;
        st = r->api->graph_create(r->ctx, name, &r->graphs[i]);
        if (st) target_fail(r, st, name);
        free(name);
        if (st) return st;
    }
    for (uint32_t i = 0; i < f->nt; i++)
        if (U32(f, V_TCTX, i) == r->ci && (st = make_tensor(r, i))) return st;
    for (uint32_t i = 0; i < f->nn; i++)
        if (U32(f, V_GCTX, U32(f, V_NGRAPH, i)) == r->ci && (st = make_node(r, i))) return st;
    /* finalize in the recorded order */
    for (int32_t order = 0;; order++) {
        int32_t found = -1;
        for (uint32_t i = 0; i < f->ng && found < 0; i++)
            if (I32(f, V_GFIN, i) == order) found = (int32_t)i;
        if (found < 0) break;
        if (U32(f, V_GCTX, (uint32_t)found) != r->ci) continue;
        if ((st = r->api->graph_finalize(r->graphs[found]))) return target_fail(r, st, "finalize");
    }
    return NPL_ACCEL_OK;
}

npl_accel_status npl_accel_replay(const char *path, const npl_accel_api *target, npl_accel_backend *be,
                                  npl_accel_device *dev, uint32_t context_index, npl_accel_context **out, char *err,
                                  size_t errlen) {
    char dummy[8];
    if (!err || !errlen) err = dummy, errlen = sizeof dummy;
    if (out) *out = NULL;
    if (!path || !target || !be || !out) {
        snprintf(err, errlen, "replay: path, target, backend and out must be given");
        return NPL_ACCEL_ERR_INVALID_ARG;
    }
    rfile f;
    memset(&f, 0, sizeof f);
    f.path = path, f.err = err, f.errlen = errlen;
    if (!(f.g = npl_gguf_open(path, NULL, err, errlen))) return NPL_ACCEL_ERR_IO;
    npl_accel_status st = check_file(&f) ? NPL_ACCEL_ERR_BINARY_CORRUPT : NPL_ACCEL_OK;
    if (!st && context_index >= f.n_ctx) {
        rfail(&f, "context %u requested, the record has %u", context_index, f.n_ctx);
        st = NPL_ACCEL_ERR_NOT_FOUND;
    }
    rebuild r = {&f, target, be, NULL, calloc(f.ng + 1, sizeof(npl_accel_graph *)),
                 calloc(f.nt + 1, sizeof(npl_accel_tensor_id)), context_index};
    if (!st && (!r.graphs || !r.ids)) st = NPL_ACCEL_ERR_NO_MEMORY, rfail(&f, "out of memory");
    if (!st && (st = target->context_create(be, dev, NULL, 0, &r.ctx))) target_fail(&r, st, "context_create");
    if (!st) st = replay_context(&r);
    if (st && r.ctx) target->context_free(r.ctx);
    if (!st) *out = r.ctx;
    free(r.graphs), free(r.ids);
    npl_gguf_close(f.g);
    free(f.t_scale), free(f.t_off), free(f.n_in), free(f.n_out), free(f.n_par), free(f.p_arr);
    return st;
}
