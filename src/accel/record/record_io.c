/* record: freeing the log and writing it as GGUF. Every table is a set of
 * parallel metadata arrays, one element per record in creation order;
 * variable-length parts (dims, quant scales, node tensor lists, param
 * arrays) are concatenated and sliced again by their counts on reading. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/record/record_impl.h"
#include "kernels/dtype.h"
#include "format/gguf.h"

void rec_tensor_free(rec_tensor *t) {
    free(t->name);
    free(t->scales);
    free(t->offsets);
    free(t->data);
}

void rec_node_free(rec_node *n) {
    for (uint32_t i = 0; n->p && i < n->np; i++) {
        free(n->p[i].name);
        free(n->p[i].ints);
        free(n->p[i].floats);
        free(n->p[i].str);
    }
    free(n->p);
    free(n->name);
    free(n->op);
    free(n->in);
    free(n->out);
}

void rec_log_free(rec_log *L) {
    for (uint32_t i = 0; i < L->n_t; i++) rec_tensor_free(&L->t[i]);
    for (uint32_t i = 0; i < L->n_n; i++) rec_node_free(&L->n[i]);
    for (uint32_t i = 0; i < L->n_g; i++) free(L->g[i].name);
    free(L->t);
    free(L->n);
    free(L->g);
    memset(L, 0, sizeof *L);
}

typedef struct {
    void *p;
    size_t n, cap, elem;
} vec;

static int push(vec *v, const void *x) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        void *q = realloc(v->p, nc * v->elem);
        if (!q) return -1;
        v->p = q;
        v->cap = nc;
    }
    memcpy((char *)v->p + v->n * v->elem, x, v->elem);
    v->n++;
    return 0;
}

static const struct {
    const char *key;
    int type; /* npl_gguf_vtype of the elements */
} cols[V_COUNT] = {
    [V_GNAME] = {"accel.graph.name", NPL_GGUF_STRING},       [V_GCTX] = {"accel.graph.context", NPL_GGUF_UINT32},
    [V_GFIN] = {"accel.graph.finalize_order", NPL_GGUF_INT32}, [V_TNAME] = {"accel.tensor.name", NPL_GGUF_STRING},
    [V_TKIND] = {"accel.tensor.kind", NPL_GGUF_UINT32},      [V_TDT] = {"accel.tensor.dtype", NPL_GGUF_UINT32},
    [V_TRANK] = {"accel.tensor.rank", NPL_GGUF_UINT32},      [V_TDIMS] = {"accel.tensor.dims", NPL_GGUF_UINT32},
    [V_TGRAPH] = {"accel.tensor.graph", NPL_GGUF_INT32},     [V_TCTX] = {"accel.tensor.context", NPL_GGUF_UINT32},
    [V_QENC] = {"accel.tensor.quant_encoding", NPL_GGUF_UINT32}, [V_QAXIS] = {"accel.tensor.quant_axis", NPL_GGUF_INT32},
    [V_QBLOCK] = {"accel.tensor.quant_block", NPL_GGUF_UINT32}, [V_QN] = {"accel.tensor.quant_n", NPL_GGUF_UINT32},
    [V_QHASOFF] = {"accel.tensor.quant_has_offsets", NPL_GGUF_UINT32},
    [V_TSIZE] = {"accel.tensor.data_size", NPL_GGUF_UINT64}, [V_SCALES] = {"accel.quant.scales", NPL_GGUF_FLOAT32},
    [V_OFFS] = {"accel.quant.offsets", NPL_GGUF_INT32},      [V_NGRAPH] = {"accel.node.graph", NPL_GGUF_UINT32},
    [V_NNAME] = {"accel.node.name", NPL_GGUF_STRING},        [V_NOP] = {"accel.node.op", NPL_GGUF_STRING},
    [V_NIN] = {"accel.node.n_inputs", NPL_GGUF_UINT32},      [V_NOUT] = {"accel.node.n_outputs", NPL_GGUF_UINT32},
    [V_NNP] = {"accel.node.n_params", NPL_GGUF_UINT32},      [V_INS] = {"accel.node.inputs", NPL_GGUF_UINT32},
    [V_OUTS] = {"accel.node.outputs", NPL_GGUF_UINT32},      [V_PNAME] = {"accel.param.name", NPL_GGUF_STRING},
    [V_PTYPE] = {"accel.param.type", NPL_GGUF_UINT32},       [V_PCOUNT] = {"accel.param.count", NPL_GGUF_UINT32},
    [V_PI] = {"accel.param.i", NPL_GGUF_INT64},              [V_PF] = {"accel.param.f", NPL_GGUF_FLOAT64},
    [V_PSTR] = {"accel.param.str", NPL_GGUF_STRING},         [V_PINTS] = {"accel.param.ints", NPL_GGUF_INT64},
    [V_PFLOATS] = {"accel.param.floats", NPL_GGUF_FLOAT32},
};

const char *rec_col_key(int c) { return cols[c].key; }
int rec_col_type(int c) { return cols[c].type; }

static size_t elem_size(int t) {
    switch (t) {
    case NPL_GGUF_STRING: return sizeof(const char *);
    case NPL_GGUF_UINT64: case NPL_GGUF_INT64: case NPL_GGUF_FLOAT64: return 8;
    default: return 4;
    }
}

int rec_write(const rec_log *L, const char *path, char *err, size_t errlen) {
    vec v[V_COUNT];
    for (int i = 0; i < V_COUNT; i++) v[i] = (vec){NULL, 0, 0, elem_size(cols[i].type)};
    int oom = 0;
#define P(col, val) do { __typeof__(val) _v = (val); oom |= push(&v[col], &_v); } while (0)
    for (uint32_t i = 0; i < L->n_g; i++) {
        P(V_GNAME, (const char *)L->g[i].name);
        P(V_GCTX, L->g[i].ctx);
        P(V_GFIN, L->g[i].fin);
    }
    for (uint32_t i = 0; i < L->n_t; i++) {
        const rec_tensor *t = &L->t[i];
        P(V_TNAME, (const char *)t->name);
        P(V_TKIND, t->kind);
        P(V_TDT, t->dtype);
        P(V_TRANK, t->rank);
        for (int d = 0; d < NPL_ACCEL_MAX_RANK; d++) P(V_TDIMS, d < (int)t->rank ? t->dims[d] : 0u);
        P(V_TGRAPH, t->graph);
        P(V_TCTX, t->ctx);
        P(V_QENC, t->qenc);
        P(V_QAXIS, t->qaxis);
        P(V_QBLOCK, t->qblock);
        P(V_QN, t->qn);
        P(V_QHASOFF, (uint32_t)(t->offsets != NULL));
        P(V_TSIZE, t->size);
        for (uint32_t k = 0; k < t->qn; k++) P(V_SCALES, t->scales[k]);
        for (uint32_t k = 0; t->offsets && k < t->qn; k++) P(V_OFFS, t->offsets[k]);
    }
    for (uint32_t i = 0; i < L->n_n; i++) {
        const rec_node *n = &L->n[i];
        P(V_NGRAPH, n->graph);
        P(V_NNAME, (const char *)n->name);
        P(V_NOP, (const char *)n->op);
        P(V_NIN, n->n_in);
        P(V_NOUT, n->n_out);
        P(V_NNP, n->np);
        for (uint32_t k = 0; k < n->n_in; k++) P(V_INS, n->in[k]);
        for (uint32_t k = 0; k < n->n_out; k++) P(V_OUTS, n->out[k]);
        for (uint32_t k = 0; k < n->np; k++) {
            const rec_param *p = &n->p[k];
            P(V_PNAME, (const char *)p->name);
            P(V_PTYPE, p->type);
            P(V_PCOUNT, p->count);
            P(V_PI, p->i);
            P(V_PF, p->f);
            P(V_PSTR, (const char *)p->str);
            for (uint32_t e = 0; p->type == NPL_ACCEL_PARAM_INTS && e < p->count; e++) P(V_PINTS, p->ints[e]);
            for (uint32_t e = 0; p->type == NPL_ACCEL_PARAM_FLOATS && e < p->count; e++) P(V_PFLOATS, p->floats[e]);
        }
    }
#undef P
    npl_gguf_writer *w = npl_gguf_writer_new();
    int st = oom || !w;
    if (st) snprintf(err, errlen, "%s: out of memory", path);
    if (!st) st = npl_gguf_writer_set_u32(w, "accel.record.version", 1) ||
                  npl_gguf_writer_set_u32(w, "accel.abi_version", NPL_ACCEL_ABI_VERSION) ||
                  npl_gguf_writer_set_u32(w, "accel.n_contexts", L->n_contexts);
    for (int i = 0; !st && i < V_COUNT; i++)
        st = cols[i].type == NPL_GGUF_STRING
                 ? npl_gguf_writer_set_arr_str(w, cols[i].key, (const char *const *)v[i].p, v[i].n)
                 : npl_gguf_writer_set_arr(w, cols[i].key, (npl_gguf_vtype)cols[i].type, v[i].p, v[i].n);
    char name[48];
    for (uint32_t i = 0; !st && i < L->n_t; i++) {
        if (!L->t[i].size) continue;
        int64_t ne[1] = {(int64_t)L->t[i].size};
        snprintf(name, sizeof name, "accel.data.%u", i);
        st = npl_gguf_writer_add_tensor(w, name, NPL_TYPE_I8, 1, ne, L->t[i].data, (size_t)L->t[i].size);
    }
    if (st && w && !oom) snprintf(err, errlen, "%s: could not prepare the record", path);
    if (!st) st = npl_gguf_writer_write(w, path, err, errlen);
    npl_gguf_writer_free(w);
    for (int i = 0; i < V_COUNT; i++) free(v[i].p);
    return st ? -1 : 0;
}
