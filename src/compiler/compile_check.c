/* compile --check: the CPU graph run at every compiled shape (the IO
 * samples), then every graph of a context binary run on them in the target
 * and compared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compile_internal.h"
#include "compiler/requant.h"
#include "core/session.h"
#include "cpu/cpu_backend.h"

/* ---- IO samples: the CPU graph run at every compiled shape ---- */

typedef struct {
    float **in;   /* per segment input (f32 / i32 bytes) */
    size_t *in_bytes;
    float *out;
    size_t out_n;
    int out_rows; /* rows of the output: the selected rows (n_out), or every row (seq) of a layer's */
} sample;

static int run_samples(const npl_model_graph *mg, const npl_hparams *hp, const npl_segment *sg, const shape_case *cases,
                       int n_cases, sample *smp, npl_pool *pool, char *err, size_t errlen) {
    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, npl_cpu_best_isa());
    int outs[NPL_SEG_MAX_IO + 1], n_outs = 0, rc = -1;
    for (int i = 0; i < sg->n_inputs; i++) outs[n_outs++] = sg->inputs[i];
    outs[n_outs++] = sg->outputs[0];
    npl_graph_session *s = pool ? npl_graph_session_new(mg->g, &be, pool, outs, n_outs, err, errlen) : NULL;
    void **kv = s ? npl_calib_bind_kv(s, hp, mg->n_ctx, "samples", err, errlen) : NULL;
    if (!kv) goto done;
    for (int c = 0; c < n_cases; c++) {
        const shape_case *k = &cases[c];
        npl_shape ss = {1, {k->seq, 1, 1, 1}}, so = {1, {k->n_out, 1, 1, 1}};
        if (npl_graph_session_set_input_id(s, mg->tokens, k->tokens, &ss) || npl_graph_session_set_input_id(s, mg->pos, k->pos, &ss) ||
            npl_graph_session_set_input_id(s, mg->out_rows, k->rows, &so) || npl_graph_session_run(s)) {
            snprintf(err, errlen, "samples: %s", npl_graph_session_error(s));
            goto done;
        }
        sample *sp = &smp[c];
        sp->in = calloc((size_t)sg->n_inputs, sizeof(float *));
        sp->in_bytes = calloc((size_t)sg->n_inputs, sizeof(size_t));
        if (!sp->in || !sp->in_bytes) goto done;
        for (int i = 0; i <= sg->n_inputs; i++) {
            const npl_tensor *t = npl_graph_session_output(s, i);
            size_t bytes = (size_t)npl_shape_nelements(&t->shape) * 4; /* f32 / i32 */
            void *cp = malloc(bytes);
            if (!cp) goto done;
            memcpy(cp, t->data, bytes);
            if (i < sg->n_inputs) {
                sp->in[i] = cp;
                sp->in_bytes[i] = bytes;
            } else {
                sp->out = cp;
                sp->out_n = bytes / 4;
                sp->out_rows = t->shape.n_dims > 1 ? (int)t->shape.ne[1] : 1;
            }
        }
    }
    rc = 0;
done:
    npl_graph_session_free(s);
    npl_calib_free_kv(kv, hp->n_layer);
    return rc;
}

static void samples_free(sample *smp, int n, int n_in) {
    for (int c = 0; c < n; c++) {
        for (int i = 0; smp[c].in && i < n_in; i++) free(smp[c].in[i]);
        free(smp[c].in);
        free(smp[c].in_bytes);
        free(smp[c].out);
    }
}

/* ---- the check: the binary as the package will hold it, against the samples ---- */

int npl_compile_check(const npl_compile_check_args *a, seg_result *r, char *err, size_t errlen) {
    const npl_accel_api *api = a->api;
    const npl_segment *sg = a->sg;
    const shape_case *cases = a->cases;
    const int n_cases = a->n_cases;
    int ok = 1, stop = 0;
    if (npl_compile_prog(a->pg, 3, 0, n_cases, "check vs CPU samples")) {
        if (a->live) api->context_free(a->live);
        return -1;
    }
    sample smp[MAX_SHAPES] = {0};
    npl_accel_context *lc = NULL;
    if (run_samples(a->mg, a->hp, sg, cases, n_cases, smp, a->pool, err, errlen)) {
        samples_free(smp, n_cases, sg->n_inputs);
        if (a->live) api->context_free(a->live);
        return -1;
    }
    /* a weight-shared binary does not load in QNN's x86 emulator: its
     * graphs run in the context that wrote it */
    if (a->live) lc = a->live;
    else if (api->context_create_from_binary(a->abe, a->dev, NULL, 0, r->bin, r->bin_size, &lc) != NPL_ACCEL_OK) ok = 0;
    float *y = NULL;
    for (int c = 0; c < n_cases && ok && !stop; c++) {
        npl_accel_graph *ag;
        npl_accel_buffer in[NPL_SEG_MAX_IO], out;
        free(y);
        if (!(y = malloc(smp[c].out_n * sizeof(float)))) { ok = 0; break; }
        for (int i = 0; i < sg->n_inputs; i++)
            in[i] = (npl_accel_buffer){r->in_names[c][i], smp[c].in[i], smp[c].in_bytes[i]};
        out = (npl_accel_buffer){r->out_names[c], y, smp[c].out_n * sizeof(float)};
        if (api->graph_retrieve(lc, r->names[c], &ag) != NPL_ACCEL_OK ||
            api->graph_execute(ag, in, (uint32_t)sg->n_inputs, &out, 1) != NPL_ACCEL_OK) {
            ok = 0;
            break;
        }
        /* relative RMS error: a max over 262144 x 128 logits of a
         * model as sensitive as Gemma measures the CPU path's own
         * int8 noise more than the lowering */
        double me = 0, se = 0, sr = 0;
        const int n_rows = smp[c].out_rows == cases[c].seq ? cases[c].seq : cases[c].n_out, by_row = n_rows != cases[c].n_out;
        const size_t row_len = smp[c].out_n / (size_t)n_rows;
        for (size_t i = 0; i < smp[c].out_n; i++) {
            const size_t row = i / row_len; /* a selected row, or (a layer's output) a row of the chunk */
            if (cases[c].pos[by_row ? (int)row : cases[c].rows[row]] < 0) continue; /* padding rows: undefined */
            double d = fabs((double)y[i] - smp[c].out[i]);
            if (!(d <= me)) me = d;
            se += d * d;
            sr += (double)smp[c].out[i] * smp[c].out[i];
        }
        r->max_err[c] = me;
        r->rel_err[c] = sqrt(se / (sr > 0 ? sr : 1));
        r->n_rows[c] = n_rows;
        for (int row = 0; row < n_rows && row < MAX_CHECK_ROWS; row++) { /* where a prefill's error sits */
            double rse = 0, rsr = 0, rme = 0, rref = 0;
            for (size_t i = (size_t)row * row_len; i < (size_t)(row + 1) * row_len; i++) {
                const double d = fabs((double)y[i] - smp[c].out[i]);
                rse += d * d, rsr += (double)smp[c].out[i] * smp[c].out[i];
                if (!(d <= rme)) rme = d;
                if (fabs(smp[c].out[i]) > rref) rref = fabs(smp[c].out[i]);
            }
            r->row_rel[c][row] = (float)sqrt(rse / (rsr > 0 ? rsr : 1)), r->row_max[c][row] = (float)rme;
            r->row_ref[c][row] = (float)rref;
        }
        if (!(r->rel_err[c] <= a->tol)) {
            snprintf(err, errlen, "graph %s: relative RMS error %.3g (max abs %.4g) over tolerance %.3g",
                     r->names[c], r->rel_err[c], me, a->tol);
            ok = -1;
        }
        stop = npl_compile_prog(a->pg, 3, c + 1, n_cases, "check vs CPU samples");
    }
    free(y);
    if (!ok) snprintf(err, errlen, "%s: %s", a->target, api->last_error(a->abe));
    if (lc) api->context_free(lc);
    samples_free(smp, n_cases, sg->n_inputs);
    if (stop) return -1;
    return ok == 1 ? 0 : 1;
}
