/* Public model/session API (npullm.h): thin handles over the GGUF reader,
 * the tokenizer and the runner. A model holds the file's metadata and
 * vocabulary; each session opens a runner on the model's path (its own
 * mapping of the weights until issue 18 shares them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api_impl.h"
#include "core/status.h"
#include "kernels/vec_dot.h"
#include "llm/engine_config.h"
#include "llm/runner.h"

struct npl_session {
    npl_model *m;
    npl_runner *r;
    char err[512];
};

npl_model_params npl_model_default_params(void) {
    npl_model_params p;
    memset(&p, 0, sizeof p);
    p.kernel_family = -1;
    return p;
}

npl_session_params npl_session_default_params(void) {
    npl_session_params p;
    memset(&p, 0, sizeof p);
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
        m->p.arithmetic > NPL_ARITH_LLAMACPP_NOFA) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "kernel_family %d / n_threads %d / arithmetic %d out of range",
                           m->p.kernel_family, m->p.n_threads, m->p.arithmetic);
        goto fail;
    }
    char gpath[4096];
    if (resolve(path, gpath, sizeof gpath, err, errlen) || !(m->g = npl_gguf_open(gpath, NULL, err, errlen)) ||
        npl_hparams_load(m->g, &m->hp, err, errlen)) {
        *status = npl_status_take(NPL_ERR_FILE);
        goto fail;
    }
    /* A model without a vocabulary runs on token ids (test models, ids from
     * elsewhere); one that has a vocabulary must pass its checks, and a
     * vocab_only open needs one. */
    if ((m->p.vocab_only || npl_gguf_find_key(m->g, "tokenizer.ggml.model") >= 0) &&
        !(m->tok = npl_tokenizer_load(m->g, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        goto fail;
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
    npl_gguf_close(m->g);
    free(m->path);
    free(m);
}

const char *npl_model_arch(const npl_model *m) { return m ? m->hp.arch_name : ""; }
int npl_model_n_vocab(const npl_model *m) { return m ? m->hp.n_vocab : 0; }
int npl_model_n_ctx_train(const npl_model *m) { return m ? m->hp.n_ctx_train : 0; }

npl_session *npl_session_new(npl_model *m, const npl_session_params *params, npl_status *status, char *err,
                             size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!m) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "no model");
        return NULL;
    }
    if (m->p.vocab_only) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s: opened vocab_only: no sessions", m->path);
        return NULL;
    }
    npl_session_params sp = params ? *params : npl_session_default_params();
    if (sp.profile < 0 || sp.profile > 3) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "profile %d out of range [0, 3]", sp.profile);
        return NULL;
    }
    npl_session *s = calloc(1, sizeof *s);
    if (!s) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    npl_runner_params rp = npl_runner_default_params();
    rp.n_ctx = sp.n_ctx;
    rp.kv_budget = sp.kv_budget_bytes;
    rp.n_threads = m->p.n_threads;
    rp.isa = m->p.kernel_family;
    rp.arith = m->p.arithmetic; /* npullm.h's 0/1/2 are NPL_ARITH_OURS / _LLAMACPP_FA / _LLAMACPP_NOFA */
    rp.profile = sp.profile;
    s->m = m;
    if (!(s->r = npl_runner_open(m->path, &rp, err, errlen))) {
        *status = npl_status_take(NPL_ERR_FILE);
        free(s);
        return NULL;
    }
    *status = NPL_OK;
    return s;
}

void npl_session_free(npl_session *s) {
    if (!s) return;
    npl_runner_close(s->r);
    free(s);
}

int npl_session_n_ctx(const npl_session *s) { return s ? npl_runner_n_ctx(s->r) : 0; }
int npl_session_n_threads(const npl_session *s) { return s ? npl_runner_n_threads(s->r) : 0; }
const char *npl_session_kernel_family(const npl_session *s) { return s ? npl_runner_isa(s->r) : ""; }
const char *npl_session_last_error(const npl_session *s) { return s ? s->err : "no session"; }

const float *npl_session_forward(npl_session *s, const int32_t *tokens, int n, int pos0, int n_out,
                                 npl_status *status) {
    npl_status st_unused;
    if (!status) status = &st_unused;
    if (!s) {
        *status = NPL_ERR_ARGUMENT;
        return NULL;
    }
    npl_status_clear();
    s->err[0] = 0;
    const int n_vocab = s->m->hp.n_vocab;
    if (!tokens || n < 1 || n_out < 1 || n_out > n || pos0 < 0 || pos0 > npl_runner_n_ctx(s->r) - n) {
        *status = npl_errf(s->err, sizeof s->err, NPL_ERR_ARGUMENT,
                           "forward: %d tokens at %d (%d outputs) do not fit a context of %d", n, pos0, n_out,
                           npl_runner_n_ctx(s->r));
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab) {
            *status = npl_errf(s->err, sizeof s->err, NPL_ERR_ARGUMENT, "forward: token %d: id %d out of [0, %d)",
                               i, tokens[i], n_vocab);
            return NULL;
        }
    const float *lg = npl_runner_forward(s->r, tokens, n, pos0, n_out, s->err, sizeof s->err);
    *status = lg ? NPL_OK : npl_status_take(NPL_ERR_RUNTIME);
    return lg;
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
