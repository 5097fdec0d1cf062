/* Lazy evaluation of one node, MNN's VARP readMap: computes what the node
 * depends on with a throwaway session and caches the value in the node, so
 * reading it again is free until an input is re-bound. Model builders and op
 * tests use the same builder API as sessions. */
#ifndef NPL_EVAL_H
#define NPL_EVAL_H
#include "core/backend.h"

/* Returns the value (type = the node's, data owned by the graph), or NULL
 * with a message in err. */
const void *npl_read(npl_graph *g, int id, const npl_backend *be, npl_pool *pool, npl_shape *shape,
                     char *err, size_t errlen);

#endif
