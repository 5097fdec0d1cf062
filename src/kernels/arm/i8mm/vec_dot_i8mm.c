/* aarch64 i8mm family. smmla multiplies 2x8 by 8x2 int8 blocks: it pays in
 * the prefill GEMM over two weight rows and two activation rows
 * (gemm_i8mm.c, looked up by arm_lookups.c), not in one-row dot products, so
 * the family's vec_dot, dot4 and GEMV are the dotprod ones (as x86's AMX
 * table is AVX-512's), whose arithmetic the GEMM reproduces bit for bit.
 * Only reached after npl_cpu_best_isa() saw HWCAP2_I8MM. */
#include "kernels/vec_dot_impl.h"

void npl_kernels_fill_i8mm(npl_kernels *k) { (void)k; }
