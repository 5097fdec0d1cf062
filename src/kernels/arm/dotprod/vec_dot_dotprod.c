/* aarch64 dotprod kernels. Only called after npl_cpu_best_isa() saw dotprod. */
#include "kernels/vec_dot_impl.h"

void npl_kernels_fill_dotprod(npl_kernels *k) { (void)k; }
