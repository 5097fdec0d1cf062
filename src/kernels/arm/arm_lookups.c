/* The aarch64 build's GEMM and GEMV lookups (x86 has its own in
 * x86/avx512). The GEMM is i8mm's (arm/i8mm/gemm_i8mm.c); without i8mm
 * prefill takes the vec_dot path (dot4: four activation rows per decoded
 * weight block). The GEMV (arm/arm_dot.h) and the GEMM compute vec_dot's
 * arithmetic, so decode, small batches and prefill give a row the same
 * bits. */
#include "kernels/gemm.h"
#include "kernels/gemv.h"

const npl_gemv_kernels *npl_gemv_get_neon(npl_type t);
const npl_gemv_kernels *npl_gemv_get_dotprod(npl_type t);

const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    if ((int)want < (int)NPL_ISA_I8MM || (int)npl_cpu_best_isa() < (int)NPL_ISA_I8MM) return NULL;
    return npl_gemm_get_i8mm(t);
}

const npl_gemv_kernels *npl_gemv_get(npl_isa want, npl_type t, int gfni) {
    (void)gfni;
    const npl_isa best = npl_cpu_best_isa();
    const int isa = (int)want < (int)best ? (int)want : (int)best;
    if (isa >= NPL_ISA_DOTPROD) return npl_gemv_get_dotprod(t); /* i8mm: dotprod's */
    if (isa >= NPL_ISA_NEON) return npl_gemv_get_neon(t);
    return NULL;
}
