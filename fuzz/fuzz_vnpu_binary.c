/* libFuzzer harness for the vnpu context binary reader (vnpu_binary.c):
 * binary_info_get and context_create_from_binary over arbitrary bytes, and
 * for a binary that loads, every graph executed once.
 *
 * A binary carries its total size and a checksum, so almost every mutation
 * would stop at the checksum. The harness therefore loads each input twice:
 * as it is (the checksum and size checks themselves), then, when that
 * failed, with the header's size field and checksum repaired (FNV-1a 64 over
 * 64-bit little-endian words, the checksum field counted as zero, the tail
 * byte by byte; see vnpu_binary.c), which lets mutations reach the tensor,
 * pack, graph and step records behind it.
 *
 * A loaded context's graphs are run with their APP_WRITE inputs filled from
 * the input bytes (int32 values in [-1, 6], so token ids and positions are
 * mostly valid and sometimes not) and every APP_READ output bound. Execution
 * may fail (out-of-range index or position), never crash.
 *
 * Checks: failures set a status and a non-empty message; binary info agrees
 * with the loaded context (graph names retrievable, tensors sized); a
 * context tensor's memory has the size its info implies; everything a
 * context allocated is freed (LeakSanitizer).
 * Seeds: fuzz/make_vnpu_seeds.c. Build and run with: fuzz/run vnpu_binary SECONDS */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu_api.h"

#define VB_HDR 128
#define VB_CKSUM_AT 56
#define VB_MAX_EXEC_BYTES ((uint64_t)16 << 20)
#define VB_MAX_CONTEXT_BYTES ((uint64_t)64 << 20)

static const npl_accel_api *vb_api;
static npl_accel_backend *vb_be;
static npl_accel_device *vb_dev;

static void vb_init(void) {
    if (vb_api) return;
    vb_api = npl_vnpu_get_api(NPL_ACCEL_ABI_VERSION);
    if (!vb_api) abort();
    npl_accel_option opt = {"threads", "1"};
    char err[256];
    if (vb_api->backend_create(&opt, 1, &vb_be, err, sizeof err)) abort();
    if (vb_api->device_create(vb_be, NULL, 0, &vb_dev)) abort();
}

static uint64_t vb_checksum(const uint8_t *b, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        if (i != VB_CKSUM_AT) memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void vb_check_failed(npl_accel_status st) {
    if (st == NPL_ACCEL_OK) abort();
    const char *e = vb_api->last_error(vb_be);
    if (!e || !e[0]) abort();
}

static uint64_t vb_dtype_bytes(uint32_t dt, uint64_t n) {
    switch (dt) {
    case NPL_ACCEL_DT_F32: case NPL_ACCEL_DT_INT32: return 4 * n;
    case NPL_ACCEL_DT_F16: case NPL_ACCEL_DT_BF16: case NPL_ACCEL_DT_INT16: return 2 * n;
    case NPL_ACCEL_DT_INT8: case NPL_ACCEL_DT_UINT8: return n;
    case NPL_ACCEL_DT_Q4_0: return n / 32 * 18;
    case NPL_ACCEL_DT_Q8_0: return n / 32 * 34;
    default: abort();
    }
}

static uint64_t vb_tensor_bytes(const npl_accel_tensor_info *t) {
    if (!t->name || t->rank < 1 || t->rank > NPL_ACCEL_MAX_RANK) abort();
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] && n > UINT64_MAX / t->dims[d]) abort();
        n *= t->dims[d];
    }
    return vb_dtype_bytes(t->dtype, n);
}

static void vb_fill(void *p, uint64_t bytes, uint32_t dt, const uint8_t *src, size_t n) {
    uint8_t *b = p;
    if (dt == NPL_ACCEL_DT_INT32) {
        for (uint64_t i = 0; i < bytes / 4; i++) {
            int32_t v = (int32_t)(src[i % n] % 8) - 1;
            memcpy(b + 4 * i, &v, 4);
        }
    } else if (dt == NPL_ACCEL_DT_F32) {
        for (uint64_t i = 0; i < bytes / 4; i++) {
            float v = ((float)src[i % n] - 128.0f) / 32.0f;
            memcpy(b + 4 * i, &v, 4);
        }
    } else {
        for (uint64_t i = 0; i < bytes; i++) b[i] = src[i % n];
    }
}

/* Every graph of a loaded context run once. */
static void vb_run(npl_accel_context *ctx, const npl_accel_binary_info *info, const uint8_t *src, size_t n) {
    for (uint32_t gi = 0; gi < info->n_graphs; gi++) {
        const npl_accel_graph_info *g = &info->graphs[gi];
        npl_accel_graph *h = NULL;
        if (vb_api->graph_retrieve(ctx, g->name, &h) || !h) abort();
        uint32_t nb = g->n_inputs + g->n_outputs;
        npl_accel_buffer *bufs = calloc(nb + 1, sizeof *bufs);
        if (!bufs) abort();
        uint64_t total = 0;
        int ok = 1;
        for (uint32_t i = 0; i < nb && ok; i++) {
            const npl_accel_tensor_info *t = i < g->n_inputs ? &g->inputs[i] : &g->outputs[i - g->n_inputs];
            uint64_t bytes = vb_tensor_bytes(t);
            total += bytes;
            if (total > VB_MAX_EXEC_BYTES) {
                ok = 0;
                break;
            }
            bufs[i].name = t->name;
            bufs[i].size = bytes;
            bufs[i].data = malloc(bytes ? bytes : 1);
            if (!bufs[i].data) abort();
            if (i < g->n_inputs) vb_fill(bufs[i].data, bytes, t->dtype, src, n);
        }
        if (ok && g->arena_bytes <= VB_MAX_EXEC_BYTES) {
            npl_accel_status st = vb_api->graph_execute(h, bufs, g->n_inputs, bufs + g->n_inputs, g->n_outputs);
            if (st) vb_check_failed(st);
            npl_accel_profile prof;
            if (vb_api->graph_get_profile(h, &prof)) abort();
        }
        for (uint32_t i = 0; i < nb; i++) free(bufs[i].data);
        free(bufs);
    }
    for (uint32_t i = 0; i < info->n_context_tensors; i++) {
        const npl_accel_tensor_info *t = &info->context_tensors[i];
        void *p = NULL;
        uint64_t sz = 0;
        if (vb_api->context_tensor_data(ctx, t->name, &p, &sz) || !p || sz != vb_tensor_bytes(t)) abort();
        memset(p, 0, sz);
    }
}

/* 0 if the bytes loaded (info and context), else the failing status.
 * context_create_from_binary allocates and zeroes the APP_READWRITE tensors
 * as it reads their records, before the rest of the binary is checked, so
 * it is only called for binaries whose info loads with at most
 * VB_MAX_CONTEXT_BYTES of them (info reads the same records, allocating
 * nothing); otherwise a mutated dimension asks for terabytes. */
static npl_accel_status vb_load(const uint8_t *bin, size_t size, const uint8_t *src, size_t n) {
    npl_accel_binary_info *info = NULL;
    npl_accel_status st = vb_api->binary_info_get(vb_be, bin, size, &info);
    if (st) {
        vb_check_failed(st);
        if (info) abort();
        return st;
    }
    if (!info || info->total_size != size) abort();
    for (uint32_t gi = 0; gi < info->n_graphs; gi++) {
        const npl_accel_graph_info *g = &info->graphs[gi];
        if (!g->name) abort();
        for (uint32_t i = 0; i < g->n_inputs; i++) (void)vb_tensor_bytes(&g->inputs[i]);
        for (uint32_t i = 0; i < g->n_outputs; i++) (void)vb_tensor_bytes(&g->outputs[i]);
    }
    uint64_t rw = 0;
    for (uint32_t i = 0; i < info->n_context_tensors; i++) {
        uint64_t b = vb_tensor_bytes(&info->context_tensors[i]);
        rw = b > VB_MAX_CONTEXT_BYTES || rw + b > VB_MAX_CONTEXT_BYTES ? VB_MAX_CONTEXT_BYTES + 1 : rw + b;
    }
    if (rw <= VB_MAX_CONTEXT_BYTES) {
        npl_accel_context *ctx = NULL;
        st = vb_api->context_create_from_binary(vb_be, vb_dev, NULL, 0, bin, size, &ctx);
        if (st) {
            vb_check_failed(st); /* e.g. a kernel family this CPU lacks */
        } else {
            if (!ctx) abort();
            vb_run(ctx, info, src, n);
            if (vb_api->context_free(ctx)) abort();
        }
    }
    vb_api->binary_info_free(vb_be, info);
    return NPL_ACCEL_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vb_init();
    /* the binary is used in place: a 64-byte aligned copy, like an mmap */
    uint8_t *bin = aligned_alloc(64, (size + 64) & ~(size_t)63);
    if (!bin) return 0;
    if (size) memcpy(bin, data, size);
    npl_accel_status st = vb_load(bin, size, data, size ? size : 1);
    if (st && size >= VB_HDR) {
        uint64_t total = size, ck;
        memcpy(bin + 48, &total, 8);
        ck = vb_checksum(bin, size);
        memcpy(bin + VB_CKSUM_AT, &ck, 8);
        if (memcmp(bin, data, size)) vb_load(bin, size, data, size);
    }
    free(bin);
    return 0;
}
