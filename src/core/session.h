/* Session: runs the part of a graph needed for some outputs.
 *
 * Inputs and states are bound by name with their data and (for inputs) their
 * current shape. run() looks up the plan for the current input shapes — shape
 * inference, executions resized, activation memory planned with buffer reuse
 * into one arena — creating it on first use and caching it per shape key, so
 * steady decoding never re-plans or allocates. */
#ifndef NPL_SESSION_H
#define NPL_SESSION_H
#include "core/backend.h"

typedef struct npl_graph_session npl_graph_session;

/* outputs: node ids to compute. The graph must outlive the session. */
npl_graph_session *npl_graph_session_new(const npl_graph *g, const npl_backend *be, npl_pool *pool,
                             const int *outputs, int n_outputs, char *err, size_t errlen);
void npl_graph_session_free(npl_graph_session *s);

/* Bind INPUT node `name` (shape may differ from run to run) or STATE node. */
int npl_graph_session_set_input(npl_graph_session *s, const char *name, void *data, const npl_shape *shape);
int npl_graph_session_set_input_id(npl_graph_session *s, int node, void *data, const npl_shape *shape);
int npl_graph_session_set_state(npl_graph_session *s, const char *name, void *data);

/* Compute the outputs. 0, or -1 with npl_graph_session_error(). */
int npl_graph_session_run(npl_graph_session *s);
const char *npl_graph_session_error(const npl_graph_session *s);

/* Output i of the last run (valid until the next run). */
const npl_tensor *npl_graph_session_output(const npl_graph_session *s, int i);
/* Plan facts, for tests and benchmarks. */
int npl_graph_session_n_plans(const npl_graph_session *s);
size_t npl_graph_session_arena_size(const npl_graph_session *s);

#endif
