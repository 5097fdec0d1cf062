/* The aarch64 build's GEMM and GEMV lookups (x86 has its own in
 * x86/avx512). None yet: every family's matmul takes the vec_dot path, one
 * weight row against one activation row, so a row gets the same bits in
 * decode and in a prefill batch. */
#include "kernels/gemm.h"
#include "kernels/gemv.h"

const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    (void)want, (void)t;
    return NULL;
}

const npl_gemv_kernels *npl_gemv_get(npl_isa want, npl_type t, int gfni) {
    (void)want, (void)t, (void)gfni;
    return NULL;
}
