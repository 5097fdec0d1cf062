/* Execute, profiles and context binaries of the QNN HTP adapter. A context
 * from a binary knows its graphs and their input / output tensors from
 * libQnnSystem's binary info (names, ids, types, shapes, scales). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "accel/qnn/qnn_impl.h"

#define FAIL(be, st, ...) qnn_fail((be), (st), "qnn-htp: " __VA_ARGS__)

static const qnn_tensor *bound(const npl_accel_context *c, const qnn_graph *g, const char *name, uint32_t *id) {
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].graph == g && !c->t[i].hidden && !strcmp(c->t[i].name, name)) return *id = i, &c->t[i];
    return NULL;
}

static const void *buffer_of(const npl_accel_buffer *in, uint32_t n_in, const char *name) {
    for (uint32_t k = 0; k < n_in; k++)
        if (in[k].name && !strcmp(in[k].name, name)) return in[k].data;
    return NULL;
}

npl_accel_status qnn_graph_execute(npl_accel_graph *g, const npl_accel_buffer *in, uint32_t n_in, const npl_accel_buffer *out,
                                   uint32_t n_out) {
    if (!g || (n_in && !in) || (n_out && !out)) return NPL_ACCEL_ERR_INVALID_ARG;
    npl_accel_context *c = g->ctx;
    npl_accel_backend *be = c->be;
    if (!g->finalized) return FAIL(be, NPL_ACCEL_ERR_STATE, "graph '%s' is not finalized", g->name);
    uint32_t want_in = 0, want_out = 0;
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].graph == g && !c->t[i].hidden)
            want_in += c->t[i].kind == NPL_ACCEL_APP_WRITE, want_out += c->t[i].kind == NPL_ACCEL_APP_READ;
    if (n_in != want_in || n_out != want_out)
        return FAIL(be, NPL_ACCEL_ERR_BINDING, "graph '%s' takes %u inputs and %u outputs, got %u and %u", g->name, want_in,
                    want_out, n_in, n_out);
    /* QNN gets the caller's inputs, then the hidden ones; the caller's
     * outputs, then Attention's new K / V rows. */
    const uint32_t n_tmp = n_in + 2 * g->n_ropes + 4 * g->n_attns, n_qo = n_out + 2 * g->n_attns;
    Qnn_Tensor_t *qi = calloc(n_tmp + 1, sizeof *qi), *qo = calloc(n_qo + 1, sizeof *qo);
    void **tmp = calloc(n_tmp + 1, sizeof *tmp);
    uint32_t nq = 0;
    npl_accel_status st = qi && qo && tmp ? NPL_ACCEL_OK : FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    for (uint32_t k = 0; k < n_in + n_out && !st; k++) {
        const npl_accel_buffer *b = k < n_in ? &in[k] : &out[k - n_in];
        uint32_t id;
        const qnn_tensor *t = b->name ? bound(c, g, b->name, &id) : NULL;
        npl_accel_kind want = k < n_in ? NPL_ACCEL_APP_WRITE : NPL_ACCEL_APP_READ;
        if (!t || t->kind != want) {
            st = FAIL(be, NPL_ACCEL_ERR_BINDING, "graph '%s' has no %s tensor '%s'", g->name, k < n_in ? "input" : "output",
                      b->name ? b->name : "(null)");
            break;
        }
        if (!b->data || b->size != t->bytes) {
            st = FAIL(be, NPL_ACCEL_ERR_BINDING, "graph '%s': buffer for '%s' is %llu bytes, the tensor %llu", g->name, t->name,
                      (unsigned long long)b->size, (unsigned long long)t->bytes);
            break;
        }
        Qnn_Tensor_t x = g->qt[id];
        void *data = b->data;
        if (k < n_in && t->dtype == NPL_ACCEL_DT_INT16) { /* the caller's bytes stay as they are */
            if (!(tmp[k] = malloc(b->size))) {
                st = FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
                break;
            }
            for (uint64_t i = 0; i < b->size / 2; i++) ((uint16_t *)tmp[k])[i] = ((const uint16_t *)b->data)[i] ^ 0x8000u;
            data = tmp[k];
        } else if (k < n_in && t->dtype == NPL_ACCEL_DT_INT32) {
            /* Gather rows out of range (a package's padding selects row -1;
             * the bound is known in the session that built the graph) read
             * row 0: QNN aborts the execute on them. Rope reads the caller's
             * positions, not these. */
            if (!(tmp[k] = malloc(b->size))) {
                st = FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
                break;
            }
            const int32_t *src = b->data;
            int32_t *dst = tmp[k];
            for (uint64_t i = 0; i < b->size / 4; i++)
                dst[i] = src[i] < 0 || (t->gather_rows && (uint32_t)src[i] >= t->gather_rows) ? 0 : src[i];
            data = tmp[k];
        }
        x.v2.clientBuf.data = data;
        x.v2.clientBuf.dataSize = (uint32_t)b->size;
        if (k < n_in) qi[nq++] = x;
        else qo[k - n_in] = x;
    }
    for (uint32_t r = 0; r < g->n_ropes && !st; r++) {
        const qnn_rope *rp = &g->ropes[r];
        const int32_t *pos = buffer_of(in, n_in, c->t[rp->pos].name);
        const uint64_t bytes = c->t[rp->cos].bytes;
        void *cs = malloc(bytes), *sn = malloc(bytes);
        tmp[n_in + 2 * r] = cs, tmp[n_in + 2 * r + 1] = sn;
        if (!cs || !sn) {
            st = FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
            break;
        }
        qnn_rope_angles(rp, pos, cs, sn);
        qi[nq] = g->qt[rp->cos], qi[nq].v2.clientBuf.data = cs, qi[nq++].v2.clientBuf.dataSize = (uint32_t)bytes;
        qi[nq] = g->qt[rp->sin], qi[nq].v2.clientBuf.data = sn, qi[nq++].v2.clientBuf.dataSize = (uint32_t)bytes;
    }
    /* Attention: the caches' host buffers as inputs, the mask from the
     * positions, buffers for the new rows (tmp slots: mask, scratch, k, v) */
    for (uint32_t r = 0; r < g->n_attns && !st; r++) {
        const qnn_attn *a = &g->attns[r];
        const int32_t *pos = buffer_of(in, n_in, c->t[a->pos].name);
        void **t4 = tmp + n_in + 2 * g->n_ropes + 4 * r;
        const npl_accel_tensor_id ids[5] = {a->kin, a->vin, a->mask, a->kout, a->vout};
        t4[0] = malloc(c->t[a->mask].bytes), t4[1] = malloc(a->len + 1);
        t4[2] = malloc(c->t[a->kout].bytes), t4[3] = malloc(c->t[a->vout].bytes);
        if (!t4[0] || !t4[1] || !t4[2] || !t4[3]) {
            st = FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
            break;
        }
        for (uint32_t i = 0; i < a->n_pos && !st; i++) /* a bucket's graph reads the first len rows only */
            if (pos[i] < -1 || (pos[i] >= 0 && (uint32_t)pos[i] >= a->len))
                st = FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "graph '%s': Attention: position %d of row %u is outside the %u "
                          "cache rows the graph reads (-1 marks padding)", g->name, pos[i], i, a->len);
        if (st) break;
        qnn_attn_mask(a, pos, t4[0], t4[1]);
        void *data[5] = {c->t[a->kc].data, c->t[a->vc].data, t4[0], t4[2], t4[3]};
        for (int k = 0; k < 5; k++) {
            Qnn_Tensor_t x = g->qt[ids[k]];
            x.v2.clientBuf.data = data[k], x.v2.clientBuf.dataSize = (uint32_t)c->t[ids[k]].bytes;
            if (k < 3) qi[nq++] = x;
            else qo[n_out + 2 * r + (uint32_t)(k - 3)] = x;
        }
    }
    if (!st) {
        uint64_t t0 = qnn_now_ns();
        qnn_log_reset();
        Qnn_ErrorHandle_t e = be->q->graphExecute(g->g, qi, nq, qo, n_qo, NULL, NULL);
        uint64_t dt = qnn_now_ns() - t0;
        if (e != QNN_SUCCESS) st = qnn_fail_q(be, e, NPL_ACCEL_ERR_INTERNAL, "graph '%s': execute", g->name);
        else {
            g->executions++, g->exec_ns_total += dt, g->exec_ns_last = dt;
            if (dt < g->exec_ns_min) g->exec_ns_min = dt;
            if (dt > g->exec_ns_max) g->exec_ns_max = dt;
            for (uint32_t k = 0; k < n_out; k++) {
                uint32_t id;
                const qnn_tensor *t = bound(c, g, out[k].name, &id);
                if (t->dtype == NPL_ACCEL_DT_INT16)
                    for (uint64_t i = 0; i < out[k].size / 2; i++) ((uint16_t *)out[k].data)[i] ^= 0x8000u;
            }
            for (uint32_t r = 0; r < g->n_attns; r++) { /* the new rows into the caches */
                void **t4 = tmp + n_in + 2 * g->n_ropes + 4 * r;
                qnn_attn_store(c, &g->attns[r], buffer_of(in, n_in, c->t[g->attns[r].pos].name), t4[2], t4[3]);
            }
        }
    }
    for (uint32_t k = 0; tmp && k < n_tmp; k++) free(tmp[k]);
    free(tmp);
    free(qi);
    free(qo);
    return st;
}

npl_accel_status qnn_graph_retrieve(npl_accel_context *c, const char *name, npl_accel_graph **out) {
    if (!c || !name || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    qnn_graph *g = qnn_find_graph(c, name);
    if (!g) return FAIL(c->be, NPL_ACCEL_ERR_NOT_FOUND, "no graph '%s' in the context", name);
    if (!g->finalized) return FAIL(c->be, NPL_ACCEL_ERR_STATE, "graph '%s' is not finalized", name);
    *out = g;
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_graph_get_profile(npl_accel_graph *g, npl_accel_profile *out) {
    if (!g || !out) return NPL_ACCEL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->executions = g->executions;
    out->total_ns = g->exec_ns_total;
    out->last_ns = g->exec_ns_last;
    out->min_ns = g->executions ? g->exec_ns_min : 0;
    out->max_ns = g->exec_ns_max;
    out->finalize_ns = g->finalize_ns;
    out->n_nodes = out->n_compiled = g->n_nodes;
    snprintf(out->kernel_family, sizeof out->kernel_family, "qnn-htp");
    snprintf(out->detail, sizeof out->detail, "QNN HTP %s (software emulation on x86)",
             g->ctx->dev && g->ctx->dev->soc ? g->ctx->dev->soc->name : "default target");
    return NPL_ACCEL_OK;
}

static npl_accel_status all_final(npl_accel_context *c) {
    if (!c->n_g) return FAIL(c->be, NPL_ACCEL_ERR_STATE, "the context has no graphs");
    for (uint32_t i = 0; i < c->n_g; i++)
        if (!c->g[i]->finalized) return FAIL(c->be, NPL_ACCEL_ERR_STATE, "graph '%s' is not finalized", c->g[i]->name);
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_context_get_binary_size(npl_accel_context *c, uint64_t *size) {
    if (!c || !size) return NPL_ACCEL_ERR_INVALID_ARG;
    npl_accel_status st = all_final(c);
    if (st) return st;
    Qnn_ContextBinarySize_t n = 0;
    qnn_log_reset();
    Qnn_ErrorHandle_t e = c->be->q->contextGetBinarySize(c->ctx, &n);
    if (e != QNN_SUCCESS) return qnn_fail_q(c->be, e, NPL_ACCEL_ERR_INTERNAL, "context binary size");
    *size = n + qnn_binrec_size(c);
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_context_get_binary(npl_accel_context *c, void *buf, uint64_t buf_size, uint64_t *written) {
    if (!c || !buf || !written) return NPL_ACCEL_ERR_INVALID_ARG;
    npl_accel_status st = all_final(c);
    if (st) return st;
    Qnn_ContextBinarySize_t n = 0;
    const uint64_t rec = qnn_binrec_size(c);
    if (buf_size < rec) return FAIL(c->be, NPL_ACCEL_ERR_INVALID_ARG, "a %llu-byte buffer is too small for the binary",
                                    (unsigned long long)buf_size);
    qnn_log_reset();
    Qnn_ErrorHandle_t e = c->be->q->contextGetBinary(c->ctx, buf, buf_size - rec, &n);
    if (e != QNN_SUCCESS) return qnn_fail_q(c->be, e, NPL_ACCEL_ERR_INVALID_ARG, "writing the context binary (%llu-byte buffer)",
                                             (unsigned long long)buf_size);
    if (rec) qnn_binrec_write(c, n, (uint8_t *)buf + n);
    *written = n + rec;
    return NPL_ACCEL_OK;
}

/* The tensor record and QNN tensor of one graph input / output of a binary. */
static npl_accel_status adopt(npl_accel_context *c, qnn_graph *g, const Qnn_Tensor_t *q, npl_accel_kind kind) {
    npl_accel_backend *be = c->be;
    const Qnn_TensorV2_t *v = &q->v2;
    npl_accel_dtype dt;
    if (q->version != QNN_TENSOR_VERSION_2 && q->version != 1)
        return FAIL(be, NPL_ACCEL_ERR_BINARY_VERSION, "graph '%s': tensor record of version %u", g->name, q->version);
    if (!v->name || !qnn_dtype_to_abi(v->dataType, &dt) || v->rank < 1 || v->rank > NPL_ACCEL_MAX_RANK)
        return FAIL(be, NPL_ACCEL_ERR_UNSUPPORTED, "graph '%s': tensor '%s' of QNN type 0x%x, rank %u has no ABI form", g->name,
                    v->name ? v->name : "?", v->dataType, v->rank);
    qnn_tensor *t = qnn_context_append_tensor(c);
    if (!t) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    t->kind = kind, t->dtype = dt, t->rank = v->rank, t->graph = g;
    memcpy(t->dims, v->dimensions, sizeof(uint32_t) * v->rank);
    t->bytes = qnn_n_elems(t->rank, t->dims) * qnn_elem_bytes(dt);
    if (!(t->name = strdup(v->name))) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    if (v->quantizeParams.encodingDefinition == QNN_DEFINITION_DEFINED &&
        v->quantizeParams.quantizationEncoding == QNN_QUANTIZATION_ENCODING_SCALE_OFFSET) {
        float *s = malloc(sizeof *s);
        int32_t *o = malloc(sizeof *o);
        if (!s || !o) {
            free(s), free(o), qnn_tensor_release(t);
            return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
        }
        *s = v->quantizeParams.scaleOffset.scale;
        *o = v->quantizeParams.scaleOffset.offset + (dt == NPL_ACCEL_DT_INT16 ? 32768 : 0);
        t->quant = (npl_accel_quant){NPL_ACCEL_QUANT_PER_TENSOR, 0, 0, 1, s, o};
    }
    npl_accel_tensor_id id = c->n_t++;
    npl_accel_status st = qnn_graph_reserve(g, id + 1);
    if (st) return st;
    Qnn_Tensor_t x;
    memset(&x, 0, sizeof x);
    x.version = QNN_TENSOR_VERSION_2;
    x.v2 = *v;
    x.v2.name = t->name;
    x.v2.dimensions = g->qdims + (size_t)id * NPL_ACCEL_MAX_RANK;
    memcpy(x.v2.dimensions, t->dims, sizeof(uint32_t) * t->rank);
    x.v2.isDynamicDimensions = NULL;
    x.v2.memType = QNN_TENSORMEMTYPE_RAW;
    g->qt[id] = x;
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_context_create_from_binary(npl_accel_backend *be, npl_accel_device *dev, const npl_accel_option *opts,
                                                uint32_t n_opts, const void *bin, uint64_t size, npl_accel_context **out) {
    if (out) *out = NULL;
    if (!be || !out || (!bin && size)) return NPL_ACCEL_ERR_INVALID_ARG;
    if (n_opts) return FAIL(be, NPL_ACCEL_ERR_INVALID_ARG, "unknown context option '%s'", opts[0].key ? opts[0].key : "(null)");
    const uint64_t full = size;
    size = qnn_binrec_split(bin, size); /* QNN's part; the Rope record after it */
    uint32_t n_graphs = 0;
    const long anon_info = be->profile > 0 ? qnn_rss_anon_kb() : 0;
    const void *info = qnn_binary_info(be, bin, size, &n_graphs);
    if (be->profile > 0 && info) /* libQnnSystem's record of the graphs and their tensors */
        fprintf(stderr, "qnn-htp profile: libQnnSystem binary info: RssAnon %+.1f MiB (QNN's own)\n",
                (qnn_rss_anon_kb() - anon_info) / 1024.0);
    if (!info) return be->err[0] && strstr(be->err, "version") ? NPL_ACCEL_ERR_BINARY_VERSION : NPL_ACCEL_ERR_BINARY_CORRUPT;
    /* The HTP records its target in the binary as text ("soc_type=SM8650;arch=75;..."),
     * not in the system info (its socVersion is empty in v2.51): a binary for
     * another SoC is refused by that record, before QNN sees it. */
    const char *rec = size > 9 ? memmem(bin, size, "soc_type=", 9) : NULL;
    if (rec && dev && dev->soc) {
        size_t left = size - (size_t)(rec - (const char *)bin) - 9, len = 0;
        while (len < left && len < 32 && rec[9 + len] != ';') len++;
        if (len != strlen(dev->soc->name) || strncasecmp(rec + 9, dev->soc->name, len))
            return FAIL(be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "the binary is for %.*s, the device is %s", (int)len, rec + 9,
                        dev->soc->name);
    }
    /* and the QNN release that wrote it: the binary carries the build id as
     * text ("v2.51.0.260929181845"); one of another release is refused by
     * name (QNN's own refusal of it is an opaque code) */
    const char *bid = NULL;
    if (be->q->backendGetBuildId && be->q->backendGetBuildId(&bid) == QNN_SUCCESS && bid && *bid && size > 3 &&
        !memmem(bin, size, bid, strlen(bid))) {
        const char *v = bin, *end = (const char *)bin + size;
        size_t vl = 0;
        while ((v = memmem(v, (size_t)(end - v), "v2.", 3)) != NULL) {
            for (vl = 3; v + vl < end && vl < 32 && ((v[vl] >= '0' && v[vl] <= '9') || v[vl] == '.'); vl++) {}
            if (vl > 8) break;
            v += 3;
        }
        if (v)
            return FAIL(be, NPL_ACCEL_ERR_BINARY_VERSION, "the binary was written by QNN %.*s; the library in %s is %s",
                        (int)vl, v, be->lib_dir, bid);
    }
#if defined(__x86_64__)
    /* A weight-shared binary names its shared weight blobs "WEIGHTS/<i>"
     * (absent from the others). QNN's x86 emulator cannot load one: it
     * answers 1000 in a process that wrote one and crashes in a fresh
     * process (v2.51), so it is refused here, before QNN sees it. */
    if (size > 9 && memmem(bin, size, "WEIGHTS/0", 9))
        return FAIL(be, NPL_ACCEL_ERR_HW_UNSUPPORTED,
                    "the context binary shares weights between its graphs (npullm compile --weight-sharing): a "
                    "device's QNN loads it, QNN's x86 emulator cannot; compile without --weight-sharing to run it here");
#endif
    npl_accel_context *c;
    npl_accel_status st = qnn_context_new(be, dev, &c);
    if (st) return st;
    c->from_binary = 1;
    qnn_log_reset();
    /* QNN copies what it needs (the context config "persistent binary",
     * which would let it keep pointing into the caller's mapping, is refused
     * on x86: "Persistent Binary is not supported") */
    const long anon0 = be->profile > 0 ? qnn_rss_anon_kb() : 0;
    const uint64_t t0 = qnn_now_ns();
    Qnn_ErrorHandle_t e = be->q->contextCreateFromBinary(be->be, dev ? dev->dev : NULL, NULL, bin, size, &c->ctx, NULL);
    if (be->profile > 0 && e == QNN_SUCCESS) /* what QNN itself keeps of the binary (on x86: the emulator's copy) */
        fprintf(stderr, "qnn-htp profile: contextCreateFromBinary of a %.1f MiB binary: %.1f ms, RssAnon %+.1f MiB (QNN's own)\n",
                size / 1048576.0, (qnn_now_ns() - t0) / 1e6, (qnn_rss_anon_kb() - anon0) / 1024.0);
    if (e != QNN_SUCCESS) {
        qnn_context_free(c);
        return qnn_fail_q(be, e, NPL_ACCEL_ERR_BINARY_CORRUPT, "loading the context binary");
    }
    for (uint32_t i = 0; i < n_graphs && !st; i++) {
        const QnnSystemContext_GraphInfo_t *gi = qnn_binary_graph(info, i);
        qnn_graph *g;
        if (!gi->graphName) st = FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "graph %u of the binary has no name", i);
        if (!st) st = qnn_add_graph(c, gi->graphName, &g);
        if (st) break;
        qnn_log_reset();
        e = be->q->graphRetrieve(c->ctx, gi->graphName, &g->g);
        if (e != QNN_SUCCESS) {
            st = qnn_fail_q(be, e, NPL_ACCEL_ERR_BINARY_CORRUPT, "retrieving graph '%s'", gi->graphName);
            break;
        }
        g->finalized = 1;
        for (uint32_t k = 0; k < gi->numGraphInputs && !st; k++) st = adopt(c, g, &gi->graphInputs[k], NPL_ACCEL_APP_WRITE);
        for (uint32_t k = 0; k < gi->numGraphOutputs && !st; k++) st = adopt(c, g, &gi->graphOutputs[k], NPL_ACCEL_APP_READ);
    }
    if (!st) st = qnn_binrec_load(c, bin, size, full);
    if (st) {
        qnn_context_free(c);
        return st;
    }
    *out = c;
    return NPL_ACCEL_OK;
}

static void tinfo(const Qnn_Tensor_t *q, npl_accel_tensor_info *ti, npl_accel_kind kind) {
    memset(ti, 0, sizeof *ti);
    ti->name = q->v2.name;
    ti->kind = kind;
    if (!qnn_dtype_to_abi(q->v2.dataType, &ti->dtype)) ti->dtype = NPL_ACCEL_DT_COUNT;
    ti->rank = q->v2.rank <= NPL_ACCEL_MAX_RANK ? q->v2.rank : 0;
    for (uint32_t i = 0; i < ti->rank; i++) ti->dims[i] = q->v2.dimensions[i];
}

/* The HTP's own record of its target, "KEY=VALUE;" text in the binary (the
 * system info's socVersion is empty in v2.51): the value of key, or "?". */
static void htp_record(const void *bin, uint64_t size, const char *key, char *out, size_t n) {
    const size_t kl = strlen(key);
    const char *rec = size > kl ? memmem(bin, size, key, kl) : NULL;
    size_t len = 0;
    if (rec) {
        const size_t left = size - (size_t)(rec - (const char *)bin) - kl;
        while (len < left && len + 1 < n && rec[kl + len] != ';' && rec[kl + len] >= ' ' && rec[kl + len] <= '~') len++;
    }
    snprintf(out, n, "%.*s", len ? (int)len : 1, len ? rec + kl : "?");
}

npl_accel_status qnn_binary_info_get(npl_accel_backend *be, const void *bin, uint64_t size, npl_accel_binary_info **out) {
    if (!be || !out || (!bin && size)) return NPL_ACCEL_ERR_INVALID_ARG;
    *out = NULL;
    uint32_t ng = 0, nt = 0;
    const void *info = qnn_binary_info(be, bin, qnn_binrec_split(bin, size), &ng);
    if (!info) return NPL_ACCEL_ERR_BINARY_CORRUPT;
    for (uint32_t i = 0; i < ng; i++) nt += qnn_binary_graph(info, i)->numGraphInputs + qnn_binary_graph(info, i)->numGraphOutputs;
    /* One block; names point into the QNN system context's record, which
     * lives until the next binary info call of this thread. */
    npl_accel_binary_info *bi = calloc(1, sizeof *bi + sizeof(npl_accel_graph_info) * ng + sizeof(npl_accel_tensor_info) * nt);
    if (!bi) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    npl_accel_graph_info *gs = (npl_accel_graph_info *)(bi + 1);
    npl_accel_tensor_info *ts = (npl_accel_tensor_info *)(gs + ng);
    bi->abi_version = 1;
    bi->total_size = size;
    /* the kernels are the HTP arch's: "qnn-htp SM8650 v75", the target the binary was finalized for */
    char soc[12], arch[8];
    htp_record(bin, size, "soc_type=", soc, sizeof soc);
    htp_record(bin, size, ";arch=", arch, sizeof arch);
    snprintf(bi->kernel_family, sizeof bi->kernel_family, "qnn-htp %s v%s", soc, arch);
    bi->n_graphs = ng;
    bi->graphs = gs;
    for (uint32_t i = 0; i < ng; i++) {
        const QnnSystemContext_GraphInfo_t *gi = qnn_binary_graph(info, i);
        gs[i].name = gi->graphName;
        gs[i].n_inputs = gi->numGraphInputs, gs[i].n_outputs = gi->numGraphOutputs;
        gs[i].inputs = ts;
        for (uint32_t k = 0; k < gi->numGraphInputs; k++) tinfo(&gi->graphInputs[k], ts++, NPL_ACCEL_APP_WRITE);
        gs[i].outputs = ts;
        for (uint32_t k = 0; k < gi->numGraphOutputs; k++) tinfo(&gi->graphOutputs[k], ts++, NPL_ACCEL_APP_READ);
    }
    *out = bi;
    return NPL_ACCEL_OK;
}

void qnn_binary_info_free(npl_accel_backend *be, npl_accel_binary_info *info) {
    (void)be;
    free(info);
}

npl_accel_status qnn_context_tensor_data(npl_accel_context *c, const char *name, void **data, uint64_t *size) {
    if (!c || !name || !data || !size) return NPL_ACCEL_ERR_INVALID_ARG;
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].kind == NPL_ACCEL_APP_READWRITE && !strcmp(c->t[i].name, name)) {
            *data = c->t[i].data, *size = c->t[i].bytes;
            return NPL_ACCEL_OK;
        }
    return FAIL(c->be, NPL_ACCEL_ERR_NOT_FOUND, "no APP_READWRITE tensor '%s' in the context", name);
}
