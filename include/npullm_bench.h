/* npullm bench: the CPU backend's own f32 matmul at a given shape, the
 * figure an accelerator is compared with (npullm bench-matmul). It runs the
 * same code a model's matmuls run on the CPU, with the library's thread
 * pool; kernel-level benchmarks (per ISA, per quant type) are internal and
 * live in bench/.
 *
 *   npl_bench_matmul *b = npl_bench_matmul_new(m, k, n, a, bmat, 0, NULL, err, sizeof err);
 *   npl_bench_matmul_run(b, c);   // c[m, n] = a[m, k] . bmat[k, n]; time it
 *   npl_bench_matmul_free(b); */
#ifndef NPULLM_BENCH_H
#define NPULLM_BENCH_H

#include "npullm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npl_bench_matmul npl_bench_matmul;

/* a [m, k] and b [k, n] row-major f32, copied into the backend's layout
 * (b transposed, as weights are stored); a must stay valid (it is read in
 * place by each run). n_threads 0 = one per core. NULL on failure. */
NPL_API npl_bench_matmul *npl_bench_matmul_new(int m, int k, int n, const float *a, const float *b, int n_threads,
                                               npl_status *status, char *err, size_t errlen);
/* c [m, n] = a . b on the CPU backend: NPL_OK or an error (last_error says). */
NPL_API npl_status npl_bench_matmul_run(npl_bench_matmul *bm, float *c);
/* "f32/avx2": the kernel that runs. */
NPL_API const char *npl_bench_matmul_kernel(const npl_bench_matmul *bm);
NPL_API const char *npl_bench_matmul_last_error(const npl_bench_matmul *bm);
NPL_API void npl_bench_matmul_free(npl_bench_matmul *bm);

#ifdef __cplusplus
}
#endif
#endif
