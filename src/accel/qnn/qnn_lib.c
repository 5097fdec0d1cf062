/* Loading QNN's libraries, collecting its log lines and turning its error
 * codes into ABI statuses and messages; the SoC table. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

/* Snapdragon SoCs and their HTP architecture, as QNN v2.51 numbers them
 * (QnnHtpDevice.h soc models; SM7635 = 73: a binary finalized with soc model
 * 73 records "soc_type=SM7635;arch=73"). Each pair is set as the device's SOC
 * and ARCH options; test_qnn_binary finalizes a graph for every row.
 * fp16: the HTP architecture alone does not say it. Snapdragon 7s Gen 3
 * (SM7635, v73 like SM8550) lists INT4 / INT8 / INT16 and no FP16 in its
 * product brief, so ailia LLM runs int16 models there (shared/reference/003). */
static const qnn_soc socs[] = {
    {"SM8350", 30, 68, 1}, /* Snapdragon 888 */
    {"SM8450", 36, 69, 1}, /* 8 Gen 1 */
    {"SM8550", 43, 73, 1}, /* 8 Gen 2 */
    {"SM7635", 73, 73, 0}, /* 7s Gen 3 */
    {"SM8650", 57, 75, 1}, /* 8 Gen 3 */
    {"SM8750", 69, 79, 1}, /* 8 Elite */
    {"SM8850", 87, 81, 1}, /* 8 Elite Gen 5 */
};

const qnn_soc *qnn_soc_table(uint32_t *n) {
    *n = (uint32_t)(sizeof socs / sizeof socs[0]);
    return socs;
}

const qnn_soc *qnn_soc_find(const char *name) {
    for (size_t i = 0; i < sizeof socs / sizeof socs[0]; i++)
        if (!strcasecmp(socs[i].name, name)) return &socs[i];
    return NULL;
}

/* QNN's log callback carries no user pointer, so its lines go to a buffer of
 * the calling thread (QNN logs synchronously from the API call) — the
 * plugin's only writable static storage, which that API leaves no way
 * around (QnnError_getVerboseMessage, the alternative, answers 1000); the
 * adapter clears it before a call and appends it to the error after a
 * failure. Only errors are kept: warnings of this release are noise
 * ("unexpected GraphHtpSettings option", VTCM, remote weights). */
static _Thread_local char log_buf[768];
static _Thread_local size_t log_len;

void qnn_log_reset(void) {
    log_len = 0;
    log_buf[0] = 0;
}

static void log_cb(const char *fmt, uint32_t level, uint64_t ts, va_list ap) {
    (void)ts;
    if (level != QNN_LOG_LEVEL_ERROR || log_len + 4 >= sizeof log_buf) return;
    const size_t start = log_len;
    if (log_len) log_buf[log_len++] = ';', log_buf[log_len++] = ' ';
    int k = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
    if (k < 0) k = 0;
    log_len += (size_t)k;
    if (log_len >= sizeof log_buf) log_len = sizeof log_buf - 1;
    while (log_len > start && (log_buf[log_len - 1] == '\n' || log_buf[log_len - 1] == ' ')) log_buf[--log_len] = 0;
    /* QNN repeats a line as the error travels up its layers: keep the first */
    const char *line = log_buf + start + (start ? 2 : 0);
    while (*line == ' ') line++;
    if (start && *line) {
        log_buf[start] = 0;
        int dup = strstr(log_buf, line) != NULL;
        log_buf[start] = ';';
        if (dup) log_len = start, log_buf[start] = 0;
    }
}

static npl_accel_status vfail(npl_accel_backend *be, npl_accel_status st, const char *fmt, va_list ap) {
    if (be) vsnprintf(be->err, sizeof be->err, fmt, ap);
    return st;
}

npl_accel_status qnn_fail(npl_accel_backend *be, npl_accel_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(be, st, fmt, ap);
    va_end(ap);
    return st;
}

/* QNN error codes are grouped by API: 1000s common, 3000s backend,
 * 4000s/5000s context, 6000s graph, 7000s tensor... Codes that mean the same
 * for every caller map here; the caller passes its own status otherwise. */
static npl_accel_status map_code(Qnn_ErrorHandle_t e, npl_accel_status dflt) {
    switch (e & 0xffff) {
    case 1000: return NPL_ACCEL_ERR_UNSUPPORTED; /* QNN_COMMON_ERROR_NOT_SUPPORTED */
    case 1002: return dflt;                      /* MEM_ALLOC: also how finalize refuses a configuration */
    case 1003: return NPL_ACCEL_ERR_INVALID_ARG; /* INVALID_ARGUMENT */
    case 1006: return NPL_ACCEL_ERR_STATE;       /* OPERATION_NOT_PERMITTED */
    default: return dflt;
    }
}

npl_accel_status qnn_fail_q(npl_accel_backend *be, Qnn_ErrorHandle_t e, npl_accel_status st, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *msg = NULL;
    if (!be->q->errorGetMessage || be->q->errorGetMessage(e, &msg) != QNN_SUCCESS || !msg) msg = "no message";
    snprintf(be->err, sizeof be->err, "qnn-htp: %s: QNN error %llu (%s)%s%s", what, (unsigned long long)(e & 0xffff), msg,
             log_len ? "; QNN log: " : "", log_len ? log_buf : "");
    return map_code(e, st);
}

static void *open_lib(npl_accel_backend *be, const char *dir, const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) qnn_fail(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "qnn-htp: cannot load %s: %s", path, dlerror());
    return h;
}

npl_accel_status qnn_load(npl_accel_backend *be, const char *dir) {
    snprintf(be->lib_dir, sizeof be->lib_dir, "%s", dir);
    if (!(be->lib = open_lib(be, dir, "libQnnHtp.so"))) return NPL_ACCEL_ERR_HW_UNSUPPORTED;
    QnnInterfaceGetProvidersFn_t gp = (QnnInterfaceGetProvidersFn_t)dlsym(be->lib, "QnnInterface_getProviders");
    if (!gp)
        return qnn_fail(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "qnn-htp: %s/libQnnHtp.so has no QnnInterface_getProviders", dir);
    const QnnInterface_t **list = NULL;
    uint32_t n = 0;
    if (gp(&list, &n) != QNN_SUCCESS || !n || !list || !list[0])
        return qnn_fail(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "qnn-htp: %s/libQnnHtp.so lists no QNN provider", dir);
    be->prov = list[0];
    const Qnn_Version_t *cv = &be->prov->apiVersion.core;
    /* The declarations in qnn_api.h are of core API 2.x (append-only tables). */
    if (cv->major != 2 || cv->minor < 14)
        return qnn_fail(be, NPL_ACCEL_ERR_ABI_VERSION,
                        "qnn-htp: %s/libQnnHtp.so has QNN core API %u.%u.%u; this adapter needs 2.14 or newer 2.x", dir,
                        cv->major, cv->minor, cv->patch);
    be->q = &be->prov->v;
    const QnnIface_t *q = be->q;
    if (!q->backendCreate || !q->deviceCreate || !q->contextCreate || !q->graphCreate || !q->graphAddNode ||
        !q->graphFinalize || !q->graphExecute || !q->tensorCreateGraphTensor || !q->logCreate ||
        !q->contextGetBinary || !q->contextCreateFromBinary || !q->graphRetrieve)
        return qnn_fail(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "qnn-htp: %s/libQnnHtp.so lacks functions of the QNN API", dir);
    qnn_log_reset();
    Qnn_ErrorHandle_t e = q->logCreate(log_cb, QNN_LOG_LEVEL_ERROR, &be->log);
    if (e != QNN_SUCCESS) return qnn_fail_q(be, e, NPL_ACCEL_ERR_INTERNAL, "creating the QNN log");
    e = q->backendCreate(be->log, NULL, &be->be);
    if (e != QNN_SUCCESS) return qnn_fail_q(be, e, NPL_ACCEL_ERR_HW_UNSUPPORTED, "creating the HTP backend");
    return NPL_ACCEL_OK;
}

void qnn_unload(npl_accel_backend *be) {
    if (be->sysctx && be->sys->systemContextFree) be->sys->systemContextFree(be->sysctx);
    be->sysctx = NULL;
    if (be->be) be->q->backendFree(be->be);
    if (be->log && be->q->logFree) be->q->logFree(be->log);
    /* The libraries stay loaded: libQnnHtp.so starts threads and registers
     * handlers that do not survive dlclose. */
    be->be = be->log = NULL;
}

const void *qnn_binary_info(npl_accel_backend *be, const void *bin, uint64_t size, uint32_t *n_graphs) {
    if (!be->syslib && !(be->syslib = open_lib(be, be->lib_dir, "libQnnSystem.so"))) return NULL;
    QnnSystemInterfaceGetProvidersFn_t gp =
        (QnnSystemInterfaceGetProvidersFn_t)dlsym(be->syslib, "QnnSystemInterface_getProviders");
    const QnnSystemInterface_t **list = NULL;
    uint32_t n = 0;
    if (!gp || gp(&list, &n) != QNN_SUCCESS || !n || !list[0]->v.systemContextCreate) {
        qnn_fail(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "qnn-htp: %s/libQnnSystem.so is not a QNN system library", be->lib_dir);
        return NULL;
    }
    const QnnSysIface_t *s = &list[0]->v;
    be->sys = s;
    /* one per backend, kept until backend_free: the info record lives in it */
    if (!be->sysctx && s->systemContextCreate(&be->sysctx) != QNN_SUCCESS) {
        qnn_fail(be, NPL_ACCEL_ERR_INTERNAL, "qnn-htp: cannot create a QNN system context");
        return NULL;
    }
    const void *info = NULL;
    Qnn_ContextBinarySize_t isz = 0;
    qnn_log_reset();
    Qnn_ErrorHandle_t e = s->systemContextGetBinaryInfo(be->sysctx, (void *)bin, size, &info, &isz);
    if (e != QNN_SUCCESS || !info) {
        qnn_fail(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "qnn-htp: not a readable QNN context binary (QNN error %llu%s%s)",
                 (unsigned long long)(e & 0xffff), log_len ? ": " : "", log_buf);
        return NULL;
    }
    uint32_t ver;
    memcpy(&ver, info, 4);
    if (ver != QNN_BININFO_V3) {
        qnn_fail(be, NPL_ACCEL_ERR_BINARY_VERSION, "qnn-htp: QNN binary info record of version %u (this adapter reads 3)", ver);
        return NULL;
    }
    memcpy(n_graphs, (const char *)info + QNN_BININFO_NGRAPHS_OFF, 4);
    return info;
}

const QnnSystemContext_GraphInfo_t *qnn_binary_graph(const void *info, uint32_t i) {
    const char *graphs;
    memcpy(&graphs, (const char *)info + QNN_BININFO_GRAPHS_OFF, sizeof graphs);
    return (const QnnSystemContext_GraphInfo_t *)(graphs + (size_t)i * QNN_BININFO_GRAPH_STRIDE + 8);
}

long qnn_rss_anon_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "RssAnon:", 8)) kb = strtol(line + 8, NULL, 10);
    if (f) fclose(f);
    return kb;
}
