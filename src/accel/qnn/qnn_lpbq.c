/* 4-bit blockwise expansion ("LPBQ") weights for QNN HTP.
 *
 * The ABI's PER_BLOCK weights (INT8 [N, K] holding -8..7, a float scale per
 * block of K) become QNN's blockwise expansion: a float scale per output
 * channel and a 4-bit unsigned multiplier per block, so the block scales
 * must be channel scale x 1..15 (the compiler's requant.c makes them so: the
 * largest of each channel is 15 x its scale).
 *
 * The emulator's blockwise-expansion FullyConnected is shape-fragile
 * (uint16 activations, SM8650 / v75, measured with block-varying weights,
 * docs/qnn-lpbq-shapes.md): some K x N finalize with MEM_ALLOC, some
 * finalize and compute wrong numbers. qnn_lpbq_slice gives
 * the output-channel slice width the lowering (qnn_ops.c) cuts N into; the
 * compiler's check runs every lowered graph against the CPU path and a graph
 * that still computes wrong falls back to the CPU.
 *
 * The arrays an LPBQ tensor hands QNN (its per-channel scales, 4-bit block
 * multipliers, a slice's weights) have zeroed padding after them
 * (qnn_zalloc_padded): with plain malloc, 1 in 8 compiles of the tiny
 * blockwise llama came out computing 1.6-3x its error (test_qnn_lpbq: logits
 * rel RMS 0.42-0.88 against 0.245; 4 of 32 runs next to test_qnn_int16),
 * with the padding none of 64; garbage after the multipliers moved the
 * results: QNN's finalize reads past them. The same compile now gives the
 * same binary (it did not, run to run): test_qnn_lpbq asserts it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

npl_accel_status qnn_lpbq_factor(npl_accel_backend *be, qnn_tensor *t, const int8_t *values) {
    const uint32_t N = t->dims[0], K = t->dims[1], nb = K / t->quant.block_size;
    for (uint64_t i = 0; i < (uint64_t)N * K; i++)
        if (values[i] < -8 || values[i] > 7)
            return qnn_fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: tensor '%s': per-block weights need 4-bit values "
                            "(-8..7) for QNN's blockwise expansion; element %llu is %d", t->name, (unsigned long long)i, values[i]);
    for (uint32_t i = 0; i < t->quant.n_scales; i++)
        if (t->quant.offsets && t->quant.offsets[i])
            return qnn_fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: tensor '%s': per-block weights must be symmetric "
                            "(offset 0) for QNN's blockwise expansion", t->name);
    t->lpbq_sc = qnn_zalloc_padded(sizeof(float) * N);
    t->lpbq_m = qnn_zalloc_padded((size_t)N * nb);
    t->lpbq_nb = nb;
    if (!t->lpbq_sc || !t->lpbq_m) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    for (uint32_t n = 0; n < N; n++) {
        const float *s = t->quant.scales + (size_t)n * nb;
        float mx = 0;
        for (uint32_t b = 0; b < nb; b++) mx = fmaxf(mx, s[b]);
        const float sc = mx / 15.0f;
        t->lpbq_sc[n] = sc;
        for (uint32_t b = 0; b < nb; b++) {
            const long m = lroundf(s[b] / sc);
            /* a relative 1e-5: the compiler's float product sc * m, not a finer scale rounded */
            if (m < 1 || m > 15 || fabsf((float)m * sc - s[b]) > 1e-5f * s[b])
                return qnn_fail(be, NPL_ACCEL_ERR_UNSUPPORTED, "qnn-htp: tensor '%s': block scale %u of channel %u "
                                "(%g) is not the channel's scale (its largest block scale / 15 = %g) times an integer "
                                "1..15, which QNN's blockwise expansion needs", t->name, b, n, (double)s[b], (double)sc);
            t->lpbq_m[(size_t)n * nb + b] = (uint8_t)m;
        }
    }
    return NPL_ACCEL_OK;
}

/* Measured (FullyConnected, uint16 activations, SM8650 / v75, block 32, the
 * output of each 32-channel group against a double reference, M = 1 / 16 /
 * 128 rows): N > K fails (finalize MEM_ALLOC: 128x512, 640x1024, 576x1536,
 * 640x2048; or wrong numbers: 128x256); N over 256 computes the channels
 * past 256 wrong in some shapes (1024x512, 1536x576, 2048x320 at M = 16)
 * though not in others (640x640, 1024x640); at M = 128, K = 1792 and 2048
 * go wrong past channel 64 (2048x128, 2048x256, 1792x256) while 1536x256
 * and 2048x64 are right. So: slices of min(256, K) output channels, 64 for
 * K over 1536 — every slice shape here correct at M = 1, 16 and 128.
 * Narrower slices are right alone too but finalize unrepeatably inside a
 * whole graph (docs/qnn-lpbq-shapes.md), so the compiler's retry after a
 * refused finalize goes per channel instead (compile_lower.c). */
uint32_t qnn_lpbq_slice(uint32_t K, uint32_t N) {
    uint32_t cap = 256;
    if (K > 1536) cap = 64;
    while (cap > K && cap > 32) cap >>= 1;
    return N <= cap ? N : cap;
}

npl_accel_status qnn_weight_rows(npl_accel_context *c, npl_accel_tensor_id id, uint32_t n0, uint32_t n, npl_accel_tensor_id *out) {
    npl_accel_backend *be = c->be;
    char *name = malloc(strlen(c->t[id].name) + 32);
    if (!name) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    sprintf(name, "%s.n%u_%u", c->t[id].name, n0, n);
    qnn_tensor *t;
    npl_accel_status st = qnn_derived_tensor(c, name, out, &t);
    if (st != NPL_ACCEL_OK || !t) return st;
    const qnn_tensor *w = &c->t[id];
    const uint32_t K = w->dims[1];
    const uint64_t row = (uint64_t)K * qnn_elem_bytes(w->dtype);
    /* scales per row: 1 per channel (per axis 0), nb per channel (per block) */
    const uint32_t per = w->quant.encoding == NPL_ACCEL_QUANT_PER_AXIS ? 1 : w->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK ? K / w->quant.block_size : 0;
    *t = *w;
    t->name = name;
    t->dims[0] = n;
    t->bytes = row * n;
    t->quant.scales = NULL, t->quant.offsets = NULL, t->lpbq_sc = NULL, t->lpbq_m = NULL;
    t->data = w->lpbq_m ? qnn_zalloc_padded(t->bytes) : malloc(t->bytes);
    int ok = t->data != NULL;
    if (ok) memcpy(t->data, (const uint8_t *)w->data + row * n0, t->bytes);
    if (ok && per) {
        t->quant.n_scales = n * per;
        float *s = malloc(sizeof *s * t->quant.n_scales);
        int32_t *o = malloc(sizeof *o * t->quant.n_scales);
        if (s) memcpy(s, w->quant.scales + (size_t)n0 * per, sizeof *s * t->quant.n_scales);
        if (o) memcpy(o, w->quant.offsets + (size_t)n0 * per, sizeof *o * t->quant.n_scales);
        t->quant.scales = s, t->quant.offsets = o;
        ok = s && o;
    }
    if (ok && w->lpbq_m) {
        t->lpbq_sc = qnn_zalloc_padded(sizeof(float) * n);
        t->lpbq_m = qnn_zalloc_padded((size_t)n * w->lpbq_nb);
        if (t->lpbq_sc) memcpy(t->lpbq_sc, w->lpbq_sc + n0, sizeof(float) * n);
        if (t->lpbq_m) memcpy(t->lpbq_m, w->lpbq_m + (size_t)n0 * w->lpbq_nb, (size_t)n * w->lpbq_nb);
        ok = t->lpbq_sc && t->lpbq_m;
    }
    if (!ok) {
        qnn_tensor_release(t);
        return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    *out = c->n_t++;
    return NPL_ACCEL_OK;
}
