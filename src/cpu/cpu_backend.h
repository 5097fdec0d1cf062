/* The CPU backend: executions for every op, kernels chosen at run time. */
#ifndef NPL_CPU_BACKEND_H
#define NPL_CPU_BACKEND_H
#include "core/backend.h"
#include "kernels/nn_kernels.h"
#include "kernels/vec_dot.h"

typedef struct {
    npl_isa isa;
    const npl_kernels *k;
    const npl_nn_kernels *nn;
} npl_cpu_ctx;

/* Fills `be` with the CPU executions using kernels for `isa` (clamped to what
 * this CPU has); `ctx` must outlive the backend. */
void npl_cpu_backend_init(npl_backend *be, npl_cpu_ctx *ctx, npl_isa isa);

/* Process-wide arithmetic, for verification runs against llama.cpp:
 * NPL_ARITH_OURS (default) our kernels; NPL_ARITH_LLAMACPP_FA llama.cpp's RoPE
 * (float theta recurrence), GEGLU (f16 gelu table) and CPU flash attention: below 64 queries its
 * key-by-key f16-accumulating path (npl_attention_llamacpp), from 64 on its
 * tiled path's f32 q; NPL_ARITH_LLAMACPP_NOFA its RoPE and its mul_mat +
 * soft_max attention (probabilities rounded to f16,
 * npl_attention_llamacpp_noflash). Read at every rope / geglu / attention op. */
enum { NPL_ARITH_OURS = 0, NPL_ARITH_LLAMACPP_FA = 1, NPL_ARITH_LLAMACPP_NOFA = 2 };
void npl_cpu_set_llamacpp_arith(int mode);

/* MatMul on tensors, y[n, m] = w[k, n] . x[k, m] (kernels/matmul.h on npl_tensor; tests and tools call it too). */
int npl_cpu_matmul(const npl_cpu_ctx *cc, npl_pool *pool, const npl_tensor *w, const npl_tensor *x,
                   npl_tensor *y, void *scratch, char *err, size_t errlen);
size_t npl_cpu_matmul_scratch(const npl_tensor *w, const npl_tensor *x);

#endif
