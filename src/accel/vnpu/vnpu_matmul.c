/* vnpu matmul driver: prepares activations (copy, f16/bf16 rounding or
 * dynamic per-row int8/int16 quantization), splits 32x32 blocks across the
 * pool, and the generic C kernels every other family is tested against. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"
#include "kernels/dtype.h"

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static size_t act_esize(int act) {
    return act == VNPU_ACT_I8 ? 1 : (act == VNPU_ACT_BF16 || act == VNPU_ACT_I16 || act == VNPU_ACT_I16S) ? 2 : 4;
}

static size_t a64(size_t v) { return (v + 63) & ~(size_t)63; }

size_t vnpu_matmul_scratch(const vnpu_mm_table *tab, const vnpu_pack *p, int64_t m) {
    if (p->fmt == VNPU_PK_GGML) return vnpu_matmul_ggml_scratch(p, m);
    int act = tab->act[p->fmt];
    size_t mpad = (size_t)round_up(m, VNPU_BLOCK);
    return a64(mpad * (size_t)p->kpad * act_esize(act)) + 2 * a64(mpad * (size_t)p->nblk * 4);
}

/* ---- activation preparation ---- */

void vnpu_prep_generic(int act, const float *x, int64_t k, int64_t kpad, int64_t bk, uint8_t *dst, float *xs,
                       float *xsum) {
    float *f = (float *)dst;
    uint16_t *h = (uint16_t *)dst;
    const size_t es = act_esize(act);
    switch (act) {
    case VNPU_ACT_F32: memcpy(f, x, (size_t)k * 4); break;
    case VNPU_ACT_F16R: for (int64_t i = 0; i < k; i++) f[i] = npl_f16_to_f32(npl_f32_to_f16(x[i])); break;
    case VNPU_ACT_BF16R: for (int64_t i = 0; i < k; i++) f[i] = npl_bf16_to_f32(npl_f32_to_bf16(x[i])); break;
    case VNPU_ACT_BF16: for (int64_t i = 0; i < k; i++) h[i] = npl_f32_to_bf16(x[i]); break;
    default: {
        const float lim = act == VNPU_ACT_I8 ? 127.0f : 32767.0f;
        for (int64_t b = 0; b * bk < kpad; b++) {
            float amax = 0.0f;
            for (int64_t i = b * bk; i < (b + 1) * bk && i < k; i++) amax = fmaxf(amax, fabsf(x[i]));
            const float inv = amax > 0.0f ? lim / amax : 0.0f;
            xs[b] = vnpu_act_scale(amax, lim);
            int32_t s = 0;
            for (int64_t i = b * bk; i < (b + 1) * bk; i++) {
                float v = i < k ? nearbyintf(x[i] * inv) : 0.0f;
                int32_t q = (int32_t)fminf(lim, fmaxf(-lim, v));
                s += q;
                if (act == VNPU_ACT_I8) ((int8_t *)dst)[i] = (int8_t)q;
                else if (act == VNPU_ACT_I16) h[i] = (uint16_t)(int16_t)q;
                else dst[i] = (uint8_t)(int8_t)(q >> 8), dst[kpad + i] = (uint8_t)(q & 0xFF);
            }
            xsum[b] = (float)s;
        }
        return;
    }
    }
    memset(dst + (size_t)k * es, 0, (size_t)(kpad - k) * es);
}

/* Work is handed out in small units through an atomic counter, so a thread
 * that the OS delays (a shared machine) does not hold the others up. */
typedef struct {
    const vnpu_mm_table *tab;
    const vnpu_pack *p;
    int act;
    const float *x;
    int64_t m, mpad;
    uint8_t *xq;
    int64_t x_stride;
    float *xs, *xsum;
    atomic_int_fast64_t next;
} prep_job;

#define PREP_ROWS 8

static void prep_task(void *arg, int ith, int nth) {
    prep_job *j = arg;
    const vnpu_pack *p = j->p;
    (void)ith, (void)nth;
    for (;;) {
        const int64_t r0 = atomic_fetch_add(&j->next, PREP_ROWS);
        if (r0 >= j->mpad) break;
        for (int64_t r = r0; r < r0 + PREP_ROWS && r < j->mpad; r++) {
            uint8_t *dst = j->xq + r * j->x_stride;
            if (r < j->m) {
                j->tab->prep(j->act, j->x + r * p->k, p->k, p->kpad, p->bk, dst, &j->xs[r * p->nblk],
                             &j->xsum[r * p->nblk]);
                continue;
            }
            memset(dst, 0, (size_t)j->x_stride);
            for (int64_t b = 0; b < p->nblk; b++) j->xs[r * p->nblk + b] = j->xsum[r * p->nblk + b] = 0.0f;
        }
    }
}

/* ---- block scheduling ---- */

#define ROW_CHUNK 4 /* row blocks per unit: the weight panel is reused across them */

typedef struct {
    vnpu_mm_fn fn;
    vnpu_mm_job job;
    int64_t nrb, ncb, nrc;
    atomic_int_fast64_t next;
} run_job;

static void run_task(void *arg, int ith, int nth) {
    run_job *r = arg;
    (void)ith, (void)nth;
    for (;;) { /* units are column-block-major: (cb, row chunk) */
        const int64_t u = atomic_fetch_add(&r->next, 1);
        if (u >= r->ncb * r->nrc) break;
        const int64_t cb = u / r->nrc, rb0 = (u % r->nrc) * ROW_CHUNK;
        const int64_t rb1 = rb0 + ROW_CHUNK < r->nrb ? rb0 + ROW_CHUNK : r->nrb;
        r->fn(&r->job, rb0 * VNPU_BLOCK, rb1 * VNPU_BLOCK, cb * VNPU_BLOCK, (cb + 1) * VNPU_BLOCK);
    }
}

#define GEMV_CHUNK 4 /* column blocks per unit of the m = 1 path */

typedef struct {
    vnpu_gemv_fn fn;
    vnpu_mm_job job;
    int64_t ncb;
    atomic_int_fast64_t next;
} gemv_job;

static void gemv_task(void *arg, int ith, int nth) {
    gemv_job *g = arg;
    (void)ith, (void)nth;
    for (;;) {
        const int64_t cb = atomic_fetch_add(&g->next, GEMV_CHUNK);
        if (cb >= g->ncb) break;
        const int64_t ce = cb + GEMV_CHUNK < g->ncb ? cb + GEMV_CHUNK : g->ncb;
        g->fn(&g->job, cb * VNPU_BLOCK, ce * VNPU_BLOCK);
    }
}

void vnpu_matmul(const vnpu_mm_table *tab, npl_pool *pool, const vnpu_pack *p, const float *x, int64_t m, float *y,
                 int64_t y_stride, int64_t ncols, uint8_t *scratch) {
    if (p->fmt == VNPU_PK_GGML) {
        vnpu_matmul_ggml(tab->isa, pool, p, x, m, y, y_stride, scratch);
        return;
    }
    const int act = tab->act[p->fmt];
    const int gemv = m == 1 && tab->gemv[p->fmt] && (!vnpu_pk_is_int(p->fmt) || p->off_wsum != VNPU_NOFF);
    const int64_t mpad = gemv ? 1 : round_up(m, VNPU_BLOCK);
    prep_job *pj = &(prep_job){tab, p, act, x, m, mpad, scratch, p->kpad * (int64_t)act_esize(act), NULL, NULL, 0};
    size_t off = a64((size_t)mpad * (size_t)pj->x_stride);
    pj->xs = (float *)(scratch + off);
    pj->xsum = (float *)(scratch + off + a64((size_t)mpad * (size_t)p->nblk * 4));
    atomic_init(&pj->next, 0);
    if (gemv) { /* one row: prepare it here, then stream the weights once with every thread */
        prep_task(pj, 0, 1);
        gemv_job *gj = &(gemv_job){tab->gemv[p->fmt], {p, pj->xq, pj->x_stride, pj->xs, pj->xsum, y, y_stride, m, ncols},
                                   p->npad / VNPU_BLOCK, 0};
        atomic_init(&gj->next, 0);
        npl_pool_run(pool, gemv_task, gj);
        return;
    }
    npl_pool_run(pool, prep_task, pj);
    run_job *rj = &(run_job){tab->fn[p->fmt], {p, pj->xq, pj->x_stride, pj->xs, pj->xsum, y, y_stride, m, ncols},
                             mpad / VNPU_BLOCK, p->npad / VNPU_BLOCK, 0, 0};
    rj->nrc = (rj->nrb + ROW_CHUNK - 1) / ROW_CHUNK;
    atomic_init(&rj->next, 0);
    npl_pool_run(pool, run_task, rj);
}

/* ---- generic kernels: plain C over the packed layout ---- */

#define B VNPU_BLOCK

/* The 32 weights of columns c0..c0+31 at reduction index k, as f32. */
static void wrow_f32(const vnpu_pack *p, int64_t c0, int64_t k, float *w) {
    for (int h = 0; h < 2; h++) {
        const uint8_t *pan = vnpu_pk_panel(p, c0 + h * VNPU_PANEL);
        for (int l = 0; l < VNPU_PANEL; l++) {
            float v;
            if (p->fmt == VNPU_PK_F32) memcpy(&v, pan + ((size_t)k * VNPU_PANEL + l) * 4, 4);
            else {
                uint16_t u;
                size_t idx = p->fmt == VNPU_PK_F16 ? (size_t)k * VNPU_PANEL + l
                                                   : ((size_t)(k / 2) * VNPU_PANEL + l) * 2 + (size_t)(k % 2);
                memcpy(&u, pan + idx * 2, 2);
                v = p->fmt == VNPU_PK_F16 ? npl_f16_to_f32(u) : npl_bf16_to_f32(u);
            }
            w[h * VNPU_PANEL + l] = v;
        }
    }
}

static void mm_float_generic(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    float acc[B * B], w[B];
    for (int64_t cb = c0; cb < c1; cb += B)
        for (int64_t rb = r0; rb < r1; rb += B) {
            memset(acc, 0, sizeof acc);
            for (int64_t k = 0; k < p->kpad; k++) {
                wrow_f32(p, cb, k, w);
                for (int r = 0; r < B; r++) {
                    const float xv = ((const float *)(j->x + (rb + r) * j->x_stride))[k];
                    for (int c = 0; c < B; c++) acc[r * B + c] += xv * w[c];
                }
            }
            vnpu_epi_store(j, acc, rb, B, cb);
        }
}

static void mm_int_generic(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const int i8 = p->fmt == VNPU_PK_I8, split = p->fmt == VNPU_PK_I16S, G = vnpu_pk_group(p->fmt);
    int64_t iacc[B * B];
    float facc[B * B], tmp[B * B];
    int32_t w[B];
    for (int64_t cb = c0; cb < c1; cb += B)
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int64_t b = 0; b < p->nblk; b++) {
                memset(iacc, 0, sizeof iacc);
                for (int64_t k = b * p->bk; k < (b + 1) * p->bk; k++) {
                    for (int c = 0; c < B; c++) {
                        const uint8_t *pan = vnpu_pk_panel(p, cb + c);
                        size_t idx = ((size_t)(k / G) * VNPU_PANEL + (size_t)(c % VNPU_PANEL)) * (size_t)G + (size_t)(k % G);
                        if (i8) w[c] = ((const int8_t *)pan)[idx];
                        else if (split) w[c] = ((const int8_t *)pan)[idx] * 256 + pan[(size_t)p->kpad * VNPU_PANEL + idx];
                        else {
                            int16_t v;
                            memcpy(&v, pan + idx * 2, 2);
                            w[c] = v;
                        }
                    }
                    for (int r = 0; r < B; r++) {
                        const uint8_t *xr = j->x + (rb + r) * j->x_stride;
                        int32_t xv;
                        if (i8) xv = ((const int8_t *)xr)[k];
                        else if (split) xv = ((const int8_t *)xr)[k] * 256 + xr[p->kpad + k];
                        else {
                            int16_t v;
                            memcpy(&v, xr + k * 2, 2);
                            xv = v;
                        }
                        for (int c = 0; c < B; c++) iacc[r * B + c] += (int64_t)xv * w[c];
                    }
                }
                for (int i = 0; i < B * B; i++) tmp[i] = (float)iacc[i];
                vnpu_epi_intf(j, tmp, facc, rb, B, cb, b, b == 0);
            }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
}

void vnpu_mm_fill_generic(vnpu_mm_table *t) {
    t->fn[VNPU_PK_F32] = t->fn[VNPU_PK_F16] = t->fn[VNPU_PK_BF16] = mm_float_generic;
    t->fn[VNPU_PK_I8] = t->fn[VNPU_PK_I16] = t->fn[VNPU_PK_I16S] = mm_int_generic;
    t->act[VNPU_PK_F32] = VNPU_ACT_F32;
    t->act[VNPU_PK_F16] = VNPU_ACT_F16R;
    t->act[VNPU_PK_BF16] = VNPU_ACT_BF16R;
    t->act[VNPU_PK_I8] = VNPU_ACT_I8;
    t->act[VNPU_PK_I16] = VNPU_ACT_I16;
    t->act[VNPU_PK_I16S] = VNPU_ACT_I16S;
    for (int f = 0; f < VNPU_PK_COUNT; f++) t->kname[f] = "generic";
    t->prep = vnpu_prep_generic;
    t->isa = VNPU_FAM_GENERIC;
}
