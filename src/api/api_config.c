/* Public config.json calls (npullm.h) over the engine's config reader. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "llm/engine_config.h"

struct npl_config {
    char model_path[4096];
    char *owned; /* the strings the file set in the params */
};

int npl_config_is_json(const char *path) { return path && npl_engine_config_is_json(path); }

npl_config *npl_config_load(const char *path, npl_engine_params *p, npl_status *status, char *err, size_t errlen) {
    npl_api_scratch scratch;
    npl_api_enter(&scratch, &status, &err, &errlen);
    if (!path || !p) {
        *status = npl_errf(err, errlen, NPL_ERR_ARGUMENT, "config: no path or no params");
        return NULL;
    }
    npl_config *c = calloc(1, sizeof *c);
    if (!c) {
        *status = npl_err_memory(err, errlen);
        return NULL;
    }
    if (npl_engine_config_load(path, p, c->model_path, sizeof c->model_path, &c->owned, err, errlen)) {
        *status = npl_status_take(NPL_ERR_FILE);
        npl_config_free(c);
        return NULL;
    }
    *status = NPL_OK;
    return c;
}

const char *npl_config_model_path(const npl_config *c) { return c ? c->model_path : ""; }

void npl_config_free(npl_config *c) {
    if (!c) return;
    free(c->owned);
    free(c);
}
