/* vnpu weight packing: from the tensor layout the caller gave ([K, N] or
 * [N, K], any weight type) to the panel layout of vnpu_mm.h. Used at
 * finalize for STATIC weights (once per context) and at every execute for
 * weights that arrive as inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"
#include "accel/vnpu/vnpu_convert.h"
#include "core/checked.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

uint32_t vnpu_pack_fmt(int family, uint32_t dt) {
    switch (dt) {
    case NPL_ACCEL_DT_F32: return VNPU_PK_F32;
    case NPL_ACCEL_DT_F16: return VNPU_PK_F16;
    case NPL_ACCEL_DT_BF16: return VNPU_PK_BF16;
    case NPL_ACCEL_DT_INT16: return family == VNPU_FAM_AMX ? VNPU_PK_I16S : VNPU_PK_I16;
    default: return vnpu_dtype_ggml(dt) >= 0 ? VNPU_PK_GGML : VNPU_PK_I8; /* INT8, UINT8 */
    }
}

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* k-block of a weight: the whole (padded) K unless quantized per block. */
static int64_t block_of(const vnpu_tensor *w) {
    if (w->dtype == NPL_ACCEL_DT_Q4_0 || w->dtype == NPL_ACCEL_DT_Q8_0) return 32;
    if (w->q.enc == NPL_ACCEL_QUANT_PER_BLOCK) return w->q.block;
    return 0;
}

/* GGML blocks stay in the tensor: no tables, the bias (if any) applied by
 * the MatMul step itself. Two parts (gate and up of a gated MatMul) must
 * have one type and shape and no biases; their columns sit side by side. */
static int plan_ggml(vnpu_pack *p, const struct npl_accel_context *ctx, uint32_t n_parts, const uint32_t *w,
                     const uint32_t *b, uint32_t trans, char *err, size_t errlen) {
    const vnpu_tensor *w0 = &ctx->t[w[0]];
    if (n_parts < 1 || n_parts > 2 || !trans || w0->rank != 2) {
        snprintf(err, errlen, "%s weights '%s' are packed as [N, K], alone or as gate + up", vnpu_dtype_name(w0->dtype),
                 w0->name);
        return -1;
    }
    if (n_parts == 2) {
        const vnpu_tensor *w1 = &ctx->t[w[1]];
        if (w1->dtype != w0->dtype || w1->rank != 2 || w1->dims[0] != w0->dims[0] || w1->dims[1] != w0->dims[1] ||
            (b && (b[0] != VNPU_NONE || b[1] != VNPU_NONE)) || !w0->raw || !w1->raw) {
            snprintf(err, errlen, "%s weights '%s' and '%s' cannot share one pack", vnpu_dtype_name(w0->dtype), w0->name,
                     w1->name);
            return -1;
        }
    }
    p->n_parts = n_parts;
    p->trans = 1;
    p->w[0] = w[0];
    p->w[1] = n_parts == 2 ? w[1] : VNPU_NONE;
    p->b[0] = p->b[1] = VNPU_NONE;
    p->k = p->kpad = p->bk = w0->dims[1];
    p->nblk = 1;
    p->n[0] = w0->dims[0];
    p->n[1] = n_parts == 2 ? w0->dims[0] : 0;
    p->col0[1] = n_parts == 2 ? p->n[0] : 0;
    p->npad = p->n[0] + p->n[1];
    p->off_w = 0;
    p->off_scale = p->off_offs = p->off_wsum = p->off_bias = VNPU_NOFF;
    p->size = 0;
    p->gtype = vnpu_dtype_ggml(w0->dtype);
    p->wraw = w0->raw;
    p->wraw1 = n_parts == 2 ? ctx->t[w[1]].raw : NULL;
    if (!vnpu_matmul_ggml_ok(p->gtype)) {
        snprintf(err, errlen, "no host kernel for %s weights '%s'", vnpu_dtype_name(w0->dtype), w0->name);
        return -1;
    }
    return 0;
}

int vnpu_pack_plan(vnpu_pack *p, const struct npl_accel_context *ctx, uint32_t n_parts, const uint32_t *w,
                   const uint32_t *b, uint32_t trans, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    const vnpu_tensor *w0 = &ctx->t[w[0]];
    p->fmt = vnpu_pack_fmt(ctx->family, w0->dtype);
    if (p->fmt == VNPU_PK_GGML) return plan_ggml(p, ctx, n_parts, w, b, trans, err, errlen);
    p->n_parts = n_parts;
    p->trans = trans;
    p->k = w0->dims[trans ? 1 : 0];
    int64_t bk = block_of(w0);
    p->kpad = bk ? p->k : round_up(p->k, 64);
    p->bk = bk ? bk : p->kpad;
    p->nblk = p->kpad / p->bk;
    int any_bias = 0;
    for (uint32_t i = 0; i < n_parts; i++) {
        const vnpu_tensor *wi = &ctx->t[w[i]];
        if (i && (wi->dtype != w0->dtype || block_of(wi) != bk || wi->dims[trans ? 1 : 0] != p->k)) {
            snprintf(err, errlen, "weights '%s' and '%s' cannot share one pack", w0->name, wi->name);
            return -1;
        }
        p->w[i] = w[i];
        p->b[i] = b ? b[i] : VNPU_NONE;
        any_bias |= p->b[i] != VNPU_NONE;
        p->n[i] = wi->dims[trans ? 0 : 1];
        p->col0[i] = p->npad;
        p->npad += round_up(p->n[i], VNPU_BLOCK);
    }
    int is_int = vnpu_pk_is_int(p->fmt);
    int has_offs = 0;
    for (uint32_t i = 0; i < n_parts && is_int; i++) {
        const vnpu_tensor *wi = &ctx->t[w[i]];
        has_offs |= wi->dtype == NPL_ACCEL_DT_UINT8 || wi->q.offsets != NULL;
    }
    size_t off = 0, sz;
    const size_t tab = (size_t)p->nblk * (size_t)p->npad * 4;
    if (npl_mul_size((size_t)p->kpad * (size_t)p->npad, vnpu_pk_esize(p->fmt), &sz) || npl_add_size(off, sz, &off)) {
        snprintf(err, errlen, "weights '%s' are too large", w0->name);
        return -1;
    }
    p->off_w = 0;
    p->off_scale = p->off_offs = p->off_wsum = p->off_bias = VNPU_NOFF;
    if (is_int) {
        p->off_scale = off = (off + 63) & ~(size_t)63;
        off += tab;
        if (has_offs) {
            p->off_offs = off;
            off += tab;
        }
        if (p->fmt == VNPU_PK_I8) {
            p->off_wsum = off;
            off += tab;
        }
    }
    if (any_bias) {
        p->off_bias = off = (off + 63) & ~(size_t)63;
        off += (size_t)p->npad * 4;
    }
    p->size = (off + 63) & ~(size_t)63;
    return 0;
}

/* ---- filling ---- */

typedef struct {
    const vnpu_pack *p;
    const struct npl_accel_context *ctx;
    uint8_t *dst;
    const uint8_t *wd[2];
} fill_job;

/* Decode row r (an output channel, K elements) of a Q4_0 / Q8_0 tensor. */
static void decode_block_row(const vnpu_tensor *t, const uint8_t *data, int64_t r, int8_t *q, int64_t k) {
    int64_t nb = k / 32;
    if (t->dtype == NPL_ACCEL_DT_Q8_0) {
        const block_q8_0 *bl = (const block_q8_0 *)data + r * nb;
        for (int64_t i = 0; i < nb; i++) memcpy(q + i * 32, bl[i].qs, 32);
    } else {
        const block_q4_0 *bl = (const block_q4_0 *)data + r * nb;
        for (int64_t i = 0; i < nb; i++)
            for (int j = 0; j < 16; j++) {
                q[i * 32 + j] = (int8_t)((bl[i].qs[j] & 0x0F) - 8);
                q[i * 32 + j + 16] = (int8_t)((bl[i].qs[j] >> 4) - 8);
            }
    }
}

static void fill_panel(const fill_job *j, int64_t pi, int8_t *tmp) {
    const vnpu_pack *p = j->p;
    const int64_t col = pi * VNPU_PANEL;
    const int part = p->n_parts == 2 && col >= p->col0[1];
    const vnpu_tensor *t = &j->ctx->t[p->w[part]];
    const uint8_t *src = j->wd[part];
    const int64_t nl0 = col - p->col0[part], N = p->n[part], K = p->k;
    const int G = vnpu_pk_group(p->fmt);
    const size_t es = vnpu_pk_esize(p->fmt);
    uint8_t *pd = j->dst + p->off_w + (size_t)pi * vnpu_pk_panel_bytes(p);
    int lanes = nl0 >= N ? 0 : (N - nl0 >= VNPU_PANEL ? VNPU_PANEL : (int)(N - nl0));
    if (lanes < VNPU_PANEL || K < p->kpad) memset(pd, 0, vnpu_pk_panel_bytes(p));
    if (!lanes) return;
#define DST(k, lane) (pd + ((size_t)(((k) / G) * VNPU_PANEL + (lane)) * G + (size_t)((k) % G)) * es)
    if (t->dtype == NPL_ACCEL_DT_Q4_0 || t->dtype == NPL_ACCEL_DT_Q8_0) { /* trans == 1 (checked) */
        for (int l = 0; l < lanes; l++) {
            decode_block_row(t, src, nl0 + l, tmp, K);
            for (int64_t k = 0; k < K; k++) *(int8_t *)DST(k, l) = tmp[k];
        }
        return;
    }
    if (p->fmt == VNPU_PK_I16S) { /* two byte planes: hi (s8) then lo (u8) */
        uint8_t *hi = pd, *lo = pd + (size_t)p->kpad * VNPU_PANEL;
        /* walk the source in memory order: rows of K when transposed, rows of N otherwise */
        for (int64_t o = 0; o < (p->trans ? lanes : K); o++)
            for (int64_t i = 0; i < (p->trans ? K : lanes); i++) {
                const int64_t k = p->trans ? i : o, l = p->trans ? o : i;
                int16_t v;
                memcpy(&v, src + (size_t)(p->trans ? (nl0 + l) * K + k : k * N + nl0 + l) * 2, 2);
                const size_t at = ((size_t)(k / 4) * VNPU_PANEL + (size_t)l) * 4 + (size_t)(k % 4);
                hi[at] = (uint8_t)(int8_t)(v >> 8);
                lo[at] = (uint8_t)(v & 0xFF);
            }
        return;
    }
    const uint8_t flip = t->dtype == NPL_ACCEL_DT_UINT8 ? 0x80 : 0; /* u8 -> s8: q - 128 */
    if (p->trans) {
        for (int l = 0; l < lanes; l++) {
            const uint8_t *row = src + (size_t)(nl0 + l) * (size_t)K * es;
            if (es == 4)
                for (int64_t k = 0; k < K; k++) memcpy(DST(k, l), row + k * 4, 4);
            else if (es == 2)
                for (int64_t k = 0; k < K; k++) memcpy(DST(k, l), row + k * 2, 2);
            else
                for (int64_t k = 0; k < K; k++) *DST(k, l) = row[k] ^ flip;
        }
    } else {
        for (int64_t k = 0; k < K; k++) {
            const uint8_t *row = src + ((size_t)k * (size_t)N + (size_t)nl0) * es;
            uint8_t *d = DST(k, 0);
            const size_t step = (size_t)G * es;
            if (es == 4)
                for (int l = 0; l < lanes; l++) memcpy(d + l * step, row + l * 4, 4);
            else if (es == 2)
                for (int l = 0; l < lanes; l++) memcpy(d + l * step, row + l * 2, 2);
            else
                for (int l = 0; l < lanes; l++) d[l * step] = row[l] ^ flip;
        }
    }
#undef DST
}

/* int8: per (block, column) sums of q, for the VNNI u8 x s8 form */
static void panel_sums(const fill_job *j, int64_t pi) {
    const vnpu_pack *p = j->p;
    const int8_t *pd = (const int8_t *)(j->dst + p->off_w) + (size_t)pi * vnpu_pk_panel_bytes(p);
    int32_t *ws = (int32_t *)(j->dst + p->off_wsum) + pi * VNPU_PANEL;
    for (int64_t b = 0; b < p->nblk; b++) {
        int32_t sum[VNPU_PANEL] = {0};
        for (int64_t q = b * p->bk / 4; q < (b + 1) * p->bk / 4; q++)
            for (int l = 0; l < VNPU_PANEL; l++) {
                const int8_t *e = pd + (q * VNPU_PANEL + l) * 4;
                sum[l] += e[0] + e[1] + e[2] + e[3];
            }
        memcpy(ws + b * p->npad, sum, sizeof sum);
    }
}

static void fill_task(void *arg, int ith, int nth) {
    const fill_job *j = arg;
    const int64_t np = j->p->npad / VNPU_PANEL;
    int8_t *tmp = NULL;
    const vnpu_tensor *t0 = &j->ctx->t[j->p->w[0]];
    if ((t0->dtype == NPL_ACCEL_DT_Q4_0 || t0->dtype == NPL_ACCEL_DT_Q8_0) && !(tmp = malloc((size_t)j->p->k))) return;
    for (int64_t pi = np * ith / nth; pi < np * (ith + 1) / nth; pi++) {
        fill_panel(j, pi, tmp);
        if (j->p->off_wsum != VNPU_NOFF) panel_sums(j, pi);
    }
    free(tmp);
}

/* Per (block, column) scales and offsets. */
static void fill_tables(const fill_job *j) {
    const vnpu_pack *p = j->p;
    float *sc = (float *)(j->dst + p->off_scale);
    float *of = p->off_offs != VNPU_NOFF ? (float *)(j->dst + p->off_offs) : NULL;
    for (int64_t c = 0; c < p->npad; c++) {
        const int part = p->n_parts == 2 && c >= p->col0[1];
        const vnpu_tensor *t = &j->ctx->t[p->w[part]];
        const int64_t nl = c - p->col0[part];
        const int64_t nb_t = p->nblk;
        for (int64_t b = 0; b < p->nblk; b++) {
            float s = 0.0f, o = 0.0f;
            if (nl < p->n[part]) {
                if (t->dtype == NPL_ACCEL_DT_Q4_0 || t->dtype == NPL_ACCEL_DT_Q8_0) {
                    size_t bsz = t->dtype == NPL_ACCEL_DT_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q8_0);
                    uint16_t d;
                    memcpy(&d, j->wd[part] + ((size_t)nl * (size_t)nb_t + (size_t)b) * bsz, 2);
                    s = npl_f16_to_f32(d);
                } else {
                    int64_t qi = t->q.enc == NPL_ACCEL_QUANT_PER_AXIS ? nl
                               : t->q.enc == NPL_ACCEL_QUANT_PER_BLOCK ? nl * nb_t + b : 0;
                    s = t->q.scales[qi];
                    o = t->q.offsets ? (float)t->q.offsets[qi] : 0.0f;
                }
                if (t->dtype == NPL_ACCEL_DT_UINT8) o += 128.0f;
            }
            sc[b * p->npad + c] = s;
            if (of) of[b * p->npad + c] = o;
        }
    }
}

void vnpu_pack_fill(const vnpu_pack *p, const struct npl_accel_context *ctx, uint8_t *dst, const void *const *wdata,
                    const void *const *bdata, npl_pool *pool) {
    fill_job j = {p, ctx, dst, {wdata[0], p->n_parts == 2 ? wdata[1] : NULL}};
    if (pool) npl_pool_run(pool, fill_task, &j);
    else fill_task(&j, 0, 1);
    if (vnpu_pk_is_int(p->fmt)) fill_tables(&j);
    if (p->off_bias != VNPU_NOFF) {
        float *bias = (float *)(dst + p->off_bias);
        memset(bias, 0, (size_t)p->npad * 4);
        for (uint32_t i = 0; i < p->n_parts; i++)
            if (p->b[i] != VNPU_NONE) vnpu_to_f32(&ctx->t[p->b[i]], bdata[i], 0, p->n[i], bias + p->col0[i]);
    }
}
