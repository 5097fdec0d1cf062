/* Dot-product kernels, picked once at run time by CPU features. The generic
 * C table is always available and always tested; ISA tables override entries
 * they implement. */
#ifndef NPL_VEC_DOT_H
#define NPL_VEC_DOT_H
#include "kernels/dtype.h"

/* Kernel families by level; aarch64's share the levels of x86's (one build
 * has one architecture's): NEON (ASIMD), dotprod (sdot/udot), i8mm (smmla). */
typedef enum {
    NPL_ISA_GENERIC = 0,
    NPL_ISA_AVX2 = 1,
    NPL_ISA_AVX512 = 2,
    NPL_ISA_AMX = 3,
    NPL_ISA_NEON = 1,
    NPL_ISA_DOTPROD = 2,
    NPL_ISA_I8MM = 3,
    NPL_ISA_TOP = 3 /* the highest level */
} npl_isa;

typedef struct {
    npl_isa isa;
    /* vec_dot[t]: dot of a row of type t with a row of npl_type_get(t)->vec_dot_type */
    npl_vec_dot_fn vec_dot[NPL_TYPE_COUNT];
    /* quantize an f32 activation row to the vec_dot_type (Q8_0, Q8_1, Q8_K, F16...) */
    npl_from_float_fn quantize_row[NPL_TYPE_COUNT];
} npl_kernels;

/* Best ISA this CPU supports (x86: cpuid + XCR0; AMX also needs the kernel's
 * permission, requested through arch_prctl; aarch64: getauxval HWCAP/HWCAP2). */
npl_isa npl_cpu_best_isa(void);
int npl_cpu_has_gfni(void); /* cpuid leaf 7 ECX bit 8, detected with the ISA */
const char *npl_isa_name(npl_isa isa);
/* Kernel table for an ISA no higher than `want` and no higher than the CPU
 * supports; entries an ISA lacks fall back to the next lower one. */
const npl_kernels *npl_kernels_get(npl_isa want);

/* One weight row against four activation rows, decoding the weights once
 * (for prefill): s[j * bs] = dot(x, (const char *)y + j * by), j = 0..3;
 * by in bytes, bs in floats. Same results as four vec_dot calls up to f32
 * rounding. */
typedef void (*npl_vec_dot4_fn)(int n, float *s, size_t bs, const void *x, const void *y, size_t by);
/* The four-row kernel for weights of type t that goes with
 * npl_kernels_get(want), or NULL where there is none: call vec_dot 4 times. */
npl_vec_dot4_fn npl_vec_dot4_get(npl_isa want, npl_type t);

#endif
