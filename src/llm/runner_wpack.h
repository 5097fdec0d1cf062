/* Packing a model's matmul weights for its CPU family (kernels/wpack.h). */
#ifndef NPL_RUNNER_WPACK_H
#define NPL_RUNNER_WPACK_H
#include <stddef.h>

#include "format/gguf.h"
#include "kernels/wpack.h"
#include "models/model.h"

/* The default budget of packed copies: what keeps a small model's RssAnon
 * after open within 64 MiB (Gemma 3 270M: its 41.6 MiB of q5_0). */
enum { NPL_WPACK_DEFAULT_MIB = 48 };

/* Fills tab with packed copies of the weights the model's matmuls read
 * where family isa has packed kernels for them, at most `budget` bytes
 * (none: tab stays empty); their original pages leave the process unless
 * another op reads them. 0, or -1 with err filled (tab empty then). */
int npl_runner_wpack_build(npl_wpack_table *tab, const npl_gguf *f, const npl_hparams *hp, npl_isa isa, size_t budget,
                           char *err, size_t errlen);

#endif
