/* Packing a model's matmul weights for its CPU family (kernels/wpack.h). */
#ifndef NPL_RUNNER_WPACK_H
#define NPL_RUNNER_WPACK_H
#include <stddef.h>

#include "format/gguf.h"
#include "kernels/wpack.h"
#include "models/model.h"

/* Fills tab with packed copies of the weights the model's matmuls read
 * where family isa has packed kernels for them (none: tab stays empty);
 * their original pages leave the process unless another op reads them.
 * 0, or -1 with err filled (tab empty then). */
int npl_runner_wpack_build(npl_wpack_table *tab, const npl_gguf *f, const npl_hparams *hp, npl_isa isa, char *err,
                           size_t errlen);

#endif
