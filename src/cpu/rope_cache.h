/* RoPE angles shared by the rope nodes of one session. Every layer turns q
 * and k by the same angles (Gemma 3: 36 rope nodes, two bases), and their
 * sin / cos were 4.5 % of a 512-token prefill; now each (arguments,
 * positions) set is computed once per run and the other nodes read it. */
#ifndef NPL_ROPE_CACHE_H
#define NPL_ROPE_CACHE_H
#include <stdint.h>

#include "kernels/nn_kernels.h"

typedef struct npl_rope_cache npl_rope_cache;

/* The cache of *slot (made on first use), one more reference; NULL without memory. */
npl_rope_cache *npl_rope_cache_ref(npl_rope_cache **slot);
/* One reference less; the last frees the cache and clears its slot. */
void npl_rope_cache_unref(npl_rope_cache *k);
/* The cos / sin rows (npl_rope_cos_sin's layout, n_rot floats per row) of
 * `a` at the n positions pos: *fill = 1 when the caller must write them
 * (rows of negative positions are never read); NULL without memory. */
float *npl_rope_cache_rows(npl_rope_cache *k, const npl_rope_args *a, const int32_t *pos, int64_t n, int *fill);

#endif
