/* aarch64 i8mm kernels. Only called after npl_cpu_best_isa() saw i8mm. */
#include "kernels/vec_dot_impl.h"

void npl_kernels_fill_i8mm(npl_kernels *k) { (void)k; }
