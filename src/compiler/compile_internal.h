/* What the compile driver (compile.c) shares with its check (compile_check.c)
 * and its summary (compile_summary.c). Internal to src/compiler. */
#ifndef NPL_COMPILE_INTERNAL_H
#define NPL_COMPILE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "compiler/compiler.h"
#include "compiler/lower.h"
#include "core/progress.h"
#include "format/graph_file.h"
#include "models/model.h"

#define MAX_BASE 3 /* AR-N (last row), AR-1 over every cache row, AR-N (every row) */
#define MAX_SHAPES (MAX_BASE + 2 * NPL_MAX_BUCKETS) /* + AR-1 and AR-N (last row) per KV-length bucket */
#define MAX_CHECK_ROWS 32 /* check rows kept per graph for --keep-intermediate */
#define MAX_SHARED 4 /* CPU-side weights a context binary may hold (the tied embedding) */

typedef struct {
    const npl_compile_params *p;
    npl_compile_guard *g;
    npl_progress bar;
    double t0, stage_t[6];
    int stage;
} npl_compile_progress;

double npl_compile_now(void);
int npl_compile_aborted(npl_compile_guard *g);
/* One progress step; nonzero when the compile was aborted (the caller
 * stops with "interrupted"). */
int npl_compile_prog(npl_compile_progress *pg, int stage, int done, int total, const char *what);

/* One compiled shape and the CPU inputs its IO sample is taken at. */
typedef struct {
    int seq, n_out, kv; /* kv > 0: a KV-length bucket's graph, reading the first kv cache rows */
    int32_t *tokens, *pos, *rows;
} shape_case;

/* One way of lowering LPBQ weights that the target refused: mode 0 = the
 * target's LPBQ slices, NPL_LPBQ_PER_CHANNEL: none;
 * signal: its finalize died of it (in a probe process), 0: refused. */
#define NPL_LPBQ_PER_CHANNEL (-1)
typedef struct {
    int mode, signal;
} npl_lpbq_try;

/* One lowered subgraph: its context binary and its graphs. */
typedef struct {
    npl_accel_dtype act;
    uint8_t *bin;
    uint64_t bin_size;
    char names[MAX_SHAPES][64];
    char in_names[MAX_SHAPES][NPL_SEG_MAX_IO][96];
    char out_names[MAX_SHAPES][96];
    int n_shapes;
    double max_err[MAX_SHAPES], rel_err[MAX_SHAPES];
    double finalize_s[MAX_SHAPES]; /* the target's finalize time per graph (0: not reported) */
    uint64_t static_bytes, checksum;
    /* LPBQ retries after a refused finalize (compile_lower.c): each way tried
     * and refused, in order, and the way that finalized (lpbq_ok) */
    npl_lpbq_try lpbq_tried[6];
    int n_lpbq_tried, lpbq_mode, lpbq_ok;
    /* the check per output row (the first MAX_CHECK_ROWS of a many-row graph, for
     * --keep-intermediate): relative RMS, max abs error, the CPU row's max |value| */
    int n_rows[MAX_SHAPES];
    float row_rel[MAX_SHAPES][MAX_CHECK_ROWS], row_max[MAX_SHAPES][MAX_CHECK_ROWS], row_ref[MAX_SHAPES][MAX_CHECK_ROWS];
} seg_result;

/* One subgraph's lowering (compile.c's stage 3): base holds every field of
 * the lowering but the per-case ones (kv_len, gname). */
typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *abe;
    npl_accel_device *dev;
    const npl_compile_params *p;
    npl_compile_progress *pg;
    int si;
    npl_shape *shapes;
    const shape_case *cases;
    int n_cases;
    npl_lower_args base;
} npl_compile_lower_job;

/* Lowers every case of the subgraph into a new context *ctx, retrying a
 * refused LPBQ finalize with narrower slices, then per-channel weights
 * (compile_lower.c says why and how). 0: done; 1: the target refused (err);
 * -1: stop (aborted, or an error in err). *ctx may be set in every case. */
int npl_compile_lower_seg(const npl_compile_lower_job *j, seg_result *r, npl_accel_context **ctx, char *err, size_t errlen);
/* The summary's line of r's LPBQ retries (nothing without one). */
void npl_compile_lpbq_summary(FILE *o, const seg_result *r);

typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *abe;
    npl_accel_device *dev;
    npl_accel_context *live; /* a weight-shared binary's own context (freed here), else NULL */
    const npl_model_graph *mg;
    const npl_hparams *hp;
    const npl_segment *sg;
    const shape_case *cases;
    int n_cases;
    npl_pool *pool;
    double tol;
    const char *target;
    npl_compile_progress *pg;
} npl_compile_check_args;

/* Runs every graph of r's binary on the CPU path's IO samples. 0: all within
 * a->tol; 1: the subgraph falls back to the CPU (err says why); -1: stop
 * (an error in err, or the compile was aborted). */
int npl_compile_check(const npl_compile_check_args *a, seg_result *r, char *err, size_t errlen);

typedef struct {
    const npl_compile_params *p;
    const char *model_path, *out_dir, *out;
    const npl_hparams *hp;
    const npl_model_graph *mg;
    const npl_lower_weight *wc;
    int n_nodes, n_ctx, n_kept;
    const int *buckets;
    int n_buckets;
    uint32_t f32_classes;
    const char *calib;
    int64_t n_calib;
    int int16_static, n_range_tok; /* --act int16 with calibrated ranges, over this many tokens */
    const npl_partition *part;
    const seg_result *res;
    uint64_t total_bin;
    const npl_graph_ext *shared;
    const uint64_t *shared_bytes;
    int n_shared;
    const char (*unshared)[128];
    int n_unshared;
    const double *stage_t;
    double t_start;
    int tied, tied_lookup, tied_matmul; /* the tied matrix lowered with its lookup, and its output matmul (node ids, -1: none) */
    const char *tied_why;   /* why a tied matrix's lookup stays on the CPU (NULL: it does not, or not asked) */
    float resid_scale;      /* the residual stream's scale in the lowered graphs (1: none; lower.c) */
    int weights_auto;       /* --weights keep became w8: the target takes no GGML blocks */
} npl_compile_report;

void npl_compile_summary(FILE *o, const npl_compile_report *r);
/* --keep-intermediate: DIR/intermediate/npu_postreat.json, MNN's list of subgraphs and CPU ops,
 * with each lowered graph's check error when check is set (per layer with --split-layers) */
void npl_compile_write_intermediate(const char *dir, const npl_partition *part, const seg_result *res,
                                    const npl_graph *g, int check);

#endif
