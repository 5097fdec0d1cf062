/* Graph files: an npl_graph stored in a GGUF container (the package's graph
 * file). Metadata arrays "npullm.graph.*" hold one element per node (op,
 * type, shape, sources, typed params, name); "npullm.attr.*" hold the
 * attribute map; WEIGHT nodes are GGUF tensors named like the node. Loading
 * rebuilds the graph with the builder calls (so every check of the builder
 * applies) and points weights into the mapping. */
#ifndef NPL_GRAPH_FILE_H
#define NPL_GRAPH_FILE_H
#include <stddef.h>
#include <stdint.h>

#include "core/graph.h"
#include "format/gguf.h"

/* Adds g's nodes, attributes and weights to w (weights' bytes must stay
 * valid until the writer writes). 0 or -1 with err. */
int npl_graph_file_add(npl_gguf_writer *w, const npl_graph *g, char *err, size_t errlen);
/* Rebuilds the graph stored in f (NULL with err naming the file and field). */
npl_graph *npl_graph_file_load(const npl_gguf *f, char *err, size_t errlen);

/* External weights: a weight whose bytes are stored in another file of the
 * package (a context binary that holds the same bytes, e.g. a tied
 * embedding / output matrix), recorded as "npullm.graph.ext.name", ".file",
 * ".offset" and not written as a GGUF tensor. */
typedef struct {
    const char *name;   /* the WEIGHT node's name */
    const char *file;   /* a file name in the package directory (no '/') */
    uint64_t offset;    /* of the weight's bytes in that file */
} npl_graph_ext;
int npl_graph_file_add_ext(npl_gguf_writer *w, const npl_graph *g, const npl_graph_ext *ext, int n_ext, char *err,
                           size_t errlen);
/* The bytes of an external weight (size bytes at offset of file), or NULL
 * with a one-line err naming the file. */
typedef const void *(*npl_graph_ext_resolve)(void *user, const char *file, uint64_t offset, uint64_t size, char *err,
                                             size_t errlen);
/* As npl_graph_file_load; external weights come from resolve (NULL: a graph
 * with external weights is refused, naming the file that holds them). */
npl_graph *npl_graph_file_load_ext(const npl_gguf *f, npl_graph_ext_resolve resolve, void *user, char *err,
                                   size_t errlen);
/* Appends a node like `like` (op, type, shape, ip, fp; sources s[] in g,
 * name, and for WEIGHT the data) through the builder calls. Attributes are
 * not copied. Returns the new id or -1 (npl_graph_error). */
int npl_graph_append_like(npl_graph *g, const npl_node *like, const int *s, const char *name, const void *wdata);
/* Does f hold a graph? */
int npl_graph_file_present(const npl_gguf *f);
/* Copies every metadata key of src whose name does not start with one of
 * the skip prefixes (NULL-terminated list) into w. */
int npl_gguf_copy_kv(npl_gguf_writer *w, const npl_gguf *src, const char *const *skip, char *err, size_t errlen);

#endif
