/* vnpu Attention step: this chunk's K/V rows into the f16 cache, then
 * causal (optionally sliding-window, soft-capped) attention over the cache
 * with the shared kernel of cpu/kernels/nn_kernels.h.
 *
 * K/V rows that arrive in f16 are copied into the cache as they are (the
 * f32 round trip gives the same bits); q is converted to f32 once, and the
 * output converted back, in parallel over rows.
 *
 * Prefill chunks on the AMX family take the tile kernel (attn/amx): per kv
 * head, the attended cache rows are prepared once (bf16 hi/lo, V
 * transposed), then tiles of 16 query rows run across the pool, the
 * longest first. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "accel/vnpu/vnpu_attn.h"
#include "accel/vnpu/vnpu_exec.h"
#include "core/dtype.h"

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

/* ---- the AMX path ---- */

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static int amx_ok(const vnpu_xc *x) {
    const vnpu_tensor *qt = T(0), *kt = T(1);
    const int64_t s = qt->dims[0], hd = qt->dims[2], group = qt->dims[1] / kt->dims[1];
    return x->g->ctx->family == VNPU_FAM_AMX && s >= 16 && hd % 32 == 0 && hd <= 512 && 16 % group == 0;
}

typedef struct {
    vnpu_attn_prep p;
    vnpu_attn_tile *tiles;
    int64_t n_tiles;
    uint8_t *state; /* per thread */
} amx_job;

static void amx_prep_unit(void *arg, int ith, int64_t g) {
    (void)ith;
    vnpu_attn_amx_prep(&((amx_job *)arg)->p, g);
}

static void amx_tile_unit(void *arg, int ith, int64_t u) {
    const amx_job *j = arg;
    const int64_t pair = (j->n_tiles + 1) / 2 - 1 - u; /* the last queries attend the most: first */
    const int nt = 2 * pair + 1 < j->n_tiles ? 2 : 1;
    vnpu_attn_amx_tiles(&j->p, &j->tiles[2 * pair], nt, j->state + (size_t)ith * vnpu_attn_amx_state_size());
}

static void attn_range(int32_t p, int window, int32_t *j0, int32_t *j1) {
    *j1 = p + 1;
    *j0 = window > 0 && p >= window ? p - window + 1 : 0;
}

static void run_amx(vnpu_xc *x, const float *q, float *y, const uint16_t *kc, const uint16_t *vc, const int32_t *pos,
                    uint8_t *buf, vnpu_attn_tile *tiles, uint8_t *state) {
    const vnpu_tensor *qt = T(0), *kt = T(1), *ct = T(3);
    const int64_t s = qt->dims[0], hq = qt->dims[1], hd = qt->dims[2], hkv = kt->dims[1];
    const int64_t group = hq / hkv, qb = 16 / group, ctxr = round_up(ct->dims[0], VNPU_ATTN_KG);
    const int window = (int)x->n->ip[0];
    amx_job j;
    memset(&j, 0, sizeof j);
    j.p.row_stride = hkv * hd;
    j.p.hd = (int)hd;
    j.p.scale = x->n->fp[0] > 0 ? x->n->fp[0] : 1.0f / sqrtf((float)hd);
    j.p.softcap = x->n->fp[1];
    j.p.khi = (uint16_t *)buf;
    j.p.klo = j.p.khi + ctxr * hd;
    j.p.vhi = (uint32_t *)(j.p.klo + ctxr * hd);
    j.p.vlo = j.p.vhi + ctxr * hd / 2;
    j.tiles = tiles;
    j.state = state;
    for (int64_t kvh = 0; kvh < hkv; kvh++) {
        int64_t lo = INT64_MAX, hi = 0;
        j.n_tiles = 0;
        for (int64_t i0 = 0; i0 < s; i0 += qb) {
            vnpu_attn_tile *t = &tiles[j.n_tiles++];
            memset(t, 0, sizeof *t);
            int64_t tlo = INT64_MAX, thi = 0;
            for (int64_t qi = 0; qi < qb; qi++)
                for (int64_t hh = 0; hh < group && i0 + qi < s; hh++) {
                    const int64_t i = i0 + qi, h = kvh * group + hh, r = qi * group + hh;
                    t->o[r] = y + i * hq * hd + h * hd;
                    if (pos[i] < 0) continue; /* padding: no keys, zeros out */
                    t->q[r] = q + i * hq * hd + h * hd;
                    attn_range(pos[i], window, &t->j0[r], &t->j1[r]);
                    tlo = t->j0[r] < tlo ? t->j0[r] : tlo;
                    thi = t->j1[r] > thi ? t->j1[r] : thi;
                }
            if (thi > 0) {
                t->k0 = tlo / VNPU_ATTN_KG * VNPU_ATTN_KG;
                t->k1 = round_up(thi, VNPU_ATTN_KG);
                lo = tlo < lo ? tlo : lo;
                hi = thi > hi ? thi : hi;
            }
        }
        if (hi == 0) lo = 0;
        j.p.kc = kc + kvh * hd;
        j.p.vc = vc + kvh * hd;
        j.p.kb0 = lo / VNPU_ATTN_KG * VNPU_ATTN_KG;
        j.p.lo = lo;
        j.p.hi = hi;
        vnpu_par_for(x->be, (round_up(hi, VNPU_ATTN_KG) - j.p.kb0) / VNPU_ATTN_KG, amx_prep_unit, &j);
        vnpu_par_for(x->be, (j.n_tiles + 1) / 2, amx_tile_unit, &j);
    }
}

npl_accel_status vnpu_op_attention(vnpu_xc *x) {
    const float *q = vnpu_xc_in_f32(x, 0);
    float *y = vnpu_xc_out_f32(x);
    const int amx = amx_ok(x);
    const vnpu_tensor *ct3 = T(3);
    const int64_t ctxr = round_up(ct3->dims[0], VNPU_ATTN_KG), hd3 = T(0)->dims[2];
    const int64_t n_tiles = (T(0)->dims[0] + 15) / 16 * 16; /* >= tiles of any group size */
    uint8_t *buf = amx ? vnpu_xc_alloc(x, (size_t)(4 * ctxr * hd3) * 2) : NULL;
    vnpu_attn_tile *tiles = amx ? vnpu_xc_alloc(x, (size_t)n_tiles * sizeof *tiles) : NULL;
    uint8_t *state = amx ? vnpu_xc_alloc(x, (size_t)x->be->n_threads * vnpu_attn_amx_state_size()) : NULL;
    if (vnpu_xc_measuring(x)) return NPL_ACCEL_OK;
    if (!q || !y || (amx && (!buf || !tiles || !state)))
        return vnpu_fail(x->be, NPL_ACCEL_ERR_INTERNAL, "vnpu: scratch plan too small for an Attention step");
    const int prof = vnpu_prof_on();
    uint64_t tp = prof ? vnpu_now_ns() : 0;
    const vnpu_tensor *qt = T(0), *kt = T(1), *ct = T(3);
    const int64_t s = qt->dims[0], hq = qt->dims[1], hd = qt->dims[2], hkv = kt->dims[1], n_ctx = ct->dims[0];
    uint16_t *kc = vnpu_xc_addr(x, x->n->in[3]), *vc = vnpu_xc_addr(x, x->n->in[4]);
    const int32_t *pos = vnpu_xc_addr(x, x->n->in[5]);
    for (int64_t i = 0; i < s; i++)
        if (pos[i] < -1 || pos[i] >= n_ctx)
            return vnpu_fail(x->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: Attention: position %d of row %lld is outside "
                             "the cache [0, %lld) (-1 marks padding)", pos[i], (long long)i, (long long)n_ctx);
    cache_job c = {x, pos, hkv * hd, kc, vc};
    vnpu_par_for(x->be, s, cache_row, &c);
    if (prof) {
        const uint64_t t1 = vnpu_now_ns();
        vnpu_prof_add(x->g, VNPU_PROF_ATTN_IN, t1 - tp);
        tp = t1;
    }
    if (amx) {
        run_amx(x, q, y, kc, vc, pos, buf, tiles, state);
    } else {
        attn_job j = {x->be->nn, {q, hq * hd, kc, vc, y, hq * hd, pos, (int)s, (int)hq, (int)hkv, (int)hd,
                                  x->n->fp[0] > 0 ? x->n->fp[0] : 1.0f / sqrtf((float)hd), x->n->fp[1], (int)x->n->ip[0]}};
        npl_pool_run(x->be->pool, attn_task, &j);
    }
    if (prof) {
        const uint64_t t1 = vnpu_now_ns();
        vnpu_prof_add(x->g, VNPU_PROF_ATTN_KERNEL, t1 - tp);
        tp = t1;
    }
    vnpu_xc_out_done(x, y);
    if (prof) vnpu_prof_add(x->g, VNPU_PROF_ATTN_OUT, vnpu_now_ns() - tp);
    return NPL_ACCEL_OK;
}
