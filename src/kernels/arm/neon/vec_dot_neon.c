/* aarch64 NEON (ASIMD, every aarch64 CPU) dot products: int8 products by
 * smull + sadalp (arm/arm_dot.h). */
#define NPL_ARM_DOTPROD 0
#include "kernels/arm/arm_dot.h"

void npl_kernels_fill_neon(npl_kernels *k, npl_vec_dot4_fn *d4) {
    arm_dot_fill(k);
    arm_dot4_fill(d4);
}

const npl_gemv_kernels *npl_gemv_get_neon(npl_type t) { return arm_gemv(t); }
