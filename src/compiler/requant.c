/* Per-channel int8 / int4 requantization (see requant.h). Symmetric, as
 * QNN's per-axis weights are (offset 0): scale = max|row| / 127 (w8) or / 7
 * (w4), q = round(x / scale) clamped to the type's range. The error is
 * measured against the GGUF's own values (dequantized), so it is what the
 * requantization adds on top of the model's quantization. */
#include "compiler/requant.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h"
#include "kernels/dtype.h"

int npl_requant_rows(const npl_node *nd, int bits, npl_lower_weight *w, char *err, size_t errlen) {
    const npl_type_traits *tr = npl_type_get(nd->type);
    const int64_t k = nd->shape.ne[0], rows = nd->shape.ne[1];
    size_t row_src;
    if (!tr || !tr->to_float || nd->shape.ne[2] * nd->shape.ne[3] != 1 || npl_row_size(nd->type, k, &row_src)) {
        snprintf(err, errlen, "weight %s: type %s cannot be requantized per channel", nd->name, npl_type_name(nd->type));
        return -1;
    }
    const int qmax = bits == 4 ? 7 : 127, qmin = bits == 4 ? -8 : -127;
    int8_t *q = malloc((size_t)(k * rows));
    float *s = malloc(sizeof(float) * (size_t)rows), *x = malloc(sizeof(float) * (size_t)k);
    if (!q || !s || !x) {
        free(q), free(s), free(x);
        snprintf(err, errlen, "weight %s: out of memory", nd->name);
        return -1;
    }
    double se = 0, ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        tr->to_float((const char *)nd->data + (size_t)r * row_src, x, k);
        float amax = 0;
        for (int64_t i = 0; i < k; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        const float d = amax > 0 ? amax / (float)qmax : 1.0f; /* a zero row: any positive scale */
        s[r] = d;
        for (int64_t i = 0; i < k; i++) {
            long v = lroundf(x[i] / d);
            v = v < qmin ? qmin : v > qmax ? qmax : v;
            q[r * k + i] = (int8_t)v;
            const double e = (double)v * d - x[i];
            se += e * e;
            ss += (double)x[i] * x[i];
        }
    }
    free(x);
    w->data[0] = q;
    w->size[0] = (size_t)(k * rows);
    w->dt[0] = NPL_ACCEL_DT_INT8;
    w->scales = s;
    w->n_scales = (uint32_t)rows;
    w->rq_se = se, w->rq_ss = ss;
    return 0;
}

/* Squared error of a block at step d (values clamped to -8..7), its values into q if q. */
static double block_se(const float *x, int n, float d, int8_t *q) {
    double se = 0;
    for (int i = 0; i < n; i++) {
        long v = lroundf(x[i] / d);
        v = v < -8 ? -8 : v > 7 ? 7 : v;
        if (q) q[i] = (int8_t)v;
        const double e = (double)v * d - x[i];
        se += e * e;
    }
    return se;
}

/* LPBQ: for each row, the row scale sc = max / (t * 15) for a few t (the
 * largest block then has step max / t, t = 7 .. 8: -8 reaches further than
 * 7), each block's multiplier m in 1..15 the one of least squared error near
 * its own max / (7..8 * sc), the largest block's m fixed at 15 (the ABI's
 * float block scales then carry sc as max / 15); the t of least row error. */
int npl_requant_lpbq(const npl_node *nd, npl_lower_weight *w, char *err, size_t errlen) {
    const npl_type_traits *tr = npl_type_get(nd->type);
    const int64_t k = nd->shape.ne[0], rows = nd->shape.ne[1];
    size_t row_src;
    if (!tr || !tr->to_float || nd->shape.ne[2] * nd->shape.ne[3] != 1 || k % NPL_LPBQ_BLOCK ||
        npl_row_size(nd->type, k, &row_src)) {
        snprintf(err, errlen, "weight %s: type %s [%lld] cannot be requantized in blocks of %d", nd->name,
                 npl_type_name(nd->type), (long long)k, NPL_LPBQ_BLOCK);
        return -1;
    }
    static const float tq[4] = {7.0f, 7.5f, 8.0f, 6.5f};
    const int64_t nb = k / NPL_LPBQ_BLOCK;
    int8_t *q = malloc((size_t)(k * rows));
    float *s = malloc(sizeof(float) * (size_t)(rows * nb)), *x = malloc(sizeof(float) * (size_t)k);
    float *amax = malloc(sizeof(float) * (size_t)nb);
    uint8_t *m = malloc((size_t)nb * 2);
    if (!q || !s || !x || !amax || !m) {
        free(q), free(s), free(x), free(amax), free(m);
        snprintf(err, errlen, "weight %s: out of memory", nd->name);
        return -1;
    }
    double se = 0, ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        tr->to_float((const char *)nd->data + (size_t)r * row_src, x, k);
        float rmax = 0;
        int64_t bmax = 0;
        for (int64_t b = 0; b < nb; b++) {
            float a = 0;
            for (int i = 0; i < NPL_LPBQ_BLOCK; i++) a = fmaxf(a, fabsf(x[b * NPL_LPBQ_BLOCK + i]));
            amax[b] = a;
            if (a > rmax) rmax = a, bmax = b;
        }
        float sc = 1.0f / 15; /* a zero row: any positive scale */
        if (rmax > 0) {
            double best = INFINITY;
            for (int ti = 0; ti < 4; ti++) {
                const float c = rmax / (tq[ti] * 15.0f);
                double row_se = 0;
                uint8_t *mt = m + nb; /* this t's multipliers */
                for (int64_t b = 0; b < nb; b++) {
                    const float *xb = x + b * NPL_LPBQ_BLOCK;
                    int lo = (int)floorf(amax[b] / (8.0f * c)) - 1, hi = (int)ceilf(amax[b] / (7.0f * c)) + 1;
                    lo = lo < 1 ? 1 : lo, hi = hi > 15 ? 15 : hi;
                    if (b == bmax) lo = hi = 15;
                    double bse = INFINITY;
                    for (int mm = lo; mm <= hi; mm++) {
                        const double e = block_se(xb, NPL_LPBQ_BLOCK, c * (float)mm, NULL);
                        if (e < bse) bse = e, mt[b] = (uint8_t)mm;
                    }
                    row_se += bse;
                }
                if (row_se < best) best = row_se, sc = c, memcpy(m, mt, (size_t)nb);
            }
        } else {
            memset(m, 15, (size_t)nb);
        }
        for (int64_t b = 0; b < nb; b++) {
            const float d = sc * (float)m[b];
            s[r * nb + b] = d;
            const float *xb = x + b * NPL_LPBQ_BLOCK;
            se += block_se(xb, NPL_LPBQ_BLOCK, d, q + r * k + b * NPL_LPBQ_BLOCK);
            for (int i = 0; i < NPL_LPBQ_BLOCK; i++) ss += (double)xb[i] * xb[i];
        }
    }
    free(x), free(amax), free(m);
    w->data[0] = q;
    w->size[0] = (size_t)(k * rows);
    w->dt[0] = NPL_ACCEL_DT_INT8;
    w->scales = s;
    w->n_scales = (uint32_t)(rows * nb);
    w->block = NPL_LPBQ_BLOCK;
    w->rq_se = se, w->rq_ss = ss;
    return 0;
}

const char *npl_requant_class(const char *name) {
    static const struct { const char *part, *cls; } t[] = {
        {"attn_q.", "qkv"}, {"attn_k.", "qkv"}, {"attn_v.", "qkv"}, {"attn_qkv.", "qkv"}, {"attn_output.", "o"},
        {"ffn_gate", "gate/up"}, {"ffn_up", "gate/up"}, {"ffn_down", "down"}, {"token_embd.", "output"},
    };
    if (!name) return "other";
    if (!strncmp(name, "output.", 7)) return "output";
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strstr(name, t[i].part)) return t[i].cls;
    return "other";
}

void npl_requant_summary(FILE *o, const npl_graph *g, const npl_lower_weight *wc, int n_nodes, const char *prec) {
    /* relative RMS of (requantized - GGUF value) over each class's weights */
    static const char *const cls[] = {"qkv", "o", "gate/up", "down", "output", "other"};
    int n_blk = 0, n_ch = 0;
    for (int i = 0; i < n_nodes; i++)
        if (wc[i].scales) wc[i].block ? n_blk++ : n_ch++;
    if (n_blk)
        fprintf(o, "  requant    %s blockwise (LPBQ: 4-bit values, block %d, 4-bit block scales x a scale per output "
                "channel)%s, rel RMS error vs the GGUF's values:", prec, NPL_LPBQ_BLOCK,
                n_ch ? "; (c): per output channel" : "");
    else
        fprintf(o, "  requant    %s per output channel, rel RMS error vs the GGUF's values:", prec);
    for (int c = 0; c < 6; c++)
        for (int blk = 1; blk >= 0; blk--) {
            double se = 0, ss = 0;
            int nw = 0;
            for (int i = 0; i < n_nodes; i++)
                if (wc[i].scales && !wc[i].block == !blk && !strcmp(npl_requant_class(npl_graph_node(g, i)->name), cls[c]))
                    se += wc[i].rq_se, ss += wc[i].rq_ss, nw++;
            if (nw) fprintf(o, " %s%s %.4f (%d)", cls[c], n_blk && !blk ? "(c)" : "", sqrt(se / (ss > 0 ? ss : 1)), nw);
        }
    fprintf(o, "\n");
}
