/* aarch64 neon kernels. Only called after npl_cpu_best_isa() saw neon. */
#include "kernels/vec_dot_impl.h"

void npl_kernels_fill_neon(npl_kernels *k) { (void)k; }
