/* Shape inference: one small function per op, shared by the session and the
 * compiler. An op whose output shape depends on input *content* would say so
 * via npl_op_shape_is_dynamic (none of ours do yet; the compiler cuts there). */
#ifndef NPL_SHAPE_H
#define NPL_SHAPE_H
#include <stddef.h>

#include "core/graph.h"

/* Infers node `id`'s output shape from its inputs' shapes (src[i] is the
 * shape of the node's i-th input). Returns 0, or -1 with a message in err. */
int npl_infer_shape(const npl_graph *g, int id, const npl_shape *src, npl_shape *out, char *err, size_t errlen);
int npl_op_shape_is_dynamic(npl_op op);
/* Registry hook for plugin types: set by the plugin layer (registration flows
 * downward; core never calls up by name). */
typedef int (*npl_plugin_shape_fn)(void *user, const npl_graph *g, int id, const npl_shape *src,
                                   npl_shape *out, char *err, size_t errlen);
typedef struct {
    npl_plugin_shape_fn fn;
    void *user;
} npl_plugin_shape_hook;

int npl_infer_shape_ex(const npl_graph *g, int id, const npl_shape *src, npl_shape *out,
                       const npl_plugin_shape_hook *hook, char *err, size_t errlen);

#endif
