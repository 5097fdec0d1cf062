/* aarch64 NEON (ASIMD, every aarch64 CPU) dot products: int8 products by
 * smull + sadalp (arm/arm_dot.h); the activation quantizers of every
 * aarch64 family (arm/neon/quantize_neon.c). */
#define NPL_ARM_DOTPROD 0
#include "kernels/arm/arm_dot.h"

void npl_kernels_fill_neon(npl_kernels *k, npl_vec_dot4_fn *d4) {
    arm_dot_fill(k);
    arm_dot4_fill(d4);
    npl_quantize_fill_neon(k);
}

const npl_gemv_kernels *npl_gemv_get_neon(npl_type t) { return arm_gemv(t); }
