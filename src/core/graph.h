/* Graph IR and builder API.
 *
 * A graph is an append-only list of nodes in topological order (a node only
 * refers to earlier nodes). Builder calls look like `y = npl_matmul(g, w, x)`
 * and return node ids; failures are sticky: after the first error every
 * builder call returns -1 and npl_graph_error() tells what went wrong, so
 * model builders read straight through without checking each call.
 *
 * Shapes are ggml-style: ne[0] is the innermost (contiguous) dimension.
 * A dimension may be symbolic (NPL_DIM_SEQ) and is resolved when a session
 * is resized with concrete input shapes. */
#ifndef NPL_GRAPH_H
#define NPL_GRAPH_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "core/ops.h"

#define NPL_MAX_DIMS 4
#define NPL_MAX_SRC 16
#define NPL_MAX_IPARAMS 8
#define NPL_MAX_FPARAMS 4
#define NPL_DIM_SEQ (-1) /* symbolic dimension of an INPUT */

typedef struct {
    int n_dims;
    int64_t ne[NPL_MAX_DIMS]; /* unused dims are 1 */
} npl_shape;

/* Attribute values of the generic map (what a plugin op carries). */
typedef enum { NPL_ATTR_STR, NPL_ATTR_INTS, NPL_ATTR_STRS, NPL_ATTR_FLOATS } npl_attr_kind;

typedef struct npl_attr {
    char *key;
    npl_attr_kind kind;
    int64_t n;        /* elements (strings: 1 for STR) */
    char **strs;      /* STR (strs[0]) and STRS */
    int64_t *ints;
    float *floats;
    struct npl_attr *next;
} npl_attr;

typedef struct {
    npl_op op;
    npl_type type;              /* output type */
    npl_shape shape;            /* declared shape (INPUT/WEIGHT/STATE) */
    int n_src;
    int src[NPL_MAX_SRC];
    int32_t ip[NPL_MAX_IPARAMS];/* typed op parameters, meaning per op */
    float fp[NPL_MAX_FPARAMS];
    const void *data;           /* WEIGHT: constant bytes */
    char *name;                 /* optional; INPUT/STATE/outputs are looked up by name */
    npl_attr *attrs;
    void *value;                /* lazily computed value (npl_read), owned */
    npl_shape value_shape;
} npl_node;

typedef struct npl_graph npl_graph;

npl_graph *npl_graph_new(void);
void npl_graph_free(npl_graph *g);
int npl_graph_n_nodes(const npl_graph *g);
const npl_node *npl_graph_node(const npl_graph *g, int id);
npl_node *npl_graph_node_mut(npl_graph *g, int id);
/* First error of the sticky builder state, or NULL. */
const char *npl_graph_error(const npl_graph *g);
void npl_graph_set_error(npl_graph *g, const char *fmt, ...);
/* The sticky error for a failed allocation (its code is NPL_ERR_MEMORY). */
void npl_graph_set_oom(npl_graph *g);
int npl_graph_find(const npl_graph *g, const char *name); /* -1 if absent */
int npl_graph_set_name(npl_graph *g, int id, const char *name);

/* Append a node of any non-leaf op with the arity and source checks of the
 * builder (loaders fill parameters and attributes afterwards). */
int npl_graph_push(npl_graph *g, npl_op op, npl_type type, int n_src, const int *src);

/* ---- leaves ---- */
int npl_input(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne);
int npl_weight(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne,
               const void *data);
int npl_state(npl_graph *g, const char *name, npl_type type, int n_dims, const int64_t *ne);

/* ---- ops ---- */
int npl_get_rows(npl_graph *g, int table, int ids);
int npl_rms_norm(npl_graph *g, int x, int w /* -1: none */, float eps);
int npl_matmul(npl_graph *g, int w, int x);
int npl_add(npl_graph *g, int a, int b);
int npl_mul(npl_graph *g, int a, int b);
int npl_scale(npl_graph *g, int x, float s);
/* ip: n_rot, neox; fp: base, freq_scale */
int npl_apply_rope(npl_graph *g, int x, int pos, int n_rot, int neox, float base, float freq_scale);
/* RoPE with llama.cpp's extensions (ggml_rope_ext). freq_factors: -1 or an f32
 * [n_rot/2] node dividing pair i's angle (Llama 3's rope_freqs.weight).
 * yarn: NULL, or ext_factor (yarn's interpolation/extrapolation mix, 0 =
 * none), attn_factor (cos/sin magnitude) and the correction dims; stored as
 * ip[2] = 1, ip[3..4] = corr dims, fp[2] = ext_factor, fp[3] = attn_factor
 * (ip[2] = 0: plain RoPE, as graphs written before these existed). */
typedef struct {
    float ext_factor, attn_factor;
    int corr_lo, corr_hi;
} npl_rope_yarn;
int npl_apply_rope_ext(npl_graph *g, int x, int pos, int freq_factors, int n_rot, int neox, float base,
                       float freq_scale, const npl_rope_yarn *yarn);
/* q [hd, n_head, seq], k/v [hd, n_kv, seq], caches [hd*n_kv, n_ctx] f16; ip: window; fp: scale, softcap */
int npl_attention(npl_graph *g, int q, int k, int v, int kcache, int vcache, int pos,
                  float scale, int window, float softcap);
int npl_swiglu(npl_graph *g, int gate, int up);
int npl_geglu(npl_graph *g, int gate, int up);
int npl_softcap(npl_graph *g, int x, float cap);
/* softmax over ne0 (each row) of scale * x; fp: scale */
int npl_softmax(npl_graph *g, int x, float scale);
/* Elements [offset, offset + len) of every row (dim 0) of f32 x, as a new
 * f32 tensor [len, ...]; ip: offset, len. */
int npl_slice(npl_graph *g, int x, int64_t offset, int64_t len);
/* New shape of the same elements; at most one dim may be -1 (inferred). */
int npl_reshape(npl_graph *g, int x, int n_dims, const int64_t *ne);
/* Opaque plugin op of `type` (attribute "type"); outputs described by attributes. */
int npl_plugin(npl_graph *g, const char *type, int n_src, const int *src, npl_type out_type);

/* ---- attributes ---- */
int npl_attr_set_str(npl_graph *g, int node, const char *key, const char *v);
int npl_attr_set_ints(npl_graph *g, int node, const char *key, const int64_t *v, int64_t n);
int npl_attr_set_floats(npl_graph *g, int node, const char *key, const float *v, int64_t n);
int npl_attr_set_strs(npl_graph *g, int node, const char *key, const char *const *v, int64_t n);
const npl_attr *npl_attr_get(const npl_graph *g, int node, const char *key);

/* ---- lazy evaluation (MNN's readMap) ----
 * Give an INPUT a value (data is referenced, not copied; shape concrete).
 * Any cached values are dropped because they may depend on it. */
int npl_graph_bind(npl_graph *g, int input, const void *data, const npl_shape *shape);
void npl_graph_drop_values(npl_graph *g);

/* Element count of a shape; 0 on overflow. */
int64_t npl_shape_nelements(const npl_shape *s);

#endif
