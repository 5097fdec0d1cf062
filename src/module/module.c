/* Module (see module.h). */
#include "module/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "format/graph_file.h"

struct npl_module {
    npl_gguf *file;
    npl_graph *g;
    npl_cpu_ctx cc;
    npl_backend be;
    npl_pool *pool;
    npl_graph_session *s;
    char err[512];
};

npl_module_params npl_module_default_params(void) {
    npl_module_params p = {0, -1, NULL, NULL};
    return p;
}

void npl_module_free(npl_module *m) {
    if (!m) return;
    npl_graph_session_free(m->s);
    npl_pool_free(m->pool);
    npl_graph_free(m->g);
    npl_gguf_close(m->file);
    free(m);
}

npl_module *npl_module_load(const char *path, const char *const *outputs, int n_outputs,
                            const npl_module_params *p, char *err, size_t errlen) {
    npl_module_params dp = npl_module_default_params();
    if (!p) p = &dp;
    npl_module *m = calloc(1, sizeof(*m));
    int *ids = calloc((size_t)(n_outputs > 0 ? n_outputs : 1), sizeof(int));
    if (!m || !ids) {
        npl_err_memory(err, errlen);
        goto fail;
    }
    if (!(m->file = npl_gguf_open(path, NULL, err, errlen))) goto fail;
    if (!(m->g = npl_graph_file_load(m->file, err, errlen))) goto fail;
    for (int i = 0; i < n_outputs; i++)
        if ((ids[i] = npl_graph_find(m->g, outputs[i])) < 0) {
            npl_errf(err, errlen, NPL_ERR_ARGUMENT, "%s: no node named '%s'", path, outputs[i]);
            goto fail;
        }
    npl_cpu_backend_init(&m->be, &m->cc, p->isa < 0 ? npl_cpu_best_isa() : (npl_isa)p->isa);
    if (p->configure && p->configure(&m->be, p->user)) {
        snprintf(err, errlen, "%s: backend configuration failed", path);
        goto fail;
    }
    if (!(m->pool = npl_pool_new(p->n_threads))) {
        npl_err_memory(err, errlen); /* the pool fails only to allocate */
        goto fail;
    }
    if (!(m->s = npl_graph_session_new(m->g, &m->be, m->pool, ids, n_outputs, err, errlen))) goto fail;
    free(ids);
    return m;
fail:
    free(ids);
    npl_module_free(m);
    return NULL;
}

int npl_module_set(npl_module *m, const char *name, void *data, const npl_shape *shape) {
    if (npl_graph_session_set_input(m->s, name, data, shape)) {
        snprintf(m->err, sizeof(m->err), "%s", npl_graph_session_error(m->s));
        return -1;
    }
    return 0;
}

int npl_module_forward(npl_module *m) {
    if (npl_graph_session_run(m->s)) {
        snprintf(m->err, sizeof(m->err), "%s", npl_graph_session_error(m->s));
        return -1;
    }
    return 0;
}

const npl_tensor *npl_module_output(const npl_module *m, int i) { return npl_graph_session_output(m->s, i); }
const char *npl_module_error(const npl_module *m) { return m->err; }
const npl_graph *npl_module_graph(const npl_module *m) { return m->g; }
const npl_gguf *npl_module_file(const npl_module *m) { return m->file; }
