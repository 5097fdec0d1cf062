/* Matmul with quantized weights, llama.cpp's way: activations are quantized
 * on the fly to the weight type's dot partner (Q8_0, Q8_K, ...) and every
 * output is one vec_dot of a weight row with an activation row. With many
 * activation rows (prefill) and a GEMM for the weight type, the quantized
 * rows are packed once and a register-tiled GEMM (cpu/kernels/gemm.h) takes
 * blocks of weight rows instead. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "cpu/cpu_backend.h"
#include "cpu/kernels/gemm.h"

enum {
    ROW_BLOCK = 16,  /* weight rows kept hot while sweeping activations */
    GEMM_MIN_M = 16, /* fewer activation rows: decoding weights for the GEMM does not pay */
};

typedef struct {
    const npl_cpu_ctx *cc;
    const npl_tensor *w, *x;
    npl_tensor *y;
    const void *xq;      /* activations in the dot partner type */
    void *xq_out;
    size_t w_row, xq_row;
    int64_t k, n, m;
    npl_vec_dot_fn dot;
    npl_vec_dot4_fn dot4; /* one weight row against 4 activation rows, or NULL */
    const npl_gemm_kernels *gemm; /* or NULL: vec_dot path */
    npl_gemm_x xp;                /* packed activations for the GEMM */
    atomic_int next;      /* next block of weight rows to take */
} mm_job;

static void quantize_rows(void *arg, int ith, int nth) {
    mm_job *j = arg;
    npl_type vdt = npl_type_get(j->w->type)->vec_dot_type;
    npl_from_float_fn q = j->cc->k->quantize_row[vdt];
    for (int64_t r = ith; r < j->m; r += nth) {
        char *row = (char *)j->xq_out + r * j->xq_row;
        q((const float *)j->x->data + r * j->k, row, j->k);
        if (j->gemm) j->gemm->pack(&j->xp, r, row);
    }
}

static void gemm_rows(void *arg, int ith, int nth) {
    (void)ith; (void)nth;
    mm_job *j = arg;
    int64_t n_blocks = (j->n + ROW_BLOCK - 1) / ROW_BLOCK;
    for (;;) {
        int64_t blk = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (blk >= n_blocks) break;
        int64_t nb = blk * ROW_BLOCK, ne = nb + ROW_BLOCK < j->n ? nb + ROW_BLOCK : j->n;
        j->gemm->rows(j->w->data, j->w_row, nb, ne, &j->xp, j->y->data, j->n);
    }
}

static const npl_gemm_kernels *gemm_for(npl_isa isa, npl_type t, int64_t m, int64_t k) {
    return m >= GEMM_MIN_M && k <= NPL_GEMM_MAX_K ? npl_gemm_get(isa, t) : NULL;
}

/* Threads take blocks of weight rows from a shared counter rather than fixed
 * shares, so a thread the OS delays does not hold the others up. A block's
 * rows stay in cache while every activation row passes over them. */
static void dot_rows(void *arg, int ith, int nth) {
    (void)ith; (void)nth;
    mm_job *j = arg;
    const char *wb = j->w->data, *xb = j->xq;
    float *y = j->y->data;
    int64_t n_blocks = (j->n + ROW_BLOCK - 1) / ROW_BLOCK;
    for (;;) {
        int64_t blk = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (blk >= n_blocks) break;
        int64_t nb = blk * ROW_BLOCK, ne = nb + ROW_BLOCK < j->n ? nb + ROW_BLOCK : j->n;
        int64_t m = 0;
        if (j->dot4)
            for (; m + 4 <= j->m; m += 4) {
                const char *xr = xb + m * j->xq_row;
                for (int64_t r = nb; r < ne; r++)
                    j->dot4((int)j->k, y + m * j->n + r, (size_t)j->n, wb + r * j->w_row, xr, j->xq_row);
            }
        for (; m < j->m; m++) {
            const char *xr = xb + m * j->xq_row;
            float *yr = y + m * j->n;
            for (int64_t r = nb; r < ne; r++) j->dot((int)j->k, &yr[r], wb + r * j->w_row, xr);
        }
    }
}

size_t npl_cpu_matmul_scratch(const npl_tensor *w, const npl_tensor *x) {
    const npl_type_traits *t = npl_type_get(w->type);
    size_t row, total;
    if (!t || t->vec_dot_type == NPL_TYPE_F32) return 0;
    int64_t m = x->shape.ne[1] * x->shape.ne[2] * x->shape.ne[3];
    if (npl_row_size(t->vec_dot_type, x->shape.ne[0], &row) || npl_mul_size(row, (size_t)m, &total)) return 0;
    /* the best ISA's GEMM: an executor for a lower ISA just leaves this unused */
    if (gemm_for(NPL_ISA_AMX, w->type, m, x->shape.ne[0])) total += npl_gemm_x_size(m, x->shape.ne[0]);
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
        j.gemm = gemm_for(cc->isa, w->type, j.m, j.k);
        if (j.gemm) npl_gemm_x_init(&j.xp, (char *)scratch + j.xq_row * (size_t)j.m, j.m, j.k);
        npl_pool_run(pool, quantize_rows, &j);
    }
    atomic_init(&j.next, 0);
    if (j.gemm) {
        npl_pool_run(pool, gemm_rows, &j);
        return 0;
    }
    j.dot = cc->k->vec_dot[w->type];
    j.dot4 = npl_vec_dot4_get(cc->isa, w->type);
    npl_pool_run(pool, dot_rows, &j);
    return 0;
}
