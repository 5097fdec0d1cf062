/* Matmul with quantized weights, llama.cpp's way: activations are quantized
 * on the fly to the weight type's dot partner (Q8_0, Q8_K, ...) and every
 * output is one vec_dot of a weight row with an activation row. */
#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "cpu/cpu_backend.h"

enum { ROW_BLOCK = 16 }; /* weight rows kept hot while sweeping activations */

typedef struct {
    const npl_cpu_ctx *cc;
    const npl_tensor *w, *x;
    npl_tensor *y;
    const void *xq;      /* activations in the dot partner type */
    void *xq_out;
    size_t w_row, xq_row;
    int64_t k, n, m;
} mm_job;

static void quantize_rows(void *arg, int ith, int nth) {
    mm_job *j = arg;
    npl_type vdt = npl_type_get(j->w->type)->vec_dot_type;
    npl_from_float_fn q = j->cc->k->quantize_row[vdt];
    for (int64_t r = ith; r < j->m; r += nth)
        q((const float *)j->x->data + r * j->k, (char *)j->xq_out + r * j->xq_row, j->k);
}

static void dot_rows(void *arg, int ith, int nth) {
    mm_job *j = arg;
    npl_vec_dot_fn dot = j->cc->k->vec_dot[j->w->type];
    /* split output rows evenly; rows of a block stay in cache across all m */
    int64_t per = (j->n + nth - 1) / nth;
    int64_t n0 = per * ith, n1 = n0 + per < j->n ? n0 + per : j->n;
    const char *wb = j->w->data;
    const char *xb = j->xq;
    float *y = j->y->data;
    for (int64_t nb = n0; nb < n1; nb += ROW_BLOCK) {
        int64_t ne = nb + ROW_BLOCK < n1 ? nb + ROW_BLOCK : n1;
        for (int64_t m = 0; m < j->m; m++) {
            const char *xr = xb + m * j->xq_row;
            float *yr = y + m * j->n;
            for (int64_t r = nb; r < ne; r++) dot((int)j->k, &yr[r], wb + r * j->w_row, xr);
        }
    }
}

size_t npl_cpu_matmul_scratch(const npl_tensor *w, const npl_tensor *x) {
    const npl_type_traits *t = npl_type_get(w->type);
    size_t row, total;
    if (!t || t->vec_dot_type == NPL_TYPE_F32) return 0;
    int64_t m = x->shape.ne[1] * x->shape.ne[2] * x->shape.ne[3];
    if (npl_row_size(t->vec_dot_type, x->shape.ne[0], &row) || npl_mul_size(row, (size_t)m, &total)) return 0;
    return total;
}

int npl_cpu_matmul(const npl_cpu_ctx *cc, npl_pool *pool, const npl_tensor *w, const npl_tensor *x,
                   npl_tensor *y, void *scratch, char *err, size_t errlen) {
    const npl_type_traits *t = npl_type_get(w->type);
    mm_job j = {.cc = cc, .w = w, .x = x, .y = y};
    j.k = w->shape.ne[0];
    j.n = w->shape.ne[1];
    j.m = x->shape.ne[1] * x->shape.ne[2] * x->shape.ne[3];
    if (!t || !cc->k->vec_dot[w->type] || x->type != NPL_TYPE_F32) {
        snprintf(err, errlen, "matmul: no kernel for %s weights", npl_type_name(w->type));
        return -1;
    }
    if (npl_row_size(w->type, j.k, &j.w_row)) {
        snprintf(err, errlen, "matmul: row of %lld not a multiple of the %s block", (long long)j.k, t->name);
        return -1;
    }
    if (t->vec_dot_type == NPL_TYPE_F32) {
        j.xq = x->data;
        j.xq_row = (size_t)j.k * sizeof(float);
    } else {
        if (!cc->k->quantize_row[t->vec_dot_type] || npl_row_size(t->vec_dot_type, j.k, &j.xq_row)) {
            snprintf(err, errlen, "matmul: cannot convert activations to %s", npl_type_name(t->vec_dot_type));
            return -1;
        }
        j.xq_out = scratch;
        j.xq = scratch;
        npl_pool_run(pool, quantize_rows, &j);
    }
    npl_pool_run(pool, dot_rows, &j);
    return 0;
}
