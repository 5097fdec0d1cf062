/* The x86 families' prefill GEMM (gemm.h): AVX2's kernels; with AMX the
 * AMX tiles (x86/amx/gemm_amx.c); the AVX-512 family without AMX reads
 * every type it has a GEMM for in AVX2's order (npl_avx512_takes_avx2),
 * with AVX-512 VNNI kernels of those bits (gemm_avx512_k.c, the k-quants;
 * gemm_avx512_q5_0.c, the 32-element blocks). Its own tile order, the
 * AVX-512 GEMM that GEMV once kept (fma per 16-element group), is gone:
 * after q8_0 moved to plain C's order no type reached it. */
#include "kernels/gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/vec_dot.h"

const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    const npl_isa best = npl_cpu_best_isa();
    if ((int)want < (int)NPL_ISA_AVX512 || (int)best < (int)NPL_ISA_AVX512)
        return (int)want >= (int)NPL_ISA_AVX2 && (int)best >= (int)NPL_ISA_AVX2 ? npl_gemm_get_avx2(t) : NULL;
    if ((int)want >= (int)NPL_ISA_AMX && (int)best >= (int)NPL_ISA_AMX) {
        const npl_gemm_kernels *a = npl_gemm_get_amx(t);
        if (a) return a;
    } else if (npl_avx512_takes_avx2(t)) {
        const npl_gemm_kernels *v = npl_gemm_get_avx512_k(t, 0);
        if (!v) v = npl_gemm_get_avx512_b32(t);
        return v ? v : npl_gemm_get_avx2(t);
    }
    /* its q4_1 vec_dot is AVX2's: that order, plain C's bits */
    return t == NPL_TYPE_Q4_1 ? npl_gemm_get_avx512_b32(t) : NULL;
}

#else
const npl_gemm_kernels *npl_gemm_get(npl_isa want, npl_type t) {
    (void)want, (void)t;
    return NULL;
}
#endif
