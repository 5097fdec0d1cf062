/* CPU executions of every op: the cpu column of the op table (core/ops.h),
 * cpu_<x> below. Each splits its rows over the thread pool; the heavy
 * lifting is in src/kernels. */
#include "cpu/cpu_backend.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "cpu/rope_cache.h"
#include "kernels/x86/amx/attn_amx.h"

static int64_t n_rows(const npl_tensor *t) { return t->shape.ne[1] * t->shape.ne[2] * t->shape.ne[3]; }
static const npl_cpu_ctx *cpu(const npl_exec_ctx *c) { return c->backend_ctx; }

/* Run body(c, row) for every row, rows split evenly across the pool. */
typedef void (*row_fn)(const npl_exec_ctx *c, int64_t row);
typedef struct {
    const npl_exec_ctx *c;
    row_fn fn;
    int64_t rows;
} rows_job;
static void rows_worker(void *arg, int ith, int nth) {
    rows_job *j = arg;
    int64_t per = (j->rows + nth - 1) / nth, r0 = per * ith, r1 = r0 + per < j->rows ? r0 + per : j->rows;
    for (int64_t r = r0; r < r1; r++) j->fn(j->c, r);
}
static void for_rows(const npl_exec_ctx *c, int64_t rows, row_fn fn) {
    rows_job j = {c, fn, rows};
    /* not worth waking workers: a dispatch costs more than a few thousand elements */
    if (rows < 4 || npl_shape_nelements(&c->dst.shape) <= 4096) rows_worker(&j, 0, 1);
    else npl_pool_run(c->pool, rows_worker, &j);
}

/* ---- get_rows ---- */
static void get_rows_row(const npl_exec_ctx *c, int64_t r) {
    const npl_tensor *tab = &c->src[0];
    int32_t id = ((const int32_t *)c->src[1].data)[r];
    size_t rb;
    npl_row_size(tab->type, tab->shape.ne[0], &rb);
    npl_type_get(tab->type)->to_float((const char *)tab->data + (size_t)id * rb,
                                      (float *)c->dst.data + r * tab->shape.ne[0], tab->shape.ne[0]);
}
static int exec_get_rows(npl_exec_ctx *c) {
    const npl_type_traits *t = npl_type_get(c->src[0].type);
    if (!t || !t->to_float || c->src[1].type != NPL_TYPE_I32) {
        snprintf(c->err, c->errlen, "get_rows: unsupported table type %s", npl_type_name(c->src[0].type));
        return -1;
    }
    int64_t n = c->src[1].shape.ne[0], limit = n_rows(&c->src[0]);
    const int32_t *ids = c->src[1].data;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= limit) {
            snprintf(c->err, c->errlen, "get_rows: id %d at %lld out of range [0, %lld)", ids[i], (long long)i, (long long)limit);
            return -1;
        }
    for_rows(c, n, get_rows_row);
    return 0;
}
static const npl_op_exec cpu_get_rows = {.exec = exec_get_rows};

/* ---- rms_norm ---- */
static void rms_norm_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    cpu(c)->nn->rms_norm((const float *)c->src[0].data + r * n, c->n_src > 1 ? c->src[1].data : NULL,
                         (float *)c->dst.data + r * n, (int)n, c->node->fp[0]);
}
static int exec_rms_norm(npl_exec_ctx *c) {
    if (c->src[0].type != NPL_TYPE_F32 || (c->n_src > 1 && c->src[1].type != NPL_TYPE_F32)) {
        snprintf(c->err, c->errlen, "rms_norm: f32 only");
        return -1;
    }
    for_rows(c, n_rows(&c->src[0]), rms_norm_row);
    return 0;
}
static const npl_op_exec cpu_rms_norm = {.exec = exec_rms_norm};

/* ---- matmul ---- */
static size_t scratch_matmul(const npl_exec_ctx *c) { return npl_cpu_matmul_scratch(&c->src[0], &c->src[1]); }
static int exec_matmul(npl_exec_ctx *c) {
    return npl_cpu_matmul(cpu(c), c->pool, &c->src[0], &c->src[1], &c->dst, c->scratch, c->err, c->errlen);
}
static int exec_group_matmul(npl_exec_ctx *c, int n) {
    return npl_cpu_matmul_group(cpu(c), c->pool, c, n);
}
static void prefetch_matmul(const npl_exec_ctx *c, int n) { npl_cpu_matmul_prefetch(cpu(c), c->pool, c, n); }
static const npl_op_exec cpu_matmul = {
    .exec = exec_matmul, .scratch = scratch_matmul, .exec_group = exec_group_matmul, .prefetch = prefetch_matmul};

/* ---- elementwise ---- */
static void add_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0], rb = n_rows(&c->src[1]) == 1 ? 0 : r;
    cpu(c)->nn->add((const float *)c->src[0].data + r * n, (const float *)c->src[1].data + rb * n,
                    (float *)c->dst.data + r * n, (int)n);
}
static void mul_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0], rb = n_rows(&c->src[1]) == 1 ? 0 : r;
    const float *a = (const float *)c->src[0].data + r * n, *b = (const float *)c->src[1].data + rb * n;
    float *y = (float *)c->dst.data + r * n;
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}
static void scale_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    cpu(c)->nn->scale((const float *)c->src[0].data + r * n, c->node->fp[0], (float *)c->dst.data + r * n, (int)n);
}
static void softcap_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    const float *x = (const float *)c->src[0].data + r * n;
    float *y = (float *)c->dst.data + r * n, cap = c->node->fp[0];
    for (int64_t i = 0; i < n; i++) y[i] = cap * tanhf(x[i] / cap);
}
static void swiglu_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    cpu(c)->nn->swiglu((const float *)c->src[0].data + r * n, (const float *)c->src[1].data + r * n,
                       (float *)c->dst.data + r * n, (int)n);
}
static void geglu_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    (cpu(c)->arith ? npl_geglu_llamacpp : cpu(c)->nn->geglu)((const float *)c->src[0].data + r * n,
                                                      (const float *)c->src[1].data + r * n,
                                                      (float *)c->dst.data + r * n, (int)n);
}
static void softmax_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0];
    const float *x = (const float *)c->src[0].data + r * n;
    float *y = (float *)c->dst.data + r * n, s = c->node->fp[0];
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
    cpu(c)->nn->softmax(y, (int)n);
}
static int all_f32(npl_exec_ctx *c) {
    for (int i = 0; i < c->n_src; i++)
        if (c->src[i].type != NPL_TYPE_F32) {
            snprintf(c->err, c->errlen, "%s: input %d is %s, expects f32", npl_op_name(c->node->op), i,
                     npl_type_name(c->src[i].type));
            return 0;
        }
    return 1;
}
#define ELEMENTWISE(name, fn)                                   \
    static int exec_##name(npl_exec_ctx *c) {                   \
        if (!all_f32(c)) return -1;                             \
        for_rows(c, n_rows(&c->src[0]), fn);                    \
        return 0;                                               \
    }                                                           \
    static const npl_op_exec cpu_##name = {.exec = exec_##name};
ELEMENTWISE(add, add_row)
ELEMENTWISE(mul, mul_row)
ELEMENTWISE(scale, scale_row)
ELEMENTWISE(softcap, softcap_row)
ELEMENTWISE(swiglu, swiglu_row)
ELEMENTWISE(geglu, geglu_row)
ELEMENTWISE(softmax, softmax_row)

/* ---- rope: x [hd, heads, seq] (, freq factors f32 [n_rot/2]) ---- */
static npl_rope_args rope_args(const npl_exec_ctx *c) {
    const npl_node *nd = c->node;
    npl_rope_args a = {.n_rot = nd->ip[0], .neox = nd->ip[1], .base = nd->fp[0], .freq_scale = nd->fp[1],
                       .freq_factors = nd->n_src == 3 ? (const float *)c->src[2].data : NULL, .attn_factor = 1.0f};
    if (nd->ip[2]) { /* yarn / magnitude (npl_apply_rope_ext) */
        a.ext_factor = nd->fp[2];
        a.attn_factor = nd->fp[3];
        a.corr_lo = (float)nd->ip[3];
        a.corr_hi = (float)nd->ip[4];
    }
    return a;
}
/* op state: the session's cache and this run's table (read by rope_row) */
typedef struct {
    npl_rope_cache *cache;
    float *cs; /* npl_rope_cache_rows' table for this run, or NULL: the angles per row */
    int fill;  /* 1: this node writes the table's rows as it goes */
} rope_state;
static void rope_row(const npl_exec_ctx *c, int64_t s) {
    const npl_tensor *x = &c->src[0];
    int64_t hd = x->shape.ne[0], heads = x->shape.ne[1];
    const float *src = (const float *)x->data + s * hd * heads;
    float *dst = (float *)c->dst.data + s * hd * heads;
    memcpy(dst, src, (size_t)(hd * heads) * sizeof(float));
    int32_t pos = ((const int32_t *)c->src[1].data)[s];
    if (pos < 0) return; /* padding row */
    const rope_state *st = c->op_state;
    const npl_rope_args a = rope_args(c);
    if (cpu(c)->arith) {
        npl_rope_llamacpp_ext(dst, (int)heads, (int)hd, pos, &a);
    } else if (st && st->cs) {
        float *cs = st->cs + s * a.n_rot;
        if (st->fill) npl_rope_cos_sin(&a, pos, cs);
        npl_rope_apply(dst, (int)heads, (int)hd, cs, &a);
    } else {
        npl_rope_ext(dst, (int)heads, (int)hd, pos, &a);
    }
}
static int create_rope(npl_exec_ctx *c, void **state) {
    rope_state *st = calloc(1, sizeof *st);
    /* the context's one written member: the cache its session's rope nodes share */
    if (st) st->cache = npl_rope_cache_ref(&((npl_cpu_ctx *)(uintptr_t)c->backend_ctx)->rope);
    if (!st || !st->cache) {
        free(st);
        npl_errf(c->err, c->errlen, NPL_ERR_MEMORY, "rope: out of memory");
        return -1;
    }
    *state = st;
    return 0;
}
static void destroy_rope(void *state) {
    rope_state *st = state;
    npl_rope_cache_unref(st->cache);
    free(st);
}
static int exec_rope(npl_exec_ctx *c) {
    if (c->src[0].type != NPL_TYPE_F32 || c->src[1].type != NPL_TYPE_I32 ||
        (c->node->n_src == 3 && c->src[2].type != NPL_TYPE_F32)) {
        snprintf(c->err, c->errlen, "rope: expects f32 x, i32 positions and f32 frequency factors");
        return -1;
    }
    const int64_t n = c->src[0].shape.ne[2];
    rope_state *st = c->op_state;
    if (st) st->cs = NULL; /* no table from an earlier run */
    if (st && !cpu(c)->arith && c->src[1].shape.ne[0] >= n) {
        const npl_rope_args a = rope_args(c);
        st->cs = npl_rope_cache_rows(st->cache, &a, c->src[1].data, n, &st->fill);
    }
    for_rows(c, n, rope_row);
    return 0;
}
static const npl_op_exec cpu_rope = {.create = create_rope, .exec = exec_rope, .destroy = destroy_rope};

/* ---- attention: write k/v rows into the caches, then attend ---- */
typedef struct {
    npl_exec_ctx *c;
    npl_attn_args a;
    int llamacpp; /* a llama.cpp arithmetic (npl_cpu_ctx.arith) */
} attn_job;
/* llama.cpp's CPU flash attention takes its tiled f32 path (q in f32, f32
 * accumulators: our kernels' arithmetic) from this many queries on, and the
 * key-by-key f16-accumulating path below it. */
enum { LLAMACPP_FA_TILE_Q = 64 };

static void attn_worker(void *arg, int ith, int nth) {
    attn_job *j = arg;
    if (j->llamacpp == NPL_ARITH_LLAMACPP_NOFA) npl_attention_llamacpp_noflash(&j->a, ith, nth);
    else if (j->llamacpp) npl_attention_llamacpp(&j->a, ith, nth);
    else cpu(j->c)->nn->attention(&j->a, ith, nth);
}
/* The AMX family's attention (kernels/x86/amx/attn_amx.c) where its tiles take the shapes */
static int amx_attention(const npl_exec_ctx *c) {
#if defined(__x86_64__)
    return cpu(c)->isa >= NPL_ISA_AMX && npl_attn_amx_fits((int)c->src[0].shape.ne[1], (int)c->src[1].shape.ne[1],
                                                           (int)c->src[0].shape.ne[0]);
#else
    (void)c;
    return 0;
#endif
}
/* scratch: q rounded through f16 first, then the AMX kernel's */
static size_t q16_bytes(const npl_exec_ctx *c) {
    const size_t n = (size_t)npl_shape_nelements(&c->src[0].shape) * (sizeof(float) + sizeof(uint16_t));
    return (n + 63) / 64 * 64;
}
static int exec_attention(npl_exec_ctx *c) {
    const npl_tensor *q = &c->src[0], *k = &c->src[1], *v = &c->src[2], *kc = &c->src[3], *vc = &c->src[4];
    const int32_t *pos = c->src[5].data;
    int64_t hd = q->shape.ne[0], nh = q->shape.ne[1], nkv = k->shape.ne[1], seq = q->shape.ne[2];
    int64_t n_ctx = kc->shape.ne[1], row = hd * nkv;
    if (kc->type != NPL_TYPE_F16 || vc->type != NPL_TYPE_F16 || q->type != NPL_TYPE_F32 ||
        c->src[5].type != NPL_TYPE_I32) {
        snprintf(c->err, c->errlen, "attention: expects f32 q/k/v, f16 caches, i32 positions");
        return -1;
    }
    if (hd > NPL_ATTN_MAX_HD) { /* a graph file's shape: the model loader refuses such heads already */
        snprintf(c->err, c->errlen, "attention: head size %lld is larger than %d, the most the attention kernels take",
                 (long long)hd, NPL_ATTN_MAX_HD);
        return -1;
    }
    for (int64_t s = 0; s < seq; s++) {
        if (pos[s] < 0) continue;
        if (pos[s] >= n_ctx) {
            snprintf(c->err, c->errlen, "attention: position %d outside the cache of %lld", pos[s], (long long)n_ctx);
            return -1;
        }
        npl_f32_to_f16_row_fast((const float *)k->data + s * row, (uint16_t *)kc->data + (int64_t)pos[s] * row, row);
        npl_f32_to_f16_row_fast((const float *)v->data + s * row, (uint16_t *)vc->data + (int64_t)pos[s] * row, row);
    }
    attn_job j = {.c = c};
    const int compat = cpu(c)->arith;
    j.llamacpp = compat == NPL_ARITH_LLAMACPP_NOFA || (compat && seq < LLAMACPP_FA_TILE_Q) ? compat : 0;
    j.a.q = q->data;
    /* q goes through f16 as in llama.cpp's key-by-key path, whose K.Q takes
     * f16 operands (and so does the compiled package); only the llama.cpp
     * compatibility mode copies its tiled path, which keeps q in f32 */
    if (!compat || j.llamacpp) {
        float *q16 = c->scratch;
        uint16_t *tmp = (uint16_t *)(q16 + hd * nh * seq);
        npl_f32_to_f16_row_fast(q->data, tmp, hd * nh * seq);
        npl_f16_to_f32_row_fast(tmp, q16, hd * nh * seq);
        j.a.q = q16;
    }
    j.a.q_stride = hd * nh;
    j.a.kc = kc->data;
    j.a.vc = vc->data;
    j.a.out = c->dst.data;
    j.a.out_stride = hd * nh;
    j.a.pos = pos;
    j.a.n_q = (int)seq;
    j.a.n_head = (int)nh;
    j.a.n_kv = (int)nkv;
    j.a.hd = (int)hd;
    j.a.scale = c->node->fp[0];
    j.a.softcap = c->node->fp[1];
    j.a.window = c->node->ip[0];
    if (!compat && amx_attention(c)) /* vnpu's attention on AMX too: one arithmetic, any query count */
        npl_attention_amx(&j.a, n_ctx, (char *)c->scratch + q16_bytes(c), c->pool);
    else
        npl_pool_run(c->pool, attn_worker, &j);
    return 0;
}

static size_t scratch_attention(const npl_exec_ctx *c) {
    size_t n = q16_bytes(c);
    if (amx_attention(c))
        n += npl_attn_amx_scratch(c->src[3].shape.ne[1], (int)c->src[1].shape.ne[1], (int)c->src[0].shape.ne[0],
                                  npl_pool_size(c->pool));
    return n;
}
static const npl_op_exec cpu_attention = {.exec = exec_attention, .scratch = scratch_attention};

/* ---- slice: a copy of part of every row ---- */
static void slice_row(const npl_exec_ctx *c, int64_t r) {
    int64_t n = c->src[0].shape.ne[0], len = c->node->ip[1];
    memcpy((float *)c->dst.data + r * len, (const float *)c->src[0].data + r * n + c->node->ip[0],
           sizeof(float) * (size_t)len);
}
ELEMENTWISE(slice, slice_row)

static int exec_reshape(npl_exec_ctx *c) { (void)c; return 0; } /* a view: the session aliases it */
static const npl_op_exec cpu_reshape = {.exec = exec_reshape};

static const npl_op_exec cpu_none = {0}; /* leaves and plugin ops: nothing to run here */

/* the op table's cpu column (core/ops.h) */
static const npl_op_exec *const cpu_execs[NPL_OP_COUNT] = {
#define CPU_EXEC(e, name, lo, hi, shape, cpu, file, lower) [NPL_OP_##e] = &cpu_##cpu,
    NPL_OP_LIST(CPU_EXEC)
#undef CPU_EXEC
};

void npl_cpu_backend_init(npl_backend *be, npl_cpu_ctx *ctx, npl_isa isa) {
    memset(be, 0, sizeof(*be));
    ctx->k = npl_kernels_get(isa);
    ctx->nn = npl_nn_kernels_get(isa);
    ctx->isa = ctx->k->isa;
    ctx->arith = NPL_ARITH_OURS;
    ctx->no_gfni = 0;
    ctx->wpack = NULL;
    ctx->rope = NULL;
    be->name = "cpu";
    be->ctx = ctx;
    for (int op = 0; op < NPL_OP_COUNT; op++) be->ops[op] = *cpu_execs[op];
}
