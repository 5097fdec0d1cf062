/* Public CPU matmul benchmark entry (npullm_bench.h) over npl_cpu_matmul. */
#include <stdio.h>
#include <stdlib.h>

#include "core/status.h"
#include "cpu/cpu_backend.h"
#include "kernels/dtype.h"
#include "kernels/threadpool.h"
#include "kernels/vec_dot.h"
#include "npullm_bench.h"

struct npl_bench_matmul {
    int m, k, n;
    npl_pool *pool;
    npl_cpu_ctx cc;
    float *wt;              /* b as the backend stores weights: n rows of k */
    npl_tensor w, x;
    char kernel[48], err[256];
};

npl_bench_matmul *npl_bench_matmul_new(int m, int k, int n, const float *a, const float *b, int n_threads,
                                       npl_status *status, char *err, size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!a || !b || m < 1 || k < 1 || n < 1 || (long long)m * k > (1LL << 28) || (long long)k * n > (1LL << 28) ||
        (long long)m * n > (1LL << 28) || n_threads < 0) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "bench matmul: shape [%d, %d] x [%d, %d] or %d threads not "
                           "supported (at most 2^28 elements per matrix)", m, k, k, n, n_threads);
        return NULL;
    }
    npl_bench_matmul *bm = calloc(1, sizeof *bm);
    if (!bm || !(bm->pool = npl_pool_new(n_threads)) || !(bm->wt = malloc(sizeof(float) * (size_t)k * n))) {
        npl_bench_matmul_free(bm);
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    bm->m = m, bm->k = k, bm->n = n;
    for (int l = 0; l < k; l++)
        for (int q = 0; q < n; q++) bm->wt[(size_t)q * k + l] = b[(size_t)l * n + q];
    npl_backend be;
    npl_cpu_backend_init(&be, &bm->cc, npl_cpu_best_isa());
    bm->w = (npl_tensor){NPL_TYPE_F32, {2, {k, n, 1, 1}}, bm->wt};
    bm->x = (npl_tensor){NPL_TYPE_F32, {2, {k, m, 1, 1}}, (void *)a};
    snprintf(bm->kernel, sizeof bm->kernel, "f32/%s", npl_isa_name(bm->cc.isa));
    *status = NPL_OK;
    return bm;
}

npl_status npl_bench_matmul_run(npl_bench_matmul *bm, float *c) {
    if (!bm || !c) return NPL_ERR_ARGUMENT;
    npl_status_clear();
    npl_tensor y = {NPL_TYPE_F32, {2, {bm->n, bm->m, 1, 1}}, c};
    if (npl_cpu_matmul(&bm->cc, bm->pool, &bm->w, &bm->x, &y, NULL, bm->err, sizeof bm->err))
        return npl_status_take(NPL_ERR_RUNTIME);
    return NPL_OK;
}

const char *npl_bench_matmul_kernel(const npl_bench_matmul *bm) { return bm ? bm->kernel : ""; }
const char *npl_bench_matmul_last_error(const npl_bench_matmul *bm) { return bm ? bm->err : "no benchmark"; }

void npl_bench_matmul_free(npl_bench_matmul *bm) {
    if (!bm) return;
    npl_pool_free(bm->pool);
    free(bm->wt);
    free(bm);
}
