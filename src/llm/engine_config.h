/* MNN-style config.json for the engine: llm_model, backend_type, thread_num,
 * precision, chunk_limits, sampler keys, max_new_tokens, use_template,
 * system_prompt, reuse_kv. Relative paths resolve against the config's
 * directory. */
#ifndef NPL_ENGINE_CONFIG_H
#define NPL_ENGINE_CONFIG_H
#include <stddef.h>

#include "npullm.h"

int npl_engine_config_is_json(const char *path);
/* Overrides fields of *p from the file and writes the model path. Strings
 * it sets are stored in owned[0] (freed by the caller). 0 or -1 with err:
 * "PATH: KEY: what", the key as the file spells it. Values that would not
 * take effect are errors: backend_type other than "cpu", a precision the
 * model does not run, system_prompt with use_template false, a number cJSON
 * can only hold as infinity. */
int npl_engine_config_load(const char *path, npl_engine_params *p, char *model_path, size_t model_len,
                           char **owned, char *err, size_t errlen);

#endif
