/* aarch64 dotprod (Armv8.2 sdot) dot products (arm/arm_dot.h). Only called
 * after npl_cpu_best_isa() saw HWCAP_ASIMDDP. */
#define NPL_ARM_DOTPROD 1
#include "kernels/arm/arm_dot.h"

void npl_kernels_fill_dotprod(npl_kernels *k, npl_vec_dot4_fn *d4) {
    arm_dot_fill(k);
    arm_dot4_fill(d4);
}

const npl_gemv_kernels *npl_gemv_get_dotprod(npl_type t) { return arm_gemv(t); }
