/* What the public handles hold (src/api/): shared by the files that
 * implement npullm.h's model calls and npullm_tokenizer.h. */
#ifndef NPL_API_IMPL_H
#define NPL_API_IMPL_H
#include "format/gguf.h"
#include "llm/tokenizer.h"
#include "models/model.h"
#include "llm/session_impl.h"
#include "npullm.h"

/* struct npl_model and struct npl_session: src/llm/session_impl.h */

#endif
