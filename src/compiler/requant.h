/* --weights w8 / w4: matmul weights as int8 with one scale per output
 * channel (QNN HTP's FullyConnected weights; w4 values fit -8..7, which the
 * QNN adapter stores in its bitwidth-4 encoding). Private to the compiler. */
#ifndef NPL_COMPILER_REQUANT_H
#define NPL_COMPILER_REQUANT_H
#include <stddef.h>
#include <stdio.h>

#include "compiler/lower.h"
#include "core/session.h"
#include "kernels/threadpool.h"
#include "models/model.h"
#include "npullm_accel.h"

/* Fills w->data[0] (int8 [rows][k]), w->scales (one per row), w->dt[0]
 * (INT8) and w->rq_se / rq_ss (squared error against the GGUF's values,
 * and their squared sum) from weight node nd (a 2-D matrix of any type that
 * has a to_float). bits 8 or 4. 0 or -1 with err. */
int npl_requant_rows(const npl_node *nd, int bits, npl_lower_weight *w, char *err, size_t errlen);

/* --act int16 --weights w4: 4-bit values (-8..7) in int8 [rows][k] with a
 * scale per block of NPL_LPBQ_BLOCK along k that is the row's scale times an
 * integer 1..15 (QNN's blockwise expansion, "LPBQ": 4-bit block scales under
 * a per-channel float scale). w->scales gets the block scales as floats,
 * scales[r * (k / 32) + b] = row scale * m, the largest m of each row 15 so
 * the row scale is max / 15; w->block = 32. k a multiple of 32. */
#define NPL_LPBQ_BLOCK 32
int npl_requant_lpbq(const npl_node *nd, npl_lower_weight *w, char *err, size_t errlen);

/* The tensor class of a weight, by its GGUF name: "qkv", "o", "gate/up",
 * "down", "output" (the logits matrix, tied or not) or "other". */
const char *npl_requant_class(const char *name);

/* The summary line: each class's relative RMS requantization error and its
 * number of weights (wc per node id of g, as the lowering filled it). */
void npl_requant_summary(FILE *o, const npl_graph *g, const npl_lower_weight *wc, int n_nodes, const char *prec);

/* --calib FILE: its text, 1 byte .. 16 MiB of UTF-8 without NUL, read
 * whole; NULL with a one-line err naming the file and what is wrong. The
 * compile's IO samples take their tokens from it. */
char *npl_calib_read(const char *path, size_t *len, char *err, size_t errlen);

/* The calibration text used without --calib. */
const char *npl_calib_default_text(void);

/* int16 activation ranges: lo[i] / hi[i] = min / max of node i's CPU output
 * (f32 / f16 op nodes; lo > hi for the others) over the first n_tokens of
 * ids, cycled, run as prefill chunks of `chunk` positions with the KV cache
 * carried over (positions start again at 0 past the context). lo, hi: one
 * per node of mg->g. The number of tokens run, or -1 with err. */
/* Zeroed host KV caches of n_ctx rows bound to every kcache.N / vcache.N of a
 * CPU graph session (the calibration run and the check's samples): the
 * buffers, or NULL with a line "WHO: ..." in err. Freed by npl_calib_free_kv. */
void **npl_calib_bind_kv(npl_graph_session *s, const npl_hparams *hp, int n_ctx, const char *who, char *err,
                         size_t errlen);
void npl_calib_free_kv(void **kv, int n_layer);
/* 1 if the target refuses the ABI's dynamic int16 (then int16 needs the ranges). */
int npl_calib_static_int16(const npl_accel_api *api, npl_accel_backend *be, npl_accel_device *dev);
int npl_calib_ranges(const npl_model_graph *mg, const npl_hparams *hp, const int32_t *ids, int64_t n_ids, int chunk,
                     int n_tokens, npl_pool *pool, float *lo, float *hi, char *err, size_t errlen);

#endif
