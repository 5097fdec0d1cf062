/* vnpu Attention step: this chunk's K/V rows into the f16 cache, then
 * causal (optionally sliding-window, soft-capped) attention over the cache
 * with the shared kernel of kernels/nn_kernels.h.
 *
 * K/V rows that arrive in f16 are copied into the cache as they are (the
 * f32 round trip gives the same bits); q is converted to f32 once, and the
 * output converted back, in parallel over rows.
 *
 * The AMX family takes the AMX family's one attention kernel
 * (kernels/x86/amx/attn_amx.c) at every query count, as the CPU backend
 * does on AMX machines, so a package with f32 activations computes the CPU
 * path's bits; other families take the shared kernels. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "accel/vnpu/vnpu_exec.h"
#include "kernels/dtype.h"
#include "kernels/x86/amx/attn_amx.h"

#define T(i) vnpu_xc_t(x, x->n->in[i])

typedef struct {
    vnpu_xc *x;
    const int32_t *pos;
    int64_t row;          /* elements of one position's K (or V) row */
    uint16_t *kc, *vc;
} cache_job;

static void cache_row(void *arg, int ith, int64_t i) {
    const cache_job *c = arg;
    vnpu_xc *x = c->x;
    (void)ith;
    if (c->pos[i] < 0) return;
    for (int kv = 0; kv < 2; kv++) {
        const vnpu_tensor *t = T(1 + (uint32_t)kv);
        const uint8_t *src = vnpu_xc_addr(x, x->n->in[1 + kv]);
        uint16_t *dst = (kv ? c->vc : c->kc) + c->pos[i] * c->row;
        if (t->dtype == NPL_ACCEL_DT_F16) {
            memcpy(dst, src + (size_t)(i * c->row) * 2, (size_t)c->row * 2);
            continue;
        }
        float buf[1024]; /* a row in pieces: any row length */
        for (int64_t e = 0; e < c->row; e += 1024) {
            const int64_t n = c->row - e < 1024 ? c->row - e : 1024;
            vnpu_cvt_to_f32(x->g->ctx->family, t, src, i * c->row + e, n, buf);
            for (int64_t k = 0; k < n; k++) dst[e + k] = npl_f32_to_f16(buf[k]);
        }
    }
}

typedef struct {
    const npl_nn_kernels *nn;
    npl_attn_args a;
} attn_job;

static void attn_task(void *arg, int ith, int nth) {
    const attn_job *j = arg;
    j->nn->attention(&j->a, ith, nth);
}

/* the AMX family takes the tile kernel wherever its shapes fit, as the CPU
 * backend does on AMX machines: one arithmetic for both */
static int amx_ok(const vnpu_xc *x) {
    const vnpu_tensor *qt = T(0), *kt = T(1);
    return x->g->ctx->family == VNPU_FAM_AMX && npl_attn_amx_fits((int)qt->dims[1], (int)kt->dims[1], (int)qt->dims[2]);
}

npl_accel_status vnpu_op_attention(vnpu_xc *x) {
    const float *q = vnpu_xc_in_f32(x, 0);
    float *y = vnpu_xc_out_f32(x);
    const int amx = amx_ok(x);
    const vnpu_tensor *ct3 = T(3);
    /* kv_len (ip[1], 0: all): a bucket's graph holds positions below it */
    const int64_t kv_len = x->n->ip[1] > 0 && x->n->ip[1] < ct3->dims[0] ? x->n->ip[1] : ct3->dims[0];
    uint8_t *scratch = amx ? vnpu_xc_alloc(x, npl_attn_amx_scratch(kv_len, (int)T(1)->dims[1], (int)T(0)->dims[2],
                                                                   npl_pool_size(x->be->pool)))
                           : NULL;
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!q || !y || (amx && !scratch))
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for an Attention step");
    const int prof = vnpu_prof_on(x->g);
    uint64_t tp = prof ? vnpu_now_ns() : 0;
    const vnpu_tensor *qt = T(0), *kt = T(1), *ct = T(3);
    const int64_t s = qt->dims[0], hq = qt->dims[1], hd = qt->dims[2], hkv = kt->dims[1], n_ctx = kv_len;
    uint16_t *kc = vnpu_xc_addr(x, x->n->in[3]), *vc = vnpu_xc_addr(x, x->n->in[4]);
    const int32_t *pos = vnpu_xc_addr(x, x->n->in[5]);
    for (int64_t i = 0; i < s; i++)
        if (pos[i] < -1 || pos[i] >= n_ctx)
            return vnpu_fail(x->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: Attention: position %d of row %lld is outside "
                             "the %s [0, %lld) (-1 marks padding)", pos[i], (long long)i,
                             n_ctx < ct->dims[0] ? "graph's kv_len" : "cache", (long long)n_ctx);
    cache_job c = {x, pos, hkv * hd, kc, vc};
    vnpu_par_for(x->be, s, cache_row, &c);
    if (prof) {
        const uint64_t t1 = vnpu_now_ns();
        vnpu_prof_add(x->g, VNPU_PROF_ATTN_IN, t1 - tp);
        tp = t1;
    }
    attn_job j = {x->be->nn, {q, hq * hd, kc, vc, y, hq * hd, pos, (int)s, (int)hq, (int)hkv, (int)hd,
                              x->n->fp[0] > 0 ? x->n->fp[0] : 1.0f / sqrtf((float)hd), x->n->fp[1], (int)x->n->ip[0]}};
    if (amx)
        npl_attention_amx(&j.a, n_ctx, scratch, x->be->pool);
    else
        npl_pool_run(x->be->pool, attn_task, &j);
    if (prof) {
        const uint64_t t1 = vnpu_now_ns();
        vnpu_prof_add(x->g, VNPU_PROF_ATTN_KERNEL, t1 - tp);
        tp = t1;
    }
    vnpu_xc_out_done(x, y);
    if (prof) vnpu_prof_add(x->g, VNPU_PROF_ATTN_OUT, vnpu_now_ns() - tp);
    return NPL_ACCEL_OK;
}
