/* Module: load a graph file and run it with named inputs and outputs —
 * MNN's Module::load / onForward. Sits on the graph file reader, a session
 * and the CPU backend; a caller may add executions to the backend (the plugin
 * op) before the session is created. */
#ifndef NPL_MODULE_H
#define NPL_MODULE_H
#include "core/session.h"
#include "cpu/cpu_backend.h"
#include "format/gguf.h"

typedef struct npl_module npl_module;

typedef struct {
    int n_threads;                                   /* 0: one per core */
    int isa;                                         /* -1: best available */
    int (*configure)(npl_backend *be, void *user);   /* optional, before the session */
    void *user;
} npl_module_params;

npl_module_params npl_module_default_params(void);
/* outputs: names of the nodes to compute. */
npl_module *npl_module_load(const char *path, const char *const *outputs, int n_outputs,
                            const npl_module_params *p, char *err, size_t errlen);
void npl_module_free(npl_module *m);
/* Bind an input (data + shape) or a state (data only, shape NULL) by name. */
int npl_module_set(npl_module *m, const char *name, void *data, const npl_shape *shape);
/* Runs; output i of the last run, valid until the next forward. */
int npl_module_forward(npl_module *m);
const npl_tensor *npl_module_output(const npl_module *m, int i);
const char *npl_module_error(const npl_module *m);
const npl_graph *npl_module_graph(const npl_module *m);
const npl_gguf *npl_module_file(const npl_module *m);

#endif
