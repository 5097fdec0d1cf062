/* Helpers of the QNN HTP adapter tests: load libnpl_accel_qnn-htp.so as a plugin
 * (dlopen + npl_accel_get_api, as a package would), skip (exit 77) only
 * when the QNN libraries are not installed, one-node graphs and their run. */
#ifndef NPL_TEST_QNN_COMMON_H
#define NPL_TEST_QNN_COMMON_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel_test_util.h"
#include "check.h"
#include "kernels/dtype.h"
#include "npullm_accel.h"

#define QNN_SKIP 77

/* Under LeakSanitizer: allocations QNN's own libraries lose (libQnnSystem's
 * binary info records) are theirs, not the adapter's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libQnnSystem.so\nleak:libQnnHtp.so\n"; }

static inline const npl_accel_api *qnn_test_api(void) {
    char lib[1024];
    struct stat st;
    snprintf(lib, sizeof lib, "%s/libQnnHtp.so", NPL_QNN_LIB_DIR);
    if (!*NPL_QNN_LIB_DIR || stat(lib, &st) != 0) {
        printf("SKIP: QNN libraries not installed (run scripts/install-deps.sh; looked for '%s')\n", lib);
        exit(QNN_SKIP);
    }
    void *h = dlopen(NPL_QNN_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", NPL_QNN_PLUGIN, dlerror());
        exit(1);
    }
    npl_accel_get_api_fn get = (npl_accel_get_api_fn)dlsym(h, NPL_ACCEL_ENTRY_POINT);
    const npl_accel_api *api = get ? get(NPL_ACCEL_ABI_VERSION) : NULL;
    const char *why = npl_accel_api_check(api, NPL_ACCEL_ABI_VERSION);
    if (why) {
        fprintf(stderr, "%s: %s\n", NPL_QNN_PLUGIN, why);
        exit(1);
    }
    return api;
}

typedef struct {
    const npl_accel_api *api;
    npl_accel_backend *be;
    npl_accel_device *dev;
} qnn_rig;

static inline qnn_rig qnn_rig_open(const char *soc) {
    qnn_rig r = {qnn_test_api(), NULL, NULL};
    char err[512] = "";
    if (r.api->backend_create(NULL, 0, &r.be, err, sizeof err)) {
        fprintf(stderr, "backend_create: %s\n", err);
        exit(1);
    }
    npl_accel_option o = {"soc", soc};
    if (r.api->device_create(r.be, soc ? &o : NULL, soc ? 1 : 0, &r.dev)) {
        fprintf(stderr, "device_create: %s\n", r.api->last_error(r.be));
        exit(1);
    }
    return r;
}

static inline void qnn_rig_close(qnn_rig *r) {
    r->api->device_free(r->dev);
    r->api->backend_free(r->be);
}

/* per-tensor quant parameters kept by the caller */
static inline npl_accel_quant qnn_pt(const float *scale, const int32_t *offset) {
    npl_accel_quant q = {NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, scale, offset};
    return q;
}

/* values of a tensor's bytes as floats (F32, F16, INT8, UINT8, INT16 per tensor) */
static inline double qnn_val(const npl_accel_tensor_desc *d, const void *p, size_t i) {
    switch (d->dtype) {
    case NPL_ACCEL_DT_F32: return ((const float *)p)[i];
    case NPL_ACCEL_DT_F16: return npl_f16_to_f32(((const uint16_t *)p)[i]);
    default: break;
    }
    double q = d->dtype == NPL_ACCEL_DT_INT8 ? ((const int8_t *)p)[i]
               : d->dtype == NPL_ACCEL_DT_UINT8 ? ((const uint8_t *)p)[i]
                                                : ((const int16_t *)p)[i];
    int32_t off = d->quant.offsets ? d->quant.offsets[0] : 0;
    return (q + off) * d->quant.scales[0];
}

/* writes v into element i (quantized with rounding and clamping) */
static inline void qnn_set(const npl_accel_tensor_desc *d, void *p, size_t i, double v) {
    if (d->dtype == NPL_ACCEL_DT_F32) { ((float *)p)[i] = (float)v; return; }
    if (d->dtype == NPL_ACCEL_DT_F16) { ((uint16_t *)p)[i] = npl_f32_to_f16((float)v); return; }
    double lo = d->dtype == NPL_ACCEL_DT_INT8 ? -128 : d->dtype == NPL_ACCEL_DT_UINT8 ? 0 : -32768;
    double hi = d->dtype == NPL_ACCEL_DT_INT8 ? 127 : d->dtype == NPL_ACCEL_DT_UINT8 ? 255 : 32767;
    double q = nearbyint(v / d->quant.scales[0]) - (d->quant.offsets ? d->quant.offsets[0] : 0);
    q = q < lo ? lo : q > hi ? hi : q;
    if (d->dtype == NPL_ACCEL_DT_INT8) ((int8_t *)p)[i] = (int8_t)q;
    else if (d->dtype == NPL_ACCEL_DT_UINT8) ((uint8_t *)p)[i] = (uint8_t)q;
    else ((int16_t *)p)[i] = (int16_t)q;
}

static inline size_t qnn_elems(const npl_accel_tensor_desc *d) {
    size_t n = 1;
    for (uint32_t i = 0; i < d->rank; i++) n *= d->dims[i];
    return n;
}

static inline size_t qnn_bytes(const npl_accel_tensor_desc *d) {
    size_t es = d->dtype == NPL_ACCEL_DT_F32 || d->dtype == NPL_ACCEL_DT_INT32 ? 4
                : d->dtype == NPL_ACCEL_DT_F16 || d->dtype == NPL_ACCEL_DT_INT16 ? 2 : 1;
    return qnn_elems(d) * es;
}
enum { MAXT = 8 };
typedef struct {
    npl_accel_tensor_desc d;
    void *data;
} tspec;

/* One graph with one node over `ins` (APP_WRITE or STATIC) -> `out`; *bin_size
 * (may be NULL) gets the context binary's size. */
static inline npl_accel_status run1b(qnn_rig *r, const char *op, const npl_accel_param *prm, uint32_t np, tspec *ins,
                                     uint32_t n_in, tspec *out, uint64_t *bin_size) {
    const npl_accel_api *a = r->api;
    npl_accel_context *ctx;
    npl_accel_graph *g;
    npl_accel_tensor_id id[MAXT + 1];
    npl_accel_buffer bin[MAXT], bout;
    uint32_t nb = 0;
    npl_accel_status st = a->context_create(r->be, r->dev, NULL, 0, &ctx);
    if (!st) st = a->graph_create(ctx, op, &g);
    for (uint32_t i = 0; i < n_in && !st; i++) {
        if (ins[i].d.kind == NPL_ACCEL_STATIC) ins[i].d.data = ins[i].data, ins[i].d.data_size = qnn_bytes(&ins[i].d);
        st = a->tensor_create(g, &ins[i].d, &id[i]);
        if (ins[i].d.kind == NPL_ACCEL_APP_WRITE) bin[nb++] = (npl_accel_buffer){ins[i].d.name, ins[i].data, qnn_bytes(&ins[i].d)};
    }
    if (!st) st = a->tensor_create(g, &out->d, &id[n_in]);
    npl_accel_node_desc nd = {op, op, prm, np, id, n_in, &id[n_in], 1};
    if (!st) st = a->graph_add_node(g, &nd);
    if (!st) st = a->graph_finalize(g);
    bout = (npl_accel_buffer){out->d.name, out->data, qnn_bytes(&out->d)};
    if (!st) st = a->graph_execute(g, bin, nb, &bout, 1);
    if (!st && bin_size) st = a->context_get_binary_size(ctx, bin_size);
    if (st) fprintf(stderr, "  %s: status %d: %s\n", op, st, a->last_error(r->be));
    a->context_free(ctx);
    return st;
}

static inline npl_accel_status run1(qnn_rig *r, const char *op, const npl_accel_param *prm, uint32_t np, tspec *ins, uint32_t n_in,
                                    tspec *out) {
    return run1b(r, op, prm, np, ins, n_in, out, NULL);
}

#endif
