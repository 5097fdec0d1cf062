/* The quantized-weight matmul driver over the thread pool: activations are
 * quantized to the weight type's dot partner, then a GEMM (many rows), a
 * GEMV (few rows) or vec_dot (the rest) per weight row block. Raw pointers
 * and dims, no graph types: the CPU backend and vnpu both call it. */
#ifndef NPL_KERNELS_MATMUL_H
#define NPL_KERNELS_MATMUL_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/threadpool.h"
#include "kernels/vec_dot.h"

/* y[c * ldy + r] = dot(weight row r, activation row c) for r < n, c < m.
 * Weights: n dense rows of k elements of type wtype (npl_row_size bytes
 * each). Activations: m rows of k floats, ldx floats apart. Output rows are
 * ldy floats apart (ldy >= n). */
typedef struct {
    npl_type wtype;
    const void *w;
    const void *wp; /* or NULL: the same weights packed (kernels/wpack.h), read where the family has packed kernels */
    const float *x;
    float *y;
    int64_t k, n, m;
    int64_t ldx, ldy;
    int no_gfni; /* 1: the GEMV kernels without GFNI even where the CPU has it (npl_gemv_get) */
} npl_matmul_kernel_args;

/* Scratch bytes npl_matmul_kernel needs for these weights and m activation rows
 * (enough for any ISA's path; 0 when activations are used as they are). */
size_t npl_matmul_kernel_scratch(npl_type wtype, int64_t k, int64_t m);
/* Runs the matmul with the kernels of `isa` (clamped to this CPU). -1 with a
 * message in err when there is no kernel for the type or k does not fit
 * its blocks; nothing is written then. */
int npl_matmul_kernel(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, void *scratch, char *err,
                      size_t errlen);

/* Up to NPL_MATMUL_GROUP_MAX matmuls (same activation rows, as q, k and v
 * or gate and up; any weight types) in one pool dispatch, when every member
 * takes the decode GEMV path: each row gets the bits npl_matmul_kernel gives
 * it (same quantizer, same kernel), only the dispatches are fewer. scratch[i]:
 * member i's npl_matmul_kernel_scratch. Returns 0 when done, 1 when the
 * members must run one by one (nothing written then). */
enum { NPL_MATMUL_GROUP_MAX = 4 };
int npl_matmul_kernel_group(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, int n, void *const *scratch);

/* Asks the pool's idle workers (npl_pool_prefetch) to read the first
 * `bytes` of weights that the matmuls a[0..n) (one, or a group as above)
 * read first when they take the decode GEMV path, each thread's share of
 * bytes from the front of the rows it takes first; nothing for other paths.
 * For the ops before them, which read no weights. Results do not change. */
void npl_matmul_kernel_prefetch(npl_isa isa, npl_pool *pool, const npl_matmul_kernel_args *a, int n, size_t bytes);

#endif
