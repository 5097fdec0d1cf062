/* Graph files: a graph IR written to disk in a GGUF container — node list
 * under "npullm.graph.*" keys, weights as tensors — and read back with the
 * weights pointing into the read-only mapping. The loader checks every node
 * (known op, arity, sources earlier than the node, types, dims, weight
 * tensors matching their node) before building anything. */
#ifndef NPL_GRAPH_FILE_H
#define NPL_GRAPH_FILE_H
#include <stddef.h>

#include "core/graph.h"
#include "format/gguf.h"

/* Extra metadata to copy into the file (e.g. tokenizer.* keys), may be NULL:
 * every key of `meta` whose name starts with one of the prefixes. */
typedef struct {
    const npl_gguf *meta;
    const char *const *prefixes;
    int n_prefixes;
} npl_graph_file_extra;

int npl_graph_save(const npl_graph *g, const char *path, const npl_graph_file_extra *extra, char *err,
                   size_t errlen);
/* Reads a graph; the returned graph's weights point into *file, which the
 * caller closes after freeing the graph. */
npl_graph *npl_graph_load(const char *path, npl_gguf **file, char *err, size_t errlen);

#endif
