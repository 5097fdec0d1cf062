/* Public model API (npullm.h): the runner base (the mapping of the weights,
 * hyperparameters, kernel choice and the thread pool every session of the
 * model shares), the tokenizer and the chat template. Sessions are in
 * src/llm/session*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api_impl.h"
#include "core/status.h"
#include "kernels/vec_dot.h"
#include "llm/engine_config.h"
#include "llm/runner.h"

npl_model_params npl_model_default_params(void) {
    npl_model_params p;
    memset(&p, 0, sizeof p);
    p.kernel_family = -1;
    return p;
}

/* The GGUF a path stands for: a package directory's graph (or the model its
 * config.json names), a config.json's llm_model, else the path itself. */
static int resolve(const char *path, char *out, size_t len, char *err, size_t errlen) {
    char cfg[4200];
    struct stat sb;
    snprintf(out, len, "%s", path);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        snprintf(out, len, "%s/model.gguf", path);
        if (stat(cfg, &sb) != 0) return 0;
        path = cfg;
    }
    if (!npl_engine_config_is_json(path)) return 0;
    npl_engine_params scratch = npl_engine_default_params();
    char *owned = NULL;
    int rc = npl_engine_config_load(path, &scratch, out, len, &owned, err, errlen);
    free(owned);
    return rc;
}

npl_model *npl_model_open(const char *path, const npl_model_params *params, npl_status *status, char *err,
                          size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!path) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no model path");
        return NULL;
    }
    npl_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    m->p = params ? *params : npl_model_default_params();
    if (m->p.kernel_family > NPL_ISA_TOP || m->p.n_threads < 0 || m->p.arithmetic < NPL_ARITH_OURS ||
        m->p.arithmetic > NPL_ARITH_LLAMACPP_NOFA || m->p.repack_mib < -1) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "kernel_family %d / n_threads %d / arithmetic %d / repack_mib %d out of range",
                           m->p.kernel_family, m->p.n_threads, m->p.arithmetic, m->p.repack_mib);
        goto fail;
    }
    npl_runner_params rp = npl_runner_default_params();
    rp.n_threads = m->p.n_threads;
    rp.isa = m->p.kernel_family;
    rp.no_repack = m->p.repack_mib < 0;
    rp.repack_mib = m->p.repack_mib > 0 ? m->p.repack_mib : 0;
    rp.arith = m->p.arithmetic; /* npullm.h's 0/1/2 are NPL_ARITH_OURS / _LLAMACPP_FA / _LLAMACPP_NOFA */
    if (m->p.chat_template && !(m->tmpl_name = strdup(m->p.chat_template))) {
        *status = npl_err_memory(err, errlen);
        goto fail;
    }
    m->p.chat_template = m->tmpl_name;
    /* a directory or config.json names its model; the runner base resolves
     * the same way (a package's graph file) */
    char gpath[4096];
    if (resolve(path, gpath, sizeof gpath, err, errlen) ||
        !(m->base = npl_runner_base_open(gpath, &rp, !m->p.vocab_only, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        goto fail;
    }
    m->g = npl_runner_base_gguf(m->base);
    m->hp = *npl_runner_base_hparams(m->base);
    /* A model without a vocabulary runs on token ids (test models, ids from
     * elsewhere); one that has a vocabulary must pass its checks, and a
     * vocab_only open needs one. */
    if ((m->p.vocab_only || npl_gguf_find_key(m->g, "tokenizer.ggml.model") >= 0) &&
        !(m->tok = npl_tokenizer_load(m->g, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        goto fail;
    }
    if (m->tok && !m->p.vocab_only && npl_tokenizer_n_vocab(m->tok) > m->hp.n_vocab) {
        *status = npl_errf(err, errlen, NPL_ERR_FILE, "%s: tokenizer.ggml.tokens: %d tokens but the output layer has %d",
                           gpath, npl_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
        goto fail;
    }
    /* chat template: the one named, else detected, else by architecture; a
     * model without tokenizer.chat_template is a base model (Gemma 3 270M):
     * its prompts are completed as they are (tmpl UNKNOWN = raw), since a
     * chat template it was never tuned on makes it ramble */
    int64_t tk = npl_gguf_find_key(m->g, "tokenizer.chat_template");
    if (tk >= 0 && npl_gguf_kv_type(m->g, tk) != NPL_GGUF_STRING) {
        *status = npl_errf(err, errlen, NPL_ERR_FILE, "%s: tokenizer.chat_template: expected a string, found %s", gpath,
                           npl_gguf_vtype_name(npl_gguf_kv_type(m->g, tk)));
        goto fail;
    }
    m->tmpl = NPL_CHAT_TMPL_UNKNOWN;
    if (m->p.chat_template) {
        if (npl_chat_tmpl_from_name(m->p.chat_template, &m->tmpl, err, errlen)) {
            *status = npl_status_take(NPL_ERR_ARGUMENT);
            goto fail;
        }
    } else if (tk >= 0) {
        npl_gguf_str js;
        if (npl_gguf_get_str(m->g, "tokenizer.chat_template", &js) == 0) {
            char *copy = strndup(js.ptr, js.len);
            if (!copy) {
                *status = npl_err_memory(err, errlen);
                goto fail;
            }
            /* a template npullm does not recognise: the architecture's usual
             * family, said once through npl_model_notice */
            npl_chat_tmpl by_arch = m->hp.arch == NPL_ARCH_GEMMA3 || m->hp.arch == NPL_ARCH_GEMMA2 ? NPL_CHAT_TMPL_GEMMA
                                    : m->hp.arch == NPL_ARCH_LLAMA ? NPL_CHAT_TMPL_LLAMA3
                                                                   : NPL_CHAT_TMPL_CHATML;
            m->tmpl = npl_chat_tmpl_choose(copy, by_arch, m->notice, sizeof m->notice);
            free(copy);
        }
    }
    *status = NPL_OK;
    return m;
fail:
    npl_model_close(m);
    return NULL;
}

void npl_model_close(npl_model *m) {
    if (!m) return;
    npl_tokenizer_free(m->tok);
    npl_runner_base_close(m->base);
    free(m->tmpl_name);
    free(m->path);
    free(m);
}

const char *npl_model_arch(const npl_model *m) { return m ? m->hp.arch_name : ""; }
int npl_model_n_vocab(const npl_model *m) { return m ? m->hp.n_vocab : 0; }
int npl_model_n_ctx_train(const npl_model *m) { return m ? m->hp.n_ctx_train : 0; }
int npl_model_n_threads(const npl_model *m) { return m && m->base ? npl_runner_base_n_threads(m->base) : 0; }
const char *npl_model_notice(const npl_model *m) { return m ? m->notice : ""; }
const char *npl_model_chat_template(const npl_model *m) {
    return m && m->tmpl != NPL_CHAT_TMPL_UNKNOWN ? npl_chat_tmpl_name(m->tmpl) : "";
}

/* ---- this build and this CPU ---- */

int npl_kernel_families_built(void) {
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    return NPL_ISA_TOP + 1; /* x86: plain C .. AMX; aarch64: plain C .. i8mm */
#else
    return 1; /* per-ISA kernels are compiled for x86 and aarch64 only */
#endif
}

const char *npl_kernel_family_name(int family) {
    return family >= 0 && family <= NPL_ISA_TOP ? npl_isa_name((npl_isa)family) : "?";
}

int npl_kernel_family_best(void) { return (int)npl_cpu_best_isa(); }
