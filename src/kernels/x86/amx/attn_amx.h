/* The attention kernel of the AMX family (attn_amx.c), shared by the CPU
 * backend and vnpu so that both compute one arithmetic at every query count.
 *
 * Per call, the attended cache rows of each kv head are prepared once (bf16
 * hi/lo K, transposed V), then tiles of 16 rows (the heads of a group for
 * 16 / group nearby queries) run across the pool. A row's result depends
 * only on its q, its attended range and the cache: key blocks start at
 * absolute multiples of NPL_ATTN_AMX_KG and blocks a row does not attend are
 * exact no-ops for it, so 1, 16 or 512 queries per call give the same bits. */
#ifndef NPL_ATTN_AMX_H
#define NPL_ATTN_AMX_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/threadpool.h"
#include "kernels/nn_kernels.h"

#define NPL_ATTN_AMX_KG 64 /* keys per block (and per prepared group) */

#if defined(__x86_64__) || defined(__i386__)
/* Shapes the tile kernel takes: hd a multiple of 32 up to 512, group sizes
 * dividing 16. Others go to the AVX-512 kernel (on every caller alike). */
int npl_attn_amx_fits(int n_head, int n_kv, int hd);

/* Scratch bytes for npl_attention_amx over a cache of n_ctx rows with a
 * pool of nth threads. */
size_t npl_attn_amx_scratch(int64_t n_ctx, int n_kv, int hd, int nth);

/* Attention over a (contract of npl_attn_args in nn_kernels.h) on the pool
 * (NULL: the calling thread). AMX family only (tile permission granted),
 * shapes that npl_attn_amx_fits; scratch of npl_attn_amx_scratch(n_ctx, ...)
 * bytes for a cache of at most n_ctx rows. */
void npl_attention_amx(const npl_attn_args *a, int64_t n_ctx, void *scratch, npl_pool *pool);
#else
/* attn_amx.c is built for x86 only: elsewhere no shape fits, so its callers
 * (the CPU backend, vnpu) never reach the other two. */
static inline int npl_attn_amx_fits(int n_head, int n_kv, int hd) { return (void)n_head, (void)n_kv, (void)hd, 0; }
static inline size_t npl_attn_amx_scratch(int64_t n_ctx, int n_kv, int hd, int nth) {
    return (void)n_ctx, (void)n_kv, (void)hd, (void)nth, 0;
}
static inline void npl_attention_amx(const npl_attn_args *a, int64_t n_ctx, void *scratch, npl_pool *pool) {
    (void)a, (void)n_ctx, (void)scratch, (void)pool;
}
#endif

#endif
