/* What the public handles hold (src/api/): shared by the files that
 * implement npullm.h's model calls and npullm_tokenizer.h. */
#ifndef NPL_API_IMPL_H
#define NPL_API_IMPL_H
#include "format/gguf.h"
#include "llm/tokenizer.h"
#include "models/model.h"
#include "npullm.h"

struct npl_model {
    char *path;         /* as given: sessions open their runner on it */
    npl_model_params p;
    npl_gguf *g;        /* the GGUF (a package's graph file) */
    npl_hparams hp;
    npl_tokenizer *tok;
};

#endif
