/* Internal: how the per-ISA kernel files hand their entries to the table
 * builder in cpu_features.c. Each fill function overrides only the entries
 * its ISA implements, on top of a table already filled by the lower ISA. */
#ifndef NPL_VEC_DOT_IMPL_H
#define NPL_VEC_DOT_IMPL_H
#include "kernels/vec_dot.h"

void npl_kernels_fill_generic(npl_kernels *k);
void npl_kernels_fill_generic_iq4(npl_kernels *k); /* generic/vec_dot_generic_iq4.c */
void npl_kernels_fill_avx2(npl_kernels *k);
void npl_kernels_fill_avx512(npl_kernels *k, int has_bf16);
/* aarch64 (kernels/arm/neon, arm/dotprod, arm/i8mm); d4: their four-row kernels */
void npl_kernels_fill_neon(npl_kernels *k, npl_vec_dot4_fn *d4);
void npl_kernels_fill_dotprod(npl_kernels *k, npl_vec_dot4_fn *d4);
void npl_kernels_fill_i8mm(npl_kernels *k);
void npl_quantize_fill_neon(npl_kernels *k); /* arm/neon/quantize_neon.c */
/* four-row kernels, indexed by weight type */
void npl_dot4_fill_avx512(npl_vec_dot4_fn *d4);

#endif
