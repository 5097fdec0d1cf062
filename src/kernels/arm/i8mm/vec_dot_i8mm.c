/* aarch64 i8mm family. smmla multiplies 2x8 by 8x2 int8 blocks: it pays in
 * a GEMM over two weight rows and two activation rows, which this build
 * does not have yet (arm_lookups.c), so the family's vec_dot table is the
 * dotprod one (as x86's AMX table is AVX-512's). Only reached after
 * npl_cpu_best_isa() saw HWCAP2_I8MM. */
#include "kernels/vec_dot_impl.h"

void npl_kernels_fill_i8mm(npl_kernels *k) { (void)k; }
