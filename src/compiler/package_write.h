/* What stage 6 writes beside the graph file: config.json in MNN's
 * config_qnn.json style, and the search that stores a CPU-side weight (a
 * tied embedding / output matrix) once, in the context binary that already
 * holds its bytes (private to the compiler). */
#ifndef NPL_PACKAGE_WRITE_H
#define NPL_PACKAGE_WRITE_H
#include <stddef.h>
#include <stdint.h>

#include "format/graph_file.h"

typedef struct {
    char file[32];            /* accel_<i>.bin */
    uint64_t size, checksum;  /* bytes, npl_fnv1a64 */
    int n_graphs;
    const char (*graphs)[64];
    double finalize_s;        /* the target's finalize time of every graph (0: not reported) */
} npl_pkg_bin;

typedef struct {
    int chunk, n_ctx;
    const char *act, *weights, *output_weights, *target, *soc, *accel_version;
    const npl_pkg_bin *bins;
    int n_bins;
    const npl_graph_ext *shared; /* CPU-side weights read from a context binary */
    int n_shared;
    int weight_sharing;          /* the binaries share weights between graphs (for a device) */
    const int *buckets;          /* decode KV-length buckets below n_ctx (ascending) */
    int n_buckets;
} npl_pkg_config;

/* DIR/config.json: npullm_package_version, llm_model, backend_type "cpu" (the
 * main graph runs on the CPU; the accelerator through plugin ops, as in MNN),
 * accel, soc, accel_version, chunk_limits [N, 1], max_context_length,
 * precision, weights, precisions {activations, weights, output_weights,
 * kv_cache}, context_binaries [{file, size, fnv1a64, graphs}], shared_weights
 * [{name, file, offset}], weight_sharing, buckets (the decode graphs' KV lengths, ascending,
 * max_context_length last). 0 or -1 with err. */
int npl_pkg_write_config(const char *dir, const npl_pkg_config *c, char *err, size_t errlen);

/* Where the n bytes of data occur in bin (compared in full), or -1. */
int64_t npl_pkg_find_bytes(const uint8_t *bin, uint64_t bin_size, const void *data, uint64_t n);

#endif
