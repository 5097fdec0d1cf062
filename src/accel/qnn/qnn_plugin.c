/* libnpl_accel_qnn-htp.so (target qnn-htp): the npullm accelerator ABI on Qualcomm QNN HTP.
 *
 * Options: backend "qnn_lib" = the folder holding libQnnHtp.so and
 * libQnnSystem.so (default: the one the build found in the project's venv,
 * NPL_QNN_DEFAULT_LIB_DIR); backend "profile" = N > 0:
 * each graph's execute count and times go to stderr when its context is
 * freed; device "soc" = a Snapdragon SoC name (SM8650 ...,
 * see qnn_lib.c), else QNN's default target; device "act" = the activation
 * type the compiler will use (f16 / bf16 / f32 / int16): a float one is
 * refused for an SoC without fp16 (SM7635). QNN is only loaded by
 * backend_create. On x86 the HTP backend runs graphs in software emulation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/qnn/qnn_impl.h"

#ifndef NPL_QNN_DEFAULT_LIB_DIR
#define NPL_QNN_DEFAULT_LIB_DIR ""
#endif

uint64_t qnn_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define FAIL(be, st, ...) qnn_fail((be), (st), "qnn-htp: " __VA_ARGS__)

/* ---- backend / device ---- */

static npl_accel_status backend_create(const npl_accel_option *opts, uint32_t n_opts, npl_accel_backend **out, char *err,
                                       uint32_t errlen) {
    if (!out) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    npl_accel_backend *be = calloc(1, sizeof *be);
    if (!be) return NPL_ACCEL_ERR_NO_MEMORY;
    const char *dir = NPL_QNN_DEFAULT_LIB_DIR;
    npl_accel_status st = NPL_ACCEL_OK;
    for (uint32_t i = 0; i < n_opts && !st; i++) {
        if (opts[i].key && !strcmp(opts[i].key, "qnn_lib") && opts[i].value) dir = opts[i].value;
        else if (opts[i].key && !strcmp(opts[i].key, "profile") && opts[i].value) be->profile = atoi(opts[i].value);
        else st = FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "unknown backend option '%s' (known: qnn_lib, profile)", opts[i].key ? opts[i].key : "(null)");
    }
    if (!st && !*dir)
        st = FAIL(be, NPL_ACCEL_ERR_HW_UNSUPPORTED,
                  "no QNN library folder: pass qnn_lib=DIR (--qnn-lib) or install onnxruntime-qnn with scripts/install-deps.sh");
    const long anon0 = qnn_rss_anon_kb();
    if (!st) st = qnn_load(be, dir);
    if (!st && be->profile > 0) /* libQnnHtp.so's own start (threads, tables), before any context */
        fprintf(stderr, "qnn-htp profile: loading QNN and creating the HTP backend: RssAnon %+.1f MiB (QNN's own)\n",
                (qnn_rss_anon_kb() - anon0) / 1024.0);
    if (st) {
        if (err && errlen) snprintf(err, errlen, "%s", be->err);
        if (be->q) qnn_unload(be);
        free(be);
        return st;
    }
    *out = be;
    return NPL_ACCEL_OK;
}

static void backend_free(npl_accel_backend *be) {
    if (!be) return;
    qnn_unload(be);
    qnn_ops_free(be);
    free(be);
}

static const char *last_error(const npl_accel_backend *be) { return be ? be->err : "qnn-htp: no backend"; }

static npl_accel_status backend_get_info(npl_accel_backend *be, npl_accel_backend_info *out) {
    if (!be || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->name = "qnn-htp";
    const Qnn_ApiVersion_t *v = &be->prov->apiVersion;
    snprintf(out->kernel_family, sizeof out->kernel_family, "qnn-htp %u.%u", v->backend.major, v->backend.minor);
    snprintf(out->available_families, sizeof out->available_families, "qnn-htp (QNN core %u.%u.%u)", v->core.major,
             v->core.minor, v->core.patch);
    return NPL_ACCEL_OK;
}

static npl_accel_status device_create(npl_accel_backend *be, const npl_accel_option *opts, uint32_t n_opts,
                                      npl_accel_device **out) {
    if (!be || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    const qnn_soc *soc = NULL;
    const char *act = NULL;
    for (uint32_t i = 0; i < n_opts; i++) {
        if (opts[i].key && !strcmp(opts[i].key, "act") && opts[i].value) {
            act = opts[i].value;
            continue;
        }
        if (!opts[i].key || strcmp(opts[i].key, "soc") || !opts[i].value)
            return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "unknown device option '%s' (known: soc, act)", opts[i].key ? opts[i].key : "(null)");
        if (!(soc = qnn_soc_find(opts[i].value))) {
            uint32_t n;
            const qnn_soc *t = qnn_soc_table(&n);
            char names[256] = "";
            for (uint32_t k = 0; k < n; k++) strcat(strcat(names, k ? ", " : ""), t[k].name);
            return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "unknown SoC '%s' (known: %s)", opts[i].value, names);
        }
    }
    /* act: the activation type the graphs will use; a float one on an SoC
     * whose HTP has no fp16 (HTP float ops compute in fp16) is refused */
    if (act && strcmp(act, "int16") && strcmp(act, "f16") && strcmp(act, "bf16") && strcmp(act, "f32"))
        return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "device option act '%s': not f16, bf16, f32 or int16", act);
    if (act && strcmp(act, "int16") && soc && !soc->fp16)
        return FAIL(be, NPL_ACCEL_ERR_HW_UNSUPPORTED,
                    "%s (Hexagon v%u) has no fp16 on its NPU (INT4 / INT8 / INT16 only): %s activations cannot run "
                    "there, int16 can", soc->name, soc->arch, act);
    npl_accel_device *d = calloc(1, sizeof *d);
    if (!d) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    d->be = be;
    d->soc = soc;
    QnnHtpDevice_CustomConfig_t c_soc, c_arch;
    Qnn_Config_t cfg[2];
    const Qnn_Config_t *list[3] = {NULL, NULL, NULL};
    memset(&c_soc, 0, sizeof c_soc);
    memset(&c_arch, 0, sizeof c_arch);
    if (soc) {
        c_soc.option = QNN_HTP_DEVICE_CONFIG_OPTION_SOC, c_soc.socModel = soc->soc_id;
        c_arch.option = QNN_HTP_DEVICE_CONFIG_OPTION_ARCH, c_arch.arch.deviceId = 0, c_arch.arch.arch = soc->arch;
        cfg[0].option = cfg[1].option = QNN_CONFIG_OPTION_CUSTOM;
        cfg[0].custom = &c_soc, cfg[1].custom = &c_arch;
        list[0] = &cfg[0], list[1] = &cfg[1];
    }
    qnn_log_reset();
    Qnn_ErrorHandle_t e = be->q->deviceCreate(be->log, soc ? list : NULL, &d->dev);
    if (e != QNN_SUCCESS) {
        free(d);
        return qnn_fail_q(be, e, NPL_ACCEL_ERR_HW_UNSUPPORTED, "creating the HTP device for %s", soc ? soc->name : "the default target");
    }
    *out = d;
    return NPL_ACCEL_OK;
}

static void device_free(npl_accel_device *d) {
    if (!d) return;
    if (d->dev && d->be->q->deviceFree) d->be->q->deviceFree(d->dev);
    free(d);
}

/* ---- context ---- */

void qnn_graph_free(qnn_graph *g) {
    for (uint32_t i = 0; i < g->cap; i++) free(g->qso[i]);
    free(g->qso);
    free(g->qt);
    free(g->qdims);
    for (uint32_t i = 0; i < g->n_ropes; i++) free(g->ropes[i].factors);
    free(g->ropes);
    free(g->attns);
    qnn_keep_free(g);
    free(g->name);
    free(g);
}

void qnn_tensor_release(qnn_tensor *t) {
    free(t->name);
    free((void *)t->quant.scales);
    free((void *)t->quant.offsets);
    free(t->data);
    free(t->lpbq_sc);
    free(t->lpbq_m);
}

npl_accel_status qnn_context_free(npl_accel_context *c) {
    if (!c) return NPL_ACCEL_OK;
    if (c->ctx) c->be->q->contextFree(c->ctx, NULL);
    for (uint32_t i = 0; i < c->n_g; i++) {
        const qnn_graph *g = c->g[i];
        if (c->be->profile > 0 && g->executions) /* times of QNN's graphExecute alone (on x86: the emulator) */
            fprintf(stderr, "qnn-htp profile: graph %s: %llu executions, mean %.3f ms, min %.3f ms, max %.3f ms%s\n",
                    g->name, (unsigned long long)g->executions, g->exec_ns_total / 1e6 / (double)g->executions,
                    g->exec_ns_min / 1e6, g->exec_ns_max / 1e6, " (x86: software emulation)");
        qnn_graph_free(c->g[i]);
    }
    for (uint32_t i = 0; i < c->n_t; i++) qnn_tensor_release(&c->t[i]);
    free(c->g);
    free(c->t);
    free(c);
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_context_new(npl_accel_backend *be, npl_accel_device *dev, npl_accel_context **out) {
    if (!be || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    if (dev && dev->be != be) return FAIL(be, NPL_ACCEL_ERR_INVALID_HANDLE, "the device belongs to another backend");
    *out = calloc(1, sizeof **out);
    if (!*out) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    (*out)->be = be;
    (*out)->dev = dev;
    return NPL_ACCEL_OK;
}

static npl_accel_status context_create(npl_accel_backend *be, npl_accel_device *dev, const npl_accel_option *opts,
                                       uint32_t n_opts, npl_accel_context **out) {
    if (out) *out = NULL;
    int share = 0;
    uint32_t refuse = 0;
    for (uint32_t i = 0; i < n_opts; i++) {
        char *end = NULL;
        const long v = opts[i].value ? strtol(opts[i].value, &end, 10) : 0;
        if (opts[i].key && !strcmp(opts[i].key, "weight_sharing") && opts[i].value &&
            (!strcmp(opts[i].value, "0") || !strcmp(opts[i].value, "1")))
            share = opts[i].value[0] == '1';
        else if (opts[i].key && !strcmp(opts[i].key, "lpbq_refuse_above") && end && !*end && v > 0 && v < 65536)
            refuse = (uint32_t)v; /* a test's: qnn_impl.h */
        else
            return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "unknown context option '%s=%s' (known: weight_sharing=0|1, "
                        "lpbq_refuse_above=N)", opts[i].key ? opts[i].key : "(null)", opts[i].value ? opts[i].value : "");
    }
    npl_accel_status st = qnn_context_new(be, dev, out);
    if (st) return st;
    (*out)->lpbq_refuse = refuse;
    /* weight_sharing=1: the HTP stores a static tensor that several graphs
     * name once in the binary (QNN computes the sharing at get-binary). QNN
     * on x86 cannot load such a binary ("Shared weights buffer isn't
     * supported on this platform"); a device's QNN can. */
    QnnHtpContext_CustomConfig_t hc;
    memset(&hc, 0, sizeof hc);
    hc.option = QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED, hc.weightSharingEnabled = 1;
    Qnn_Config_t cc = {.option = QNN_CONFIG_OPTION_CUSTOM, .custom = &hc};
    const Qnn_Config_t *cl[2] = {&cc, NULL};
    qnn_log_reset();
    Qnn_ErrorHandle_t e = be->q->contextCreate(be->be, dev ? dev->dev : NULL, share ? cl : NULL, &(*out)->ctx);
    if (e != QNN_SUCCESS) {
        qnn_context_free(*out);
        *out = NULL;
        return qnn_fail_q(be, e, NPL_ACCEL_ERR_INTERNAL, "creating a QNN context");
    }
    return NPL_ACCEL_OK;
}

qnn_graph *qnn_find_graph(npl_accel_context *c, const char *name) {
    for (uint32_t i = 0; i < c->n_g; i++)
        if (!strcmp(c->g[i]->name, name)) return c->g[i];
    return NULL;
}

npl_accel_status qnn_add_graph(npl_accel_context *c, const char *name, qnn_graph **out) {
    if (c->n_g == c->cap_g) {
        uint32_t cap = c->cap_g ? c->cap_g * 2 : 4;
        qnn_graph **g = realloc(c->g, sizeof *g * cap);
        if (!g) return FAIL(c->be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
        c->g = g, c->cap_g = cap;
    }
    qnn_graph *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name))) {
        free(g);
        return FAIL(c->be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    }
    g->ctx = c;
    g->exec_ns_min = UINT64_MAX;
    c->g[c->n_g++] = g;
    *out = g;
    return NPL_ACCEL_OK;
}

static npl_accel_status graph_create(npl_accel_context *c, const char *name, npl_accel_graph **out) {
    if (!c || !name || !*name || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    if (c->from_binary) return FAIL(c->be, NPL_ACCEL_ERR_STATE, "a context loaded from a binary takes no new graphs");
    if (qnn_find_graph(c, name)) return FAIL(c->be, NPL_ACCEL_ERR_DUPLICATE_NAME, "graph '%s' already exists", name);
    qnn_graph *g;
    npl_accel_status st = qnn_add_graph(c, name, &g);
    if (st) return st;
    /* Float tensors compute in fp16 on the HTP (fp32 tensors included). */
    QnnHtpGraph_CustomConfig_t hp;
    memset(&hp, 0, sizeof hp);
    hp.option = QNN_HTP_GRAPH_CONFIG_OPTION_PRECISION, hp.precision = QNN_PRECISION_FLOAT16;
    Qnn_Config_t gc = {.option = QNN_CONFIG_OPTION_CUSTOM, .custom = &hp};
    const Qnn_Config_t *gl[2] = {&gc, NULL};
    qnn_log_reset();
    Qnn_ErrorHandle_t e = c->be->q->graphCreate(c->ctx, name, gl, &g->g);
    if (e != QNN_SUCCESS) {
        qnn_graph_free(g);
        c->n_g--;
        return qnn_fail_q(c->be, e, NPL_ACCEL_ERR_INTERNAL, "creating graph '%s'", name);
    }
    *out = g;
    return NPL_ACCEL_OK;
}

/* ---- tensors ---- */

uint64_t qnn_n_elems(uint32_t rank, const uint32_t *dims) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static npl_accel_status check_desc(npl_accel_backend *be, const npl_accel_tensor_desc *d) {
    const char *nm = d->name ? d->name : "(null)";
    if (!d->name || !*d->name) return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "a tensor needs a name");
    if (d->kind >= NPL_ACCEL_KIND_COUNT) return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': kind %u", nm, d->kind);
    if (!qnn_dtype(d->dtype))
        return FAIL(be, NPL_ACCEL_ERR_UNSUPPORTED, "tensor '%s': data type %u has no QNN HTP form (F32, F16, INT8, UINT8, INT16, INT32)",
                    nm, d->dtype);
    if (d->rank < 1 || d->rank > NPL_ACCEL_MAX_RANK) return FAIL(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "tensor '%s': rank %u", nm, d->rank);
    for (uint32_t i = 0; i < d->rank; i++)
        if (!d->dims[i]) return FAIL(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "tensor '%s': dims[%u] is 0", nm, i);
    uint64_t bytes = qnn_n_elems(d->rank, d->dims) * qnn_elem_bytes(d->dtype);
    if (bytes > UINT32_MAX) return FAIL(be, NPL_ACCEL_ERR_SHAPE_MISMATCH, "tensor '%s': over 4 GiB", nm);
    int quantized = d->dtype == NPL_ACCEL_DT_INT8 || d->dtype == NPL_ACCEL_DT_UINT8 || d->dtype == NPL_ACCEL_DT_INT16;
    const npl_accel_quant *q = &d->quant;
    if (q->encoding == NPL_ACCEL_QUANT_DYNAMIC)
        return FAIL(be, NPL_ACCEL_ERR_UNSUPPORTED, "tensor '%s': dynamic quantization is not mapped to QNN yet", nm);
    if (q->encoding == NPL_ACCEL_QUANT_PER_BLOCK && /* QNN's blockwise expansion (qnn_lpbq.c) */
        (d->kind != NPL_ACCEL_STATIC || d->dtype != NPL_ACCEL_DT_INT8 || d->rank != 2 || q->axis != 0 || !q->block_size ||
         d->dims[1] % q->block_size || q->n_scales != d->dims[0] * (d->dims[1] / q->block_size) || !q->scales))
        return FAIL(be, NPL_ACCEL_ERR_UNSUPPORTED, "tensor '%s': per-block quantization maps to QNN's blockwise expansion "
                    "for STATIC INT8 [N, K] weights with axis 0, blocks along K and N * K / block_size scales", nm);
    if (q->encoding > NPL_ACCEL_QUANT_DYNAMIC) return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': quant encoding %u", nm, q->encoding);
    if (quantized != (q->encoding != NPL_ACCEL_QUANT_NONE))
        return FAIL(be, NPL_ACCEL_ERR_TYPE_MISMATCH, "tensor '%s': %s", nm,
                    quantized ? "INT8 / UINT8 / INT16 need per-tensor or per-axis scales" : "only INT8 / UINT8 / INT16 take scales");
    if (q->encoding == NPL_ACCEL_QUANT_PER_TENSOR && (q->n_scales != 1 || !q->scales))
        return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': per-tensor quant needs n_scales = 1", nm);
    if (q->encoding == NPL_ACCEL_QUANT_PER_AXIS &&
        (q->axis < 0 || (uint32_t)q->axis >= d->rank || q->n_scales != d->dims[q->axis] || !q->scales))
        return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': per-axis quant needs 0 <= axis < rank and n_scales = dims[axis]", nm);
    for (uint32_t i = 0; i < q->n_scales; i++)
        if (!(q->scales[i] > 0)) return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': scale %u is not > 0", nm, i);
    if (d->kind == NPL_ACCEL_APP_READWRITE && quantized) /* a host buffer the adapter writes rows into */
        return FAIL(be, NPL_ACCEL_ERR_UNSUPPORTED, "tensor '%s': APP_READWRITE tensors are F16 / F32 / INT32 here", nm);
    if (d->kind == NPL_ACCEL_STATIC && (!d->data || d->data_size != bytes))
        return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "tensor '%s': STATIC data of %llu bytes, the shape needs %llu", nm,
                    (unsigned long long)d->data_size, (unsigned long long)bytes);
    return NPL_ACCEL_OK;
}

static int same_desc(const qnn_tensor *t, const npl_accel_tensor_desc *d) {
    if (t->kind != d->kind || t->dtype != d->dtype || t->rank != d->rank ||
        memcmp(t->dims, d->dims, sizeof(uint32_t) * d->rank) || t->quant.encoding != d->quant.encoding ||
        t->quant.n_scales != d->quant.n_scales || t->quant.axis != d->quant.axis)
        return 0;
    for (uint32_t i = 0; i < d->quant.n_scales; i++)
        if (t->quant.scales[i] != d->quant.scales[i] ||
            t->quant.offsets[i] != (d->quant.offsets ? d->quant.offsets[i] : 0))
            return 0;
    if (t->kind == NPL_ACCEL_APP_READWRITE) return 1; /* the same cache, named again by another graph */
    if (t->dtype == NPL_ACCEL_DT_INT16) { /* stored flipped */
        const uint16_t *a = t->data, *b = d->data;
        for (uint64_t i = 0; i < t->bytes / 2; i++)
            if ((uint16_t)(a[i] ^ 0x8000u) != b[i]) return 0;
        return 1;
    }
    return !memcmp(t->data, d->data, t->bytes);
}

/* A zeroed record at the end of the context's tensor list (not counted in
 * n_t until the caller fills it), or NULL when out of memory. */
qnn_tensor *qnn_context_append_tensor(npl_accel_context *c) {
    if (c->n_t == c->cap_t) {
        uint32_t cap = c->cap_t ? c->cap_t * 2 : 32;
        qnn_tensor *t = realloc(c->t, sizeof *t * cap);
        if (!t) return NULL;
        c->t = t, c->cap_t = cap;
    }
    memset(&c->t[c->n_t], 0, sizeof c->t[c->n_t]);
    return &c->t[c->n_t];
}

npl_accel_status qnn_new_tensor(npl_accel_context *c, qnn_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    npl_accel_backend *be = c->be;
    npl_accel_status st = check_desc(be, d);
    if (st) return st;
    for (uint32_t i = 0; i < c->n_t; i++)
        if (!strcmp(c->t[i].name, d->name)) {
            if ((d->kind == NPL_ACCEL_STATIC || d->kind == NPL_ACCEL_APP_READWRITE) && same_desc(&c->t[i], d)) {
                *out = i;
                return NPL_ACCEL_OK;
            }
            return FAIL(be, NPL_ACCEL_ERR_DUPLICATE_NAME, "tensor '%s' already exists in the context", d->name);
        }
    qnn_tensor *t = qnn_context_append_tensor(c);
    if (!t) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    t->kind = d->kind, t->dtype = d->dtype, t->rank = d->rank;
    memcpy(t->dims, d->dims, sizeof t->dims);
    t->bytes = qnn_n_elems(d->rank, d->dims) * qnn_elem_bytes(d->dtype);
    /* STATIC and APP_READWRITE tensors are context-wide */
    t->graph = d->kind == NPL_ACCEL_STATIC || d->kind == NPL_ACCEL_APP_READWRITE ? NULL : g;
    t->quant = d->quant;
    t->quant.scales = NULL, t->quant.offsets = NULL;
    int ok = (t->name = strdup(d->name)) != NULL;
    if (ok && d->quant.n_scales) {
        float *s = malloc(sizeof *s * d->quant.n_scales);
        int32_t *o = calloc(d->quant.n_scales, sizeof *o);
        if (s) memcpy(s, d->quant.scales, sizeof *s * d->quant.n_scales);
        if (o && d->quant.offsets) memcpy(o, d->quant.offsets, sizeof *o * d->quant.n_scales);
        t->quant.scales = s, t->quant.offsets = o;
        ok = s && o;
    }
    if (ok && d->kind == NPL_ACCEL_STATIC) {
        ok = (t->data = malloc(t->bytes)) != NULL;
        if (ok) memcpy(t->data, d->data, t->bytes);
        if (ok && d->dtype == NPL_ACCEL_DT_INT16)
            for (uint64_t i = 0; i < t->bytes / 2; i++) ((uint16_t *)t->data)[i] ^= 0x8000u;
        /* 4-bit weights in int8 (symmetric, values -8..7) get QNN's bitwidth-4
         * per-axis encoding: the same numbers, half the HTP's weight memory. */
        if (ok && d->dtype == NPL_ACCEL_DT_INT8 && d->quant.encoding == NPL_ACCEL_QUANT_PER_AXIS && d->rank == 2) {
            int fits = 1;
            for (uint32_t i = 0; i < d->quant.n_scales && fits; i++) fits = !d->quant.offsets || !d->quant.offsets[i];
            for (uint64_t i = 0; i < t->bytes && fits; i++) fits = ((const int8_t *)d->data)[i] >= -8 && ((const int8_t *)d->data)[i] <= 7;
            t->bits4 = fits;
        }
        if (ok && d->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK && (st = qnn_lpbq_factor(be, t, d->data))) {
            qnn_tensor_release(t);
            return st;
        }
    }
    /* QNN HTP has no context tensors (tensorCreateContextTensor: 1000): an
     * APP_READWRITE tensor is a zeroed host buffer; the graphs that use it
     * take it as hidden inputs and outputs (Attention's caches, qnn_attn.c) */
    if (ok && d->kind == NPL_ACCEL_APP_READWRITE && !c->validate) ok = (t->data = calloc(1, t->bytes ? t->bytes : 1)) != NULL;
    if (!ok) {
        qnn_tensor_release(t);
        return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    }
    npl_accel_tensor_id id = c->n_t++;
    if (g && t->graph) { /* graph inputs and outputs exist even if no node uses them yet */
        Qnn_Tensor_t *q;
        if ((st = qnn_graph_tensor(g, id, &q))) {
            qnn_tensor_release(t);
            c->n_t--;
            return st;
        }
    }
    *out = id;
    return NPL_ACCEL_OK;
}

static npl_accel_status tensor_create(npl_accel_graph *g, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    if (!g || !d || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    if (g->finalized) return FAIL(g->ctx->be, NPL_ACCEL_ERR_STATE, "graph '%s' is finalized", g->name);
    return qnn_new_tensor(g->ctx, g, d, out);
}

static npl_accel_status context_tensor_create(npl_accel_context *c, const npl_accel_tensor_desc *d, npl_accel_tensor_id *out) {
    if (!c || !d || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    if (d->kind != NPL_ACCEL_STATIC && d->kind != NPL_ACCEL_APP_READWRITE)
        return FAIL(c->be, NPL_ACCEL_ERR_INVALID_ARG, "context tensor '%s' must be STATIC or APP_READWRITE", d->name ? d->name : "");
    return qnn_new_tensor(c, NULL, d, out);
}

/* ---- graphs ---- */

static npl_accel_status graph_add_node(npl_accel_graph *g, const npl_accel_node_desc *n) {
    if (!g || !n || !n->op || (n->n_inputs && !n->inputs) || (n->n_outputs && !n->outputs)) return NPL_ACCEL_ERR_INVALID_ARG;
    if (g->finalized) return FAIL(g->ctx->be, NPL_ACCEL_ERR_STATE, "graph '%s' is finalized", g->name);
    return qnn_lower_node(g, n);
}

static npl_accel_status graph_finalize(npl_accel_graph *g) {
    if (!g) return NPL_ACCEL_ERR_INVALID_ARG;
    if (g->finalized) return FAIL(g->ctx->be, NPL_ACCEL_ERR_STATE, "graph '%s' is already finalized", g->name);
    if (!g->n_nodes) return FAIL(g->ctx->be, NPL_ACCEL_ERR_STATE, "graph '%s' has no nodes", g->name);
    const uint32_t refuse = g->ctx->lpbq_refuse;
    if (refuse && g->lpbq_widest > refuse)
        return FAIL(g->ctx->be, NPL_ACCEL_ERR_UNSUPPORTED, "graph '%s': finalize refused: an LPBQ slice of %u output "
                    "channels (test option lpbq_refuse_above=%u)", g->name, g->lpbq_widest, refuse);
    uint64_t t0 = qnn_now_ns();
    qnn_log_reset();
    Qnn_ErrorHandle_t e = g->ctx->be->q->graphFinalize(g->g, NULL, NULL);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(g->ctx->be, e, NPL_ACCEL_ERR_UNSUPPORTED, "graph '%s': finalize for %s refused", g->name,
                          g->ctx->dev && g->ctx->dev->soc ? g->ctx->dev->soc->name : "the default target");
    g->finalize_ns = qnn_now_ns() - t0;
    g->finalized = 1;
    qnn_keep_free(g);
    return NPL_ACCEL_OK;
}

static const npl_accel_api api = {
    .abi_version = NPL_ACCEL_ABI_VERSION, /* of the version-2 methods, backend_create_on_pool is not offered */
    .struct_size = sizeof(npl_accel_api),
    .name = "qnn-htp",
    .backend_create = backend_create,
    .backend_free = backend_free,
    .last_error = last_error,
    .backend_get_info = backend_get_info,
    .device_create = device_create,
    .device_free = device_free,
    .context_create = context_create,
    .context_free = qnn_context_free,
    .graph_create = graph_create,
    .tensor_create = tensor_create,
    .context_tensor_create = context_tensor_create,
    .graph_add_node = graph_add_node,
    .graph_finalize = graph_finalize,
    .graph_execute = qnn_graph_execute,
    .graph_retrieve = qnn_graph_retrieve,
    .graph_get_profile = qnn_graph_get_profile,
    .context_get_binary_size = qnn_context_get_binary_size,
    .context_get_binary = qnn_context_get_binary,
    .context_create_from_binary = qnn_context_create_from_binary,
    .binary_info_get = qnn_binary_info_get,
    .binary_info_free = qnn_binary_info_free,
    .context_tensor_data = qnn_context_tensor_data,
    .validate_node = qnn_validate_node,
    .list_ops = qnn_list_ops,
};

/* The provider: libnpl_accel_qnn-htp.so exports it as npl_accel_get_api
 * (src/accel/plugin_entry.c). */
const npl_accel_api *npl_qnn_get_api(uint32_t requested_version);
const npl_accel_api *npl_qnn_get_api(uint32_t requested_version) {
    return requested_version >= 1 && requested_version <= api.abi_version ? &api : NULL;
}
