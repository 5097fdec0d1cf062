/* Plugin op runtime: shape-kernel and compute-kernel registries keyed by the
 * plugin node's `type` attribute, owned by one runtime object (no globals),
 * and the accelerator libraries they use.
 *
 * A PLUGIN node runs on the CPU backend (MNN's CPUPlugin): npl_plugin_backend_init
 * registers the PLUGIN execution and the shape hook into a CPU backend the
 * caller owns — registration flows downward, the CPU backend never calls up.
 * Per session the execution calls the kernel's init once (session creation),
 * resize when a new plan is made for new input shapes, compute on each run.
 *
 * The built-in "accel" kernel (plugin_accel.c) runs a context binary through
 * the accelerator ABI (include/npullm_accel.h). Its attributes:
 *   path           STR   context binary, relative to the runtime's base dir
 *   accel          STR   the accelerator (the compile's target): a provider
 *                        of the runtime, a library name (libnpl_accel_<name>.so,
 *                        see "accelerator libraries" below) or a path with '/';
 *                        loaded with dlopen only when a node needs it
 *   inputs         STRS  accelerator tensor name per node input
 *   outputs        STRS  accelerator tensor name of the node's output
 *   allGraphName   STRS  one graph per shape index
 *   allInputShape  INTS  [shape][input][4]: the ggml ne[] of every input
 *   o_<s>_<i>      INTS  ne[] of output i at shape index s
 *   kv_len         INTS  optional, per graph: the cache rows its attention reads (0: all);
 *                        graphs of equal input shapes are decode buckets: each run takes
 *                        the smallest kv_len > every position of input kv_pos_input
 *   kv_pos_input   INTS  [1]: the node input holding the positions (with kv_len)
 * A shape that is not in allInputShape is an error naming the shapes. */
#ifndef NPL_PLUGIN_H
#define NPL_PLUGIN_H
#include <stddef.h>

#include "core/backend.h"
#include "cpu/cpu_backend.h"
#include "npullm_accel.h"

typedef struct npl_plugin_rt npl_plugin_rt;

/* An accelerator linked into the program (a static build): found by name
 * before any library. */
typedef struct {
    const char *name;
    npl_accel_get_api_fn get_api;
} npl_plugin_provider;

typedef struct {
    const char *base_dir;   /* package directory: attribute paths resolve here ("." if NULL) */
    const char *plugin_dir; /* the one directory accelerator libraries are looked for in
                               (NULL: the default places, see below) */
    int n_threads;          /* accelerator worker threads (0: one per core) */
    const npl_plugin_provider *providers; /* n_providers built-in accelerators (may be NULL) */
    int n_providers;
    npl_pool *host_pool;    /* if set, accelerators that offer backend_create_on_pool run on
                             * this pool (the CPU session's: one pool in package mode) instead
                             * of n_threads threads of their own; it must outlive the runtime */
    int profile;            /* the accelerator backend option "profile" (0: off; 1-3 more detail) */
} npl_plugin_rt_params;

npl_plugin_rt *npl_plugin_rt_new(const npl_plugin_rt_params *p, char *err, size_t errlen);
/* Frees accelerator backends and closes libraries; sessions using the
 * runtime must be freed first. */
void npl_plugin_rt_free(npl_plugin_rt *rt);
const char *npl_plugin_rt_base_dir(const npl_plugin_rt *rt);
int npl_plugin_rt_n_threads(const npl_plugin_rt *rt);
int npl_plugin_rt_profile(const npl_plugin_rt *rt); /* the "profile" level (0: off) */

/* ---- registries ---- */
typedef int (*npl_plugin_shape_kernel)(void *user, const npl_graph *g, int id, const npl_shape *src, npl_shape *out,
                                       char *err, size_t errlen);
typedef struct {
    /* once per session; *state is passed to the other calls */
    int (*init)(npl_plugin_rt *rt, const npl_graph *g, int id, void **state, char *err, size_t errlen);
    /* new input shapes (ctx->src[i].shape); data pointers are not valid yet */
    int (*resize)(void *state, const npl_exec_ctx *ctx, char *err, size_t errlen);
    int (*compute)(void *state, const npl_exec_ctx *ctx, char *err, size_t errlen);
    void (*release)(void *state);
} npl_plugin_compute_kernel;

/* Type strings are copied; registering a type again replaces it. */
int npl_plugin_register_shape(npl_plugin_rt *rt, const char *type, npl_plugin_shape_kernel fn, void *user);
int npl_plugin_register_compute(npl_plugin_rt *rt, const char *type, const npl_plugin_compute_kernel *k);
/* NULL if the type has no kernel. */
const npl_plugin_compute_kernel *npl_plugin_find_compute(const npl_plugin_rt *rt, const char *type);
/* Runs the shape kernel registered for node id's type. */
int npl_plugin_infer_shape(npl_plugin_rt *rt, const npl_graph *g, int id, const npl_shape *src, npl_shape *out,
                           char *err, size_t errlen);

/* ---- accelerator libraries ----
 * The table of accelerator `name`: a provider (params or
 * npl_plugin_rt_add_accel) first; else libnpl_accel_<name>.so is dlopen'ed
 * (once) and its npl_accel_get_api entry point called. The library is looked
 * for in plugin_dir if set, else next to the code of this library
 * (npl_plugin_default_dir: libnpullm.so's directory, or the executable's when
 * linked statically) and then in base_dir (the package). Every table goes
 * through npl_plugin_check_api. NULL with a one-line err naming the library
 * and what was wrong (not installed, cannot be loaded, no entry point, ABI
 * check) on failure. */
const npl_accel_api *npl_plugin_accel_api(npl_plugin_rt *rt, const char *name, char *err, size_t errlen);
int npl_plugin_rt_add_accel(npl_plugin_rt *rt, const char *name, npl_accel_get_api_fn get_api);
/* The directory of libnpullm.so, or of the executable it is linked into;
 * 0 or -1. */
int npl_plugin_default_dir(char *buf, size_t len);
/* ABI version and struct size check of a table; 0 or -1 with err. */
int npl_plugin_check_api(const npl_accel_api *api, const char *who, char *err, size_t errlen);
/* The engine's code for an accelerator status (core/status.h): NO_MEMORY is
 * NPL_ERR_MEMORY, a bad or unreadable binary NPL_ERR_FILE, the rest
 * NPL_ERR_RUNTIME. Records it and returns it. */
int npl_plugin_accel_status(npl_accel_status st);
/* One backend per accelerator, shared by the runtime's plugin nodes (and a
 * compile). Options: "threads" = n_threads, or none if the implementation
 * refuses that key. A failed backend_create names the library. */
npl_accel_backend *npl_plugin_accel_backend(npl_plugin_rt *rt, const npl_accel_api *api, char *err, size_t errlen);

/* ---- the CPU backend's PLUGIN execution ----
 * `be` must be a CPU backend (npl_cpu_backend_init); its ctx is moved into
 * `pb` (whose first member is the CPU context, so the CPU executions keep
 * working) and the PLUGIN execution and shape hook are filled in. pb and rt
 * must outlive the backend. */
typedef struct {
    npl_cpu_ctx cpu; /* must stay first */
    npl_plugin_rt *rt;
} npl_plugin_backend;

void npl_plugin_backend_init(npl_plugin_backend *pb, npl_plugin_rt *rt, npl_backend *be);

/* Registers the built-in kernels ("accel") into rt (done by npl_plugin_rt_new). */
int npl_plugin_register_builtin(npl_plugin_rt *rt);

/* ---- helpers shared by kernels and the compiler ---- */
/* Index of the shape in allInputShape matching src[0..n_src), or -1 with a
 * message listing the shapes compiled. */
int npl_plugin_shape_index(const npl_graph *g, int id, const npl_shape *src, int n_src, char *err, size_t errlen);

#endif
