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
    fprintf(o, "  requant    %s per output channel, rel RMS error vs the GGUF's values:", prec);
    for (int c = 0; c < 6; c++) {
        double se = 0, ss = 0;
        int nw = 0;
        for (int i = 0; i < n_nodes; i++)
            if (wc[i].scales && !strcmp(npl_requant_class(npl_graph_node(g, i)->name), cls[c]))
                se += wc[i].rq_se, ss += wc[i].rq_ss, nw++;
        if (nw) fprintf(o, " %s %.4f (%d)", cls[c], sqrt(se / (ss > 0 ? ss : 1)), nw);
    }
    fprintf(o, "\n");
}
