/* ABI tensors -> QNN tensors: data types, quantization encodings, and the
 * per-graph QNN tensor of each context tensor.
 *
 * Types: F32, F16 as themselves; INT8 = QNN signed fixed point 8; UINT8 =
 * unsigned fixed point 8; INT16 = QNN's unsigned fixed point 16 with the
 * offset moved by -32768 and each value's sign bit flipped at the boundary
 * (q + 32768), because the HTP computes 16-bit activations as uint16 (the
 * probe's verified path) and the two describe the same reals:
 * (q + o) * s == ((q + 32768) + (o - 32768)) * s. INT32 = QNN INT_32 (indices,
 * positions). BF16 and the GGML block types have no HTP form: they are
 * refused at tensor creation (the compiler converts weights first). */
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

uint32_t qnn_dtype(npl_accel_dtype dt) {
    switch (dt) {
    case NPL_ACCEL_DT_F32: return QNN_DATATYPE_FLOAT_32;
    case NPL_ACCEL_DT_F16: return QNN_DATATYPE_FLOAT_16;
    case NPL_ACCEL_DT_INT8: return QNN_DATATYPE_SFIXED_POINT_8;
    case NPL_ACCEL_DT_UINT8: return QNN_DATATYPE_UFIXED_POINT_8;
    case NPL_ACCEL_DT_INT16: return QNN_DATATYPE_UFIXED_POINT_16;
    case NPL_ACCEL_DT_INT32: return QNN_DATATYPE_INT_32;
    default: return 0;
    }
}

int qnn_dtype_to_abi(uint32_t qdt, npl_accel_dtype *out) {
    switch (qdt) {
    case QNN_DATATYPE_FLOAT_32: *out = NPL_ACCEL_DT_F32; return 1;
    case QNN_DATATYPE_FLOAT_16: *out = NPL_ACCEL_DT_F16; return 1;
    case QNN_DATATYPE_SFIXED_POINT_8: *out = NPL_ACCEL_DT_INT8; return 1;
    case QNN_DATATYPE_UFIXED_POINT_8: *out = NPL_ACCEL_DT_UINT8; return 1;
    case QNN_DATATYPE_UFIXED_POINT_16: *out = NPL_ACCEL_DT_INT16; return 1;
    case QNN_DATATYPE_INT_32: *out = NPL_ACCEL_DT_INT32; return 1;
    default: return 0;
    }
}

uint64_t qnn_elem_bytes(npl_accel_dtype dt) {
    switch (dt) {
    case NPL_ACCEL_DT_F32: case NPL_ACCEL_DT_INT32: return 4;
    case NPL_ACCEL_DT_F16: case NPL_ACCEL_DT_INT16: return 2;
    case NPL_ACCEL_DT_INT8: case NPL_ACCEL_DT_UINT8: return 1;
    default: return 0;
    }
}

/* IEEE half from float, round to nearest even (the plugin links no project code). */
uint16_t qnn_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {                                   /* subnormal half */
        if (ax < 0x33000000u) return (uint16_t)sign;
        const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t h = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((ax >> 13) - (112u << 10));
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static npl_accel_status grow(qnn_graph *g, uint32_t need) {
    if (need <= g->cap) return NPL_ACCEL_OK;
    uint32_t cap = g->cap ? g->cap : 16;
    while (cap < need) cap *= 2;
    Qnn_Tensor_t *qt = realloc(g->qt, sizeof *qt * cap);
    if (qt) g->qt = qt;
    uint32_t *qd = realloc(g->qdims, sizeof *qd * NPL_ACCEL_MAX_RANK * cap);
    if (qd) g->qdims = qd;
    Qnn_ScaleOffset_t **qs = realloc(g->qso, sizeof *qs * cap);
    if (qs) g->qso = qs;
    if (!qt || !qd || !qs) return qnn_fail(g->ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    /* dims pointers moved with qdims */
    for (uint32_t i = 0; i < g->cap; i++)
        if (g->qt[i].version) g->qt[i].v2.dimensions = g->qdims + (size_t)i * NPL_ACCEL_MAX_RANK;
    memset(g->qt + g->cap, 0, sizeof *qt * (cap - g->cap));
    memset(g->qso + g->cap, 0, sizeof *qs * (cap - g->cap));
    g->cap = cap;
    return NPL_ACCEL_OK;
}

static const uint32_t qnn_kind[NPL_ACCEL_KIND_COUNT] = {
    [NPL_ACCEL_APP_WRITE] = QNN_TENSOR_TYPE_APP_WRITE, [NPL_ACCEL_APP_READ] = QNN_TENSOR_TYPE_APP_READ,
    [NPL_ACCEL_NATIVE] = QNN_TENSOR_TYPE_NATIVE,       [NPL_ACCEL_STATIC] = QNN_TENSOR_TYPE_STATIC,
    [NPL_ACCEL_APP_READWRITE] = QNN_TENSOR_TYPE_APP_READWRITE,
};

npl_accel_status qnn_graph_tensor(qnn_graph *g, npl_accel_tensor_id id, Qnn_Tensor_t **out) {
    npl_accel_context *c = g->ctx;
    npl_accel_backend *be = c->be;
    if (id >= c->n_t) return qnn_fail(be, NPL_ACCEL_ERR_NOT_FOUND, "qnn-htp: graph '%s': no tensor of id %u", g->name, id);
    const qnn_tensor *t = &c->t[id];
    if (t->kind == NPL_ACCEL_APP_READWRITE)
        return qnn_fail(be, NPL_ACCEL_ERR_UNSUPPORTED,
                        "qnn-htp: graph '%s': tensor '%s' is APP_READWRITE: QNN HTP has no context tensors, only Attention "
                        "reads one (as a host buffer; qnn_attn.c)", g->name, t->name);
    if (t->kind != NPL_ACCEL_STATIC && t->graph != g)
        return qnn_fail(be, NPL_ACCEL_ERR_INVALID_HANDLE, "qnn-htp: graph '%s': tensor '%s' belongs to graph '%s'", g->name,
                        t->name, t->graph ? t->graph->name : "?");
    npl_accel_status st = grow(g, id + 1);
    if (st) return st;
    Qnn_Tensor_t *q = &g->qt[id];
    if (q->version) {
        *out = q;
        return NPL_ACCEL_OK;
    }
    Qnn_Tensor_t x;
    memset(&x, 0, sizeof x);
    x.version = QNN_TENSOR_VERSION_2;
    x.v2.name = t->name;
    x.v2.type = qnn_kind[t->kind];
    x.v2.dataType = qnn_dtype(t->dtype);
    x.v2.rank = t->rank;
    uint32_t *dims = g->qdims + (size_t)id * NPL_ACCEL_MAX_RANK;
    memcpy(dims, t->dims, sizeof(uint32_t) * t->rank);
    x.v2.dimensions = dims;
    x.v2.memType = QNN_TENSORMEMTYPE_RAW;
    Qnn_QuantizeParams_t *qp = &x.v2.quantizeParams;
    qp->encodingDefinition = QNN_DEFINITION_UNDEFINED;
    qp->quantizationEncoding = QNN_QUANTIZATION_ENCODING_UNDEFINED;
    int32_t shift = t->dtype == NPL_ACCEL_DT_INT16 ? -32768 : 0;
    if (t->quant.encoding == NPL_ACCEL_QUANT_PER_TENSOR) {
        qp->encodingDefinition = QNN_DEFINITION_DEFINED;
        qp->quantizationEncoding = QNN_QUANTIZATION_ENCODING_SCALE_OFFSET;
        qp->scaleOffset.scale = t->quant.scales[0];
        qp->scaleOffset.offset = (t->quant.offsets ? t->quant.offsets[0] : 0) + shift;
    } else if (t->quant.encoding == NPL_ACCEL_QUANT_PER_AXIS) {
        Qnn_ScaleOffset_t *so = malloc(sizeof *so * t->quant.n_scales);
        if (!so) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        for (uint32_t i = 0; i < t->quant.n_scales; i++) {
            so[i].scale = t->quant.scales[i];
            so[i].offset = (t->quant.offsets ? t->quant.offsets[i] : 0) + shift;
        }
        g->qso[id] = so;
        qp->encodingDefinition = QNN_DEFINITION_DEFINED;
        qp->quantizationEncoding = QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET;
        qp->axisScaleOffset.axis = t->quant.axis;
        qp->axisScaleOffset.numScaleOffsets = t->quant.n_scales;
        qp->axisScaleOffset.scaleOffset = so;
        if (t->bits4) { /* int8 containers with bitwidth 4 (the packed int4 type is refused by QNN, 7004) */
            qp->quantizationEncoding = QNN_QUANTIZATION_ENCODING_BW_AXIS_SCALE_OFFSET;
            qp->bwAxisScaleOffset.bitwidth = 4;
            qp->bwAxisScaleOffset.axis = t->quant.axis;
            qp->bwAxisScaleOffset.numElements = t->quant.n_scales;
            qp->bwAxisScaleOffset.scales = (float *)t->quant.scales;
            qp->bwAxisScaleOffset.offsets = (int32_t *)t->quant.offsets;
        }
    } else if (t->quant.encoding == NPL_ACCEL_QUANT_PER_BLOCK) { /* blockwise expansion (qnn_lpbq.c) */
        Qnn_BlockwiseExpansion_t *bw = qnn_keep(g, sizeof *bw); /* read until finalize */
        Qnn_ScaleOffset_t *so = qnn_zalloc_padded(sizeof *so * t->dims[0]);
        if (!bw || !so) {
            free(so);
            return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
        }
        for (uint32_t i = 0; i < t->dims[0]; i++) so[i].scale = t->lpbq_sc[i], so[i].offset = 0;
        g->qso[id] = so;
        memset(bw, 0, sizeof *bw);
        bw->axis = 0;
        bw->scaleOffsets = so;
        bw->numBlocksPerAxis = t->lpbq_nb;
        bw->blockScaleBitwidth = 4;
        bw->blockScaleStorageType = QNN_BLOCKWISE_EXPANSION_BITWIDTH_SCALE_STORAGE_8;
        bw->blocksScale8 = t->lpbq_m;
        qp->encodingDefinition = QNN_DEFINITION_DEFINED;
        qp->quantizationEncoding = QNN_QUANTIZATION_ENCODING_BLOCKWISE_EXPANSION;
        qp->blockwiseExpansion = bw;
    }
    if (t->kind == NPL_ACCEL_STATIC) {
        x.v2.clientBuf.data = t->data;
        x.v2.clientBuf.dataSize = (uint32_t)t->bytes;
    }
    qnn_log_reset();
    Qnn_ErrorHandle_t e = c->validate ? QNN_SUCCESS : be->q->tensorCreateGraphTensor(g->g, &x);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(be, e, NPL_ACCEL_ERR_TYPE_MISMATCH, "graph '%s': creating tensor '%s'", g->name, t->name);
    *q = x;
    *out = q;
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_graph_reserve(qnn_graph *g, uint32_t n) { return grow(g, n); }

npl_accel_status qnn_static_tensor(qnn_graph *g, const char *name, uint32_t qdt, const Qnn_QuantizeParams_t *qp, uint32_t rank,
                                   const uint32_t *dims, const void *data, uint32_t bytes, Qnn_Tensor_t *out) {
    memset(out, 0, sizeof *out);
    out->version = QNN_TENSOR_VERSION_2;
    out->v2.name = name;
    out->v2.type = QNN_TENSOR_TYPE_STATIC;
    out->v2.dataType = qdt;
    out->v2.rank = rank;
    out->v2.dimensions = (uint32_t *)dims;
    out->v2.memType = QNN_TENSORMEMTYPE_RAW;
    out->v2.quantizeParams.encodingDefinition = QNN_DEFINITION_UNDEFINED;
    out->v2.quantizeParams.quantizationEncoding = QNN_QUANTIZATION_ENCODING_UNDEFINED;
    if (qp) out->v2.quantizeParams = *qp;
    out->v2.clientBuf.data = (void *)data;
    out->v2.clientBuf.dataSize = bytes;
    qnn_log_reset();
    Qnn_ErrorHandle_t e = g->ctx->validate ? QNN_SUCCESS : g->ctx->be->q->tensorCreateGraphTensor(g->g, out);
    if (e != QNN_SUCCESS)
        return qnn_fail_q(g->ctx->be, e, NPL_ACCEL_ERR_INTERNAL, "graph '%s': creating tensor '%s'", g->name, name);
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_derived_tensor(npl_accel_context *c, char *name, npl_accel_tensor_id *out, qnn_tensor **t) {
    *t = NULL;
    for (uint32_t i = 0; i < c->n_t; i++)
        if (!strcmp(c->t[i].name, name)) {
            free(name);
            *out = i;
            return NPL_ACCEL_OK;
        }
    if (!(*t = qnn_context_append_tensor(c))) {
        free(name);
        return qnn_fail(c->be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    return NPL_ACCEL_OK;
}

/* QNN's FullyConnected wants its weight as [N, K] with the scales on axis 0.
 * A MatMul weight [K, N] gets a transposed copy, a STATIC context record
 * "<name>.nk" made once and shared by every graph that uses the weight. */
npl_accel_status qnn_weight_nk(npl_accel_context *c, npl_accel_tensor_id id, npl_accel_tensor_id *out) {
    npl_accel_backend *be = c->be;
    char *name = malloc(strlen(c->t[id].name) + 4);
    if (!name) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    strcpy(name, c->t[id].name), strcat(name, ".nk");
    qnn_tensor *t;
    npl_accel_status st = qnn_derived_tensor(c, name, out, &t);
    if (st != NPL_ACCEL_OK || !t) return st;
    const qnn_tensor *w = &c->t[id];
    const uint32_t K = w->dims[0], N = w->dims[1];
    const uint64_t es = qnn_elem_bytes(w->dtype);
    *t = *w;
    t->name = name;
    t->dims[0] = N, t->dims[1] = K;
    t->quant.scales = NULL, t->quant.offsets = NULL;
    t->data = malloc(t->bytes);
    if (w->quant.n_scales) {
        float *s = malloc(sizeof *s * w->quant.n_scales);
        int32_t *o = malloc(sizeof *o * w->quant.n_scales);
        if (s) memcpy(s, w->quant.scales, sizeof *s * w->quant.n_scales);
        if (o) memcpy(o, w->quant.offsets, sizeof *o * w->quant.n_scales);
        t->quant.scales = s, t->quant.offsets = o;
    }
    if (!t->data || (w->quant.n_scales && (!t->quant.scales || !t->quant.offsets))) {
        qnn_tensor_release(t);
        return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    if (t->quant.encoding == NPL_ACCEL_QUANT_PER_AXIS) t->quant.axis = 0; /* the caller checked it was the N axis */
    const uint8_t *src = w->data;
    uint8_t *dst = t->data;
    for (uint32_t k = 0; k < K; k++)
        for (uint32_t n = 0; n < N; n++) memcpy(dst + ((uint64_t)n * K + k) * es, src + ((uint64_t)k * N + n) * es, es);
    *out = c->n_t++;
    return NPL_ACCEL_OK;
}

static float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    uint32_t x;
    if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
    else if (e) x = sign | ((e + 112) << 23) | (m << 13);
    else if (!m) x = sign;
    else { /* subnormal: normalize */
        int k = -1;
        uint32_t mm = m;
        do mm <<= 1, k++;
        while (!(mm & 0x400u));
        x = sign | ((uint32_t)(112 - k) << 23) | ((mm & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

npl_accel_status qnn_static_as(npl_accel_context *c, npl_accel_tensor_id id, npl_accel_dtype dt, npl_accel_tensor_id *out) {
    npl_accel_backend *be = c->be;
    const char *sfx = dt == NPL_ACCEL_DT_F16 ? ".f16" : ".f32";
    char *name = malloc(strlen(c->t[id].name) + 5);
    if (!name) return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    strcpy(name, c->t[id].name), strcat(name, sfx);
    qnn_tensor *t;
    npl_accel_status st = qnn_derived_tensor(c, name, out, &t);
    if (st != NPL_ACCEL_OK || !t) return st;
    const qnn_tensor *w = &c->t[id];
    const uint64_t n = w->bytes / qnn_elem_bytes(w->dtype);
    *t = *w;
    t->name = name, t->dtype = dt, t->bits4 = 0;
    t->bytes = n * qnn_elem_bytes(dt);
    if (!(t->data = malloc(t->bytes))) {
        free(name);
        return qnn_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "qnn-htp: out of memory");
    }
    for (uint64_t i = 0; i < n; i++) {
        if (dt == NPL_ACCEL_DT_F16) ((uint16_t *)t->data)[i] = qnn_f32_to_f16(((const float *)w->data)[i]);
        else ((float *)t->data)[i] = f16_to_f32(((const uint16_t *)w->data)[i]);
    }
    *out = c->n_t++;
    return NPL_ACCEL_OK;
}
