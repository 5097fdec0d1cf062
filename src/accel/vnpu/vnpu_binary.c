/* vnpu context binary: position-independent (offsets only), little-endian,
 * verified before use, constants used in place from the caller's buffer.
 *
 *   [0, 128)   header: magic "VNPUBIN\0", abi version, format version,
 *              header size, kernel family, byte-order tag, counts, total
 *              size, checksum, meta and data section offsets / sizes
 *   meta       tensors (names, kinds, types, dims, quant params, where their
 *              bytes are), packs (geometry + offset), graphs with their
 *              compiled steps (op, tensor ids, params, pack)
 *   data       pre-packed weights and the raw bytes of STATIC tensors that
 *              non-MatMul ops and GGML packs read (GGML block weights are
 *              used as stored); every blob 64-byte aligned
 *
 * Checksum: FNV-1a 64 over the whole binary in 64-bit little-endian words
 * (the tail byte by byte), the checksum field counted as zero. Every step
 * of it is a bijection of the state, so any change of a single word is
 * always detected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"
#include "accel/vnpu/vnpu_convert.h"
#include "core/quote.h"

#define HDR 128
#define FORMAT_VERSION 3u /* 2: GGML block weights kept as blocks (VNPU_PK_GGML); 3: Rope attn_factor (fp[3], 1 by default) */
/* The ABI version a binary's header names: the layout belongs to version 1
 * (version 2 appended table methods, no binary fields); FORMAT_VERSION
 * numbers the layout's own changes. */
#define BINARY_ABI 1u
#define MAX_TENSOR_BYTES ((size_t)1 << 40) /* as tensor_create */
#define ENDIAN_TAG 0x01020304u
#define CKSUM_AT 56
static const char MAGIC[8] = "VNPUBIN";

static uint64_t checksum(const uint8_t *b, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        if (i != CKSUM_AT) memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static size_t a64(size_t v) { return (v + 63) & ~(size_t)63; }

/* ---- writer ---- */

typedef struct {
    uint8_t *b; /* NULL: only count */
    size_t pos, cap;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (n && w->b && w->pos + n <= w->cap) memcpy(w->b + w->pos, p, n);
    w->pos += n;
}
static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(wbuf *w, int32_t v) { put(w, &v, 4); }
static void put_u64(wbuf *w, uint64_t v) { put(w, &v, 8); }
static void put_i64(wbuf *w, int64_t v) { put(w, &v, 8); }
static void put_str(wbuf *w, const char *s) {
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    put_u32(w, n);
    put(w, s, n);
}

/* Does a step read STATIC tensor `id` through its raw bytes (not a pack)? */
static int reads_raw(const struct npl_accel_context *ctx, const vnpu_node *n, uint32_t k) {
    if (ctx->t[n->in[k]].kind != NPL_ACCEL_STATIC) return 0;
    if (n->op == VNPU_OP_MATMUL_GATED) return k == 0 || (k <= 2 && ctx->packs[n->pack].fmt == VNPU_PK_GGML);
    if (n->op == VNPU_OP_MATMUL && n->pack >= 0) {
        if (k == 1) return ctx->packs[n->pack].fmt == VNPU_PK_GGML;
        if (k == 2 && ctx->packs[n->pack].off_bias != VNPU_NOFF) return 0;
    }
    return 1;
}

typedef struct {
    uint64_t *pack_off; /* data-relative */
    uint64_t *raw_off;  /* per tensor, UINT64_MAX = not stored */
    uint64_t data_size;
} layout;

static int make_layout(const struct npl_accel_context *ctx, layout *L) {
    L->pack_off = calloc(ctx->n_packs + 1, 8);
    L->raw_off = malloc((ctx->n_t + 1) * 8);
    if (!L->pack_off || !L->raw_off) return -1;
    uint64_t off = 0;
    for (uint32_t i = 0; i < ctx->n_packs; i++) {
        L->pack_off[i] = off;
        off = a64(off + ctx->packs[i].size);
    }
    for (uint32_t i = 0; i < ctx->n_t; i++) L->raw_off[i] = UINT64_MAX;
    for (uint32_t g = 0; g < ctx->n_g; g++)
        for (uint32_t s = 0; s < ctx->g[g]->n_steps; s++) {
            const vnpu_node *n = &ctx->g[g]->steps[s];
            for (uint32_t k = 0; k < n->n_in; k++)
                if (reads_raw(ctx, n, k) && L->raw_off[n->in[k]] == UINT64_MAX) {
                    L->raw_off[n->in[k]] = off;
                    off = a64(off + ctx->t[n->in[k]].nbytes);
                }
        }
    L->data_size = off;
    return 0;
}

static void write_meta(const struct npl_accel_context *ctx, const layout *L, wbuf *w) {
    for (uint32_t i = 0; i < ctx->n_t; i++) {
        const vnpu_tensor *t = &ctx->t[i];
        put_str(w, t->name);
        put_u32(w, t->kind);
        put_u32(w, t->dtype);
        put_u32(w, t->rank);
        for (int d = 0; d < NPL_ACCEL_MAX_RANK; d++) put_u32(w, d < (int)t->rank ? (uint32_t)t->dims[d] : 0);
        put_i32(w, t->graph);
        put_u32(w, t->q.enc);
        put_i32(w, t->q.axis);
        put_u32(w, t->q.block);
        put_u32(w, t->q.n);
        put(w, t->q.scales, (size_t)t->q.n * 4);
        put_u32(w, t->q.offsets != NULL);
        if (t->q.offsets) put(w, t->q.offsets, (size_t)t->q.n * 4);
        put_u64(w, L->raw_off[i]);
    }
    for (uint32_t i = 0; i < ctx->n_packs; i++) {
        const vnpu_pack *p = &ctx->packs[i];
        const uint32_t u[7] = {p->fmt, p->n_parts, p->trans, p->w[0], p->w[1], p->b[0], p->b[1]};
        const int64_t g[9] = {p->k, p->kpad, p->bk, p->nblk, p->n[0], p->n[1], p->col0[0], p->col0[1], p->npad};
        const uint64_t o[6] = {p->off_w, p->off_scale, p->off_offs, p->off_wsum, p->off_bias, p->size};
        for (int k = 0; k < 7; k++) put_u32(w, u[k]);
        for (int k = 0; k < 9; k++) put_i64(w, g[k]);
        for (int k = 0; k < 6; k++) put_u64(w, o[k]);
        put_u64(w, L->pack_off[i]);
    }
    for (uint32_t gi = 0; gi < ctx->n_g; gi++) {
        const vnpu_graph *g = ctx->g[gi];
        put_str(w, g->name);
        put_u32(w, g->n_added);
        put_u32(w, g->n_fused);
        put_str(w, g->detail);
        put_u32(w, g->n_steps);
        for (uint32_t s = 0; s < g->n_steps; s++) {
            const vnpu_node *n = &g->steps[s];
            put_u32(w, n->op);
            put_u32(w, n->n_in);
            put_u32(w, n->n_out);
            put(w, n->in, (size_t)n->n_in * 4);
            put(w, n->out, (size_t)n->n_out * 4);
            put_u32(w, n->n_ip);
            for (int k = 0; k < VNPU_MAX_INTS; k++) put_i64(w, n->ip[k]);
            put(w, n->fp, sizeof n->fp);
            put_i32(w, n->pack);
            put_str(w, n->name);
        }
    }
}

static npl_accel_status layout_for(struct npl_accel_context *ctx, layout *L, size_t *meta, size_t *total) {
    for (uint32_t g = 0; g < ctx->n_g; g++)
        if (!ctx->g[g]->finalized)
            return vnpu_fail(ctx->be, NPL_ACCEL_ERR_STATE, "vnpu: get_binary: graph '%s' is not finalized", ctx->g[g]->name);
    if (make_layout(ctx, L)) return vnpu_fail(ctx->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    wbuf w = {NULL, 0, 0};
    write_meta(ctx, L, &w);
    *meta = w.pos;
    *total = a64(HDR + *meta) + L->data_size;
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_binary_size(struct npl_accel_context *ctx, uint64_t *size) {
    layout L = {0};
    size_t meta, total;
    npl_accel_status st = layout_for(ctx, &L, &meta, &total);
    free(L.pack_off);
    free(L.raw_off);
    if (!st) *size = total;
    return st;
}

npl_accel_status vnpu_binary_write(struct npl_accel_context *ctx, void *buf, uint64_t cap, uint64_t *written) {
    layout L = {0};
    size_t meta, total;
    npl_accel_status st = layout_for(ctx, &L, &meta, &total);
    if (!st && cap < total)
        st = vnpu_fail(ctx->be, NPL_ACCEL_ERR_INVALID_ARG, "vnpu: get_binary: buffer of %llu bytes, %zu needed",
                       (unsigned long long)cap, total);
    if (!st) {
        uint8_t *b = buf;
        memset(b, 0, total);
        wbuf w = {b, 0, total};
        const size_t data_off = a64(HDR + meta);
        uint32_t n_steps = 0;
        for (uint32_t g = 0; g < ctx->n_g; g++) n_steps += ctx->g[g]->n_steps;
        put(&w, MAGIC, 8);
        const uint32_t h32[10] = {BINARY_ABI, FORMAT_VERSION, HDR, (uint32_t)ctx->family, ENDIAN_TAG,
                                  ctx->n_t, ctx->n_g, n_steps, ctx->n_packs, 0};
        for (int i = 0; i < 10; i++) put_u32(&w, h32[i]);
        const uint64_t h64[6] = {total, 0, HDR, meta, data_off, L.data_size};
        for (int i = 0; i < 6; i++) put_u64(&w, h64[i]);
        w.pos = HDR;
        write_meta(ctx, &L, &w);
        for (uint32_t i = 0; i < ctx->n_packs; i++)
            memcpy(b + data_off + L.pack_off[i], ctx->packs[i].data, ctx->packs[i].size);
        for (uint32_t i = 0; i < ctx->n_t; i++)
            if (L.raw_off[i] != UINT64_MAX) memcpy(b + data_off + L.raw_off[i], ctx->t[i].raw, ctx->t[i].nbytes);
        const uint64_t ck = checksum(b, total);
        memcpy(b + CKSUM_AT, &ck, 8);
        *written = total;
    }
    free(L.pack_off);
    free(L.raw_off);
    return st;
}

/* ---- reader ---- */

typedef struct {
    const uint8_t *b;
    size_t pos, end;
    int bad;
    int oom; /* bad because an allocation failed, not the binary */
} rbuf;

static void get(rbuf *r, void *p, size_t n) {
    if (!n) return;
    if (r->bad || n > r->end - r->pos) {
        r->bad = 1;
        memset(p, 0, n);
        return;
    }
    memcpy(p, r->b + r->pos, n);
    r->pos += n;
}
static uint32_t get_u32(rbuf *r) { uint32_t v; get(r, &v, 4); return v; }
static int32_t get_i32(rbuf *r) { int32_t v; get(r, &v, 4); return v; }
static uint64_t get_u64(rbuf *r) { uint64_t v; get(r, &v, 8); return v; }
static int64_t get_i64(rbuf *r) { int64_t v; get(r, &v, 8); return v; }
/* NUL-terminated copy, or NULL (r->bad set) if malformed; empty -> "" */
static char *get_str(rbuf *r) {
    uint32_t n = get_u32(r);
    if (r->bad || n > 65536 || n > r->end - r->pos || memchr(r->b + r->pos, 0, n)) {
        r->bad = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->bad = r->oom = 1;
        return NULL;
    }
    memcpy(s, r->b + r->pos, n);
    s[n] = 0;
    r->pos += n;
    return s;
}

typedef struct {
    struct npl_accel_backend *be;
    const uint8_t *bin;
    uint64_t size, data_off, data_size;
    int alloc;
} loader;

static npl_accel_status corrupt(const loader *L, const char *what) {
    return vnpu_fail(L->be, NPL_ACCEL_ERR_BINARY_CORRUPT, "vnpu: context binary: %s", what);
}
/* A failed read: corrupt, unless a string copy could not be allocated. */
static npl_accel_status bad_read(const loader *L, const rbuf *r, const char *what) {
    if (r->oom) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory reading the context binary");
    return corrupt(L, what);
}

/* A blob [off, off + size) inside the data section, 64-aligned. */
static const uint8_t *blob(const loader *L, uint64_t off, uint64_t size) {
    if (off % 64 || off > L->data_size || size > L->data_size - off) return NULL;
    return L->bin + L->data_off + off;
}

static npl_accel_status read_tensors(const loader *L, rbuf *r, struct npl_accel_context *c, uint32_t nt, uint32_t ng) {
    if (nt > (r->end - r->pos) / 40) return corrupt(L, "tensor count larger than the metadata");
    if (!(c->t = calloc(nt + 1, sizeof *c->t))) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    c->cap_t = nt + 1;
    for (uint32_t i = 0; i < nt; i++) {
        vnpu_tensor *t = &c->t[i];
        char *name = get_str(r);
        if (!name) return bad_read(L, r, "bad tensor name");
        t->name = name;
        c->n_t = i + 1;
        t->kind = get_u32(r);
        t->dtype = get_u32(r);
        t->rank = get_u32(r);
        for (int d = 0; d < NPL_ACCEL_MAX_RANK; d++) t->dims[d] = get_u32(r);
        t->graph = get_i32(r);
        npl_accel_quant q = {get_u32(r), get_i32(r), get_u32(r), get_u32(r), NULL, NULL};
        if (r->bad || q.n_scales > (r->end - r->pos) / 4) return corrupt(L, "truncated tensor record");
        float *sc = malloc((size_t)q.n_scales * 4 + 4);
        int32_t *of = NULL;
        if (!sc) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
        get(r, sc, (size_t)q.n_scales * 4);
        q.scales = q.n_scales ? sc : NULL; /* none for dynamic int16 */
        if (get_u32(r)) {
            if (q.n_scales > (r->end - r->pos) / 4) {
                free(sc);
                return corrupt(L, "truncated quant offsets");
            }
            if (!(of = malloc((size_t)q.n_scales * 4 + 4))) {
                free(sc);
                return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
            }
            get(r, of, (size_t)q.n_scales * 4);
        }
        q.offsets = of;
        uint64_t raw = get_u64(r);
        if (r->bad || t->kind >= NPL_ACCEL_KIND_COUNT || t->dtype >= NPL_ACCEL_DT_COUNT ||
            (t->graph < -1 || t->graph >= (int32_t)ng) ||
            ((t->kind == NPL_ACCEL_STATIC || t->kind == NPL_ACCEL_APP_READWRITE) != (t->graph == -1)) ||
            vnpu_tensor_nbytes(t->dtype, t->rank, t->dims, &t->nbytes) || t->nbytes > MAX_TENSOR_BYTES ||
            vnpu_find_tensor(c, name) < i) {
            free(sc);
            free(of);
            return corrupt(L, "bad tensor record (kind, type, dims, graph or duplicate name)");
        }
        npl_accel_status st = vnpu_quant_copy(L->be, &t->q, &q, t->dtype, t->rank, t->dims, name);
        free(sc);
        free(of);
        if (st) {
            char q[120], m[200];
            npl_quote(q, sizeof q, name, strlen(name));
            snprintf(m, sizeof m, "tensor '%s': bad quant params", q);
            return corrupt(L, m);
        }
        if (t->q.enc == NPL_ACCEL_QUANT_DYNAMIC &&
            (vnpu_dyn_tensor(L->be, t->kind, &t->q, t->rank, t->dims, &t->nbytes, name) || t->nbytes > MAX_TENSOR_BYTES)) {
            char q[120], m[200];
            npl_quote(q, sizeof q, name, strlen(name));
            snprintf(m, sizeof m, "tensor '%s': bad dynamic int16 tensor (kind or size)", q);
            return corrupt(L, m);
        }
        t->nelem = 1;
        for (uint32_t d = 0; d < t->rank; d++) t->nelem *= t->dims[d];
        for (uint32_t d = t->rank; d < NPL_ACCEL_MAX_RANK; d++) t->dims[d] = 0;
        if (raw != UINT64_MAX) {
            if (t->kind != NPL_ACCEL_STATIC || !(t->raw = blob(L, raw, t->nbytes))) return corrupt(L, "bad tensor data range");
        }
    }
    return NPL_ACCEL_OK;
}

/* Context tensors and arenas get their memory only once the whole binary is
 * verified (a corrupt one must not make us allocate what it claims). */
static npl_accel_status alloc_context_tensors(const loader *L, struct npl_accel_context *c) {
    for (uint32_t i = 0; i < c->n_t; i++) {
        vnpu_tensor *t = &c->t[i];
        if (t->kind == NPL_ACCEL_APP_READWRITE && !(t->rw = vnpu_big_alloc(t->nbytes)))
            return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory for context tensor '%s'", t->name);
    }
    for (uint32_t i = 0; i < c->n_g; i++)
        if (!(c->g[i]->arena = vnpu_big_alloc(c->g[i]->arena_size)))
            return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory for the %zu-byte arena of graph '%s'",
                             c->g[i]->arena_size, c->g[i]->name);
    return NPL_ACCEL_OK;
}

static npl_accel_status read_packs(const loader *L, rbuf *r, struct npl_accel_context *c, uint32_t np) {
    if (np > (r->end - r->pos) / 100) return corrupt(L, "pack count larger than the metadata");
    if (!(c->packs = calloc(np + 1, sizeof *c->packs))) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    c->cap_packs = np + 1;
    for (uint32_t i = 0; i < np; i++) {
        uint32_t u[7];
        int64_t g[9];
        uint64_t o[6];
        for (int k = 0; k < 7; k++) u[k] = get_u32(r);
        for (int k = 0; k < 9; k++) g[k] = get_i64(r);
        for (int k = 0; k < 6; k++) o[k] = get_u64(r);
        uint64_t at = get_u64(r);
        if (r->bad || u[1] < 1 || u[1] > 2 || u[2] > 1) return corrupt(L, "bad pack record");
        for (uint32_t k = 0; k < u[1]; k++) {
            if (u[3 + k] >= c->n_t || c->t[u[3 + k]].kind != NPL_ACCEL_STATIC || c->t[u[3 + k]].rank != 2)
                return corrupt(L, "pack of a tensor that is not a STATIC matrix");
            if (u[5 + k] != VNPU_NONE && (u[5 + k] >= c->n_t || c->t[u[5 + k]].kind != NPL_ACCEL_STATIC))
                return corrupt(L, "pack bias is not a STATIC tensor");
        }
        /* the geometry must be exactly what packing these tensors gives */
        vnpu_pack p;
        char err[128];
        if (vnpu_pack_plan(&p, c, u[1], &u[3], &u[5], u[2], err, sizeof err)) return corrupt(L, "pack of incompatible tensors");
        const int64_t pg[9] = {p.k, p.kpad, p.bk, p.nblk, p.n[0], p.n[1], p.col0[0], p.col0[1], p.npad};
        const uint64_t po[6] = {p.off_w, p.off_scale, p.off_offs, p.off_wsum, p.off_bias, p.size};
        if (p.fmt != u[0] || memcmp(pg, g, sizeof pg) || memcmp(po, o, sizeof po)) return corrupt(L, "pack geometry mismatch");
        for (uint32_t k = 0; k < u[1]; k++) {
            const vnpu_tensor *w = &c->t[u[3 + k]];
            int64_t nn = 0;
            if (w->rank == 2) nn = w->dims[u[2] ? 0 : 1];
            if (nn != p.n[k] || (u[5 + k] != VNPU_NONE && c->t[u[5 + k]].nelem != nn)) return corrupt(L, "pack bias size");
        }
        if (!(p.data = blob(L, at, p.size))) return corrupt(L, "pack data outside the data section");
        if (p.fmt == VNPU_PK_GGML && !p.wraw) return corrupt(L, "the blocks of a GGML pack are missing");
        c->packs[c->n_packs++] = p;
    }
    return NPL_ACCEL_OK;
}

static npl_accel_status read_graph(const loader *L, rbuf *r, struct npl_accel_context *c) {
    char *name = get_str(r);
    if (!name) return bad_read(L, r, "bad graph name");
    vnpu_graph *g = NULL;
    npl_accel_status st = vnpu_graph_new(c, name, &g);
    free(name);
    if (st) return st == NPL_ACCEL_ERR_DUPLICATE_NAME ? corrupt(L, "duplicate graph name") : st;
    g->n_added = get_u32(r);
    g->n_fused = get_u32(r);
    char *detail = get_str(r);
    if (!detail) return bad_read(L, r, "bad graph detail");
    snprintf(g->detail, sizeof g->detail, "%s", detail);
    free(detail);
    uint32_t ns = get_u32(r);
    if (r->bad || ns > (r->end - r->pos) / 40) return corrupt(L, "step count larger than the metadata");
    if (!(g->steps = calloc(ns + 1, sizeof *g->steps))) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    uint8_t *made = calloc(c->n_t + 1, 1); /* NATIVE tensors produced so far */
    if (!made) return vnpu_fail(L->be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    for (uint32_t s = 0; s < ns && !st; s++) {
        vnpu_node *n = &g->steps[s];
        n->op = get_u32(r);
        n->n_in = get_u32(r);
        n->n_out = get_u32(r);
        const vnpu_op_info *oi = vnpu_op_get(n->op);
        if (r->bad || !oi || (int)n->n_in < oi->min_in || (int)n->n_in > oi->max_in || (int)n->n_out != oi->n_out) {
            st = corrupt(L, "bad step (op or tensor counts)");
            break;
        }
        get(r, n->in, (size_t)n->n_in * 4);
        get(r, n->out, (size_t)n->n_out * 4);
        n->n_ip = get_u32(r);
        for (int k = 0; k < VNPU_MAX_INTS; k++) n->ip[k] = get_i64(r);
        get(r, n->fp, sizeof n->fp);
        n->pack = get_i32(r);
        n->name = get_str(r);
        g->n_steps = s + 1;
        if (r->bad || !n->name || n->n_ip > VNPU_MAX_INTS || n->pack < -1 || n->pack >= (int32_t)c->n_packs) {
            st = bad_read(L, r, "bad step record");
            break;
        }
        for (uint32_t k = 0; k < n->n_in + n->n_out && !st; k++) {
            uint32_t id = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            if (id >= c->n_t || (c->t[id].graph >= 0 && c->t[id].graph != g->index)) st = corrupt(L, "step tensor id");
            else if (k < n->n_in && c->t[id].kind == NPL_ACCEL_NATIVE && !made[id]) st = corrupt(L, "step reads a tensor before it is made");
            else if (k >= n->n_in && c->t[id].kind != NPL_ACCEL_NATIVE && c->t[id].kind != NPL_ACCEL_APP_READ)
                st = corrupt(L, "step writes an input");
            else if (k >= n->n_in) made[id] = 1;
        }
        if (st) break;
        int mm = n->op == VNPU_OP_MATMUL || n->op == VNPU_OP_MATMUL_GATED;
        if (mm && (n->pack >= 0 || n->op == VNPU_OP_MATMUL_GATED || c->t[n->in[1]].kind == NPL_ACCEL_STATIC)) {
            const vnpu_pack *p = n->pack >= 0 ? &c->packs[n->pack] : NULL;
            int ok = p && p->w[0] == n->in[1] && p->trans == (uint32_t)n->ip[1] &&
                     p->n_parts == (n->op == VNPU_OP_MATMUL_GATED ? 2u : 1u) &&
                     (p->n_parts == 1 || p->w[1] == n->in[2]) &&
                     (n->op == VNPU_OP_MATMUL_GATED || p->b[0] == VNPU_NONE || (n->n_in == 3 && p->b[0] == n->in[2]));
            if (!ok) { st = corrupt(L, "MatMul step does not match its pack"); break; }
        } else if (!mm && n->pack != -1) {
            st = corrupt(L, "pack on a step that is not a MatMul");
            break;
        }
        for (uint32_t k = 0; k < n->n_in && !st; k++)
            if (reads_raw(c, n, k) && !c->t[n->in[k]].raw) st = corrupt(L, "a STATIC input's bytes are missing");
        char where[160];
        snprintf(where, sizeof where, "context binary: graph '%s' step %u", g->name, s);
        if (!st && vnpu_check_node(L->be, c, n, where)) st = corrupt(L, "a step fails its type / shape check");
    }
    free(made);
    if (!st) st = vnpu_plan(g, 0); /* the arena comes after every check (alloc_context_tensors) */
    if (!st) g->finalized = 1;
    return st;
}

static npl_accel_status load(loader *L, struct npl_accel_context **out) {
    const uint8_t *b = L->bin;
    uint32_t h32[10];
    uint64_t h64[6];
    if (L->size < HDR)
        return vnpu_fail(L->be, NPL_ACCEL_ERR_BINARY_CORRUPT, "vnpu: context binary: truncated (%llu bytes; the header "
                         "alone is %d)", (unsigned long long)L->size, HDR);
    if (memcmp(b, MAGIC, 8)) return corrupt(L, "bad magic (not a vnpu context binary)");
    memcpy(h32, b + 8, sizeof h32);
    memcpy(h64, b + 48, sizeof h64);
    if (h32[4] != ENDIAN_TAG)
        return vnpu_fail(L->be, NPL_ACCEL_ERR_BINARY_VERSION, "vnpu: context binary: written with another byte order");
    if (h32[0] != BINARY_ABI || h32[1] != FORMAT_VERSION)
        return vnpu_fail(L->be, NPL_ACCEL_ERR_BINARY_VERSION, "vnpu: context binary: ABI version %u / format %u, this "
                         "library reads ABI %u / format %u", h32[0], h32[1], BINARY_ABI, FORMAT_VERSION);
    if (h32[2] != HDR) return corrupt(L, "bad header size");
    if (h64[0] != L->size)
        return vnpu_fail(L->be, NPL_ACCEL_ERR_BINARY_CORRUPT, "vnpu: context binary: truncated or padded (the header "
                         "says %llu bytes, the buffer has %llu)", (unsigned long long)h64[0], (unsigned long long)L->size);
    uint64_t ck;
    memcpy(&ck, b + CKSUM_AT, 8);
    if (checksum(b, L->size) != ck) return corrupt(L, "checksum mismatch (the binary is corrupted)");
    if (h32[3] >= VNPU_FAM_COUNT) return corrupt(L, "unknown kernel family");
    if ((int)h32[3] > L->be->cpu_family && L->alloc) /* info works anywhere */
        return vnpu_fail(L->be, NPL_ACCEL_ERR_HW_UNSUPPORTED, "vnpu: context binary compiled for kernel family '%s'; "
                         "this CPU supports up to '%s'", vnpu_family_name((int)h32[3]), vnpu_family_name(L->be->cpu_family));
    const uint64_t meta_off = h64[2], meta_size = h64[3];
    L->data_off = h64[4];
    L->data_size = h64[5];
    if (meta_off != HDR || meta_size > L->size - HDR || L->data_off % 64 || L->data_off < HDR + meta_size ||
        L->data_off > L->size || L->data_size != L->size - L->data_off)
        return corrupt(L, "section offsets out of range");
    struct npl_accel_context *c = NULL;
    npl_accel_status st = vnpu_context_new(L->be, (int)h32[3], &c);
    if (st) return st;
    c->from_binary = 1;
    rbuf r = {b, (size_t)meta_off, (size_t)(meta_off + meta_size), 0, 0};
    st = read_tensors(L, &r, c, h32[5], h32[6]);
    if (!st) st = read_packs(L, &r, c, h32[8]);
    if (!st && h32[6] > (r.end - r.pos) / 16) st = corrupt(L, "graph count larger than the metadata");
    for (uint32_t i = 0; !st && i < h32[6]; i++) st = read_graph(L, &r, c);
    if (!st && r.pos != r.end) st = corrupt(L, "trailing bytes in the metadata");
    if (!st && L->alloc) st = alloc_context_tensors(L, c);
    if (st) {
        vnpu_context_release(c);
        return st;
    }
    *out = c;
    return NPL_ACCEL_OK;
}

npl_accel_status vnpu_binary_load(struct npl_accel_backend *be, const void *bin, uint64_t size,
                                  struct npl_accel_context **out) {
    loader L = {be, bin, size, 0, 0, 1};
    return load(&L, out);
}

/* ---- binary info ---- */

typedef struct {
    npl_accel_binary_info info; /* first: the pointer handed out */
    void *mem[4];
} info_box;

static void fill_tinfo(npl_accel_tensor_info *ti, const vnpu_tensor *t) {
    ti->name = t->name;
    ti->kind = t->kind;
    ti->dtype = t->dtype;
    ti->rank = t->rank;
    for (uint32_t d = 0; d < t->rank; d++) ti->dims[d] = (uint32_t)t->dims[d];
    ti->quant.encoding = t->q.enc;
    ti->quant.axis = t->q.axis;
    ti->quant.block_size = t->q.block;
    ti->quant.n_scales = t->q.n;
    ti->quant.scales = t->q.scales;
    ti->quant.offsets = t->q.offsets;
}

npl_accel_status vnpu_binary_info(struct npl_accel_backend *be, const void *bin, uint64_t size,
                                  npl_accel_binary_info **out) {
    loader L = {be, bin, size, 0, 0, 0};
    struct npl_accel_context *c = NULL;
    npl_accel_status st = load(&L, &c);
    if (st) return st;
    info_box *box = calloc(1, sizeof *box);
    npl_accel_graph_info *gi = calloc(c->n_g + 1, sizeof *gi);
    npl_accel_tensor_info *ti = calloc(2 * (size_t)c->n_t + 1, sizeof *ti);
    if (!box || !gi || !ti) {
        free(box), free(gi), free(ti);
        vnpu_context_release(c);
        return vnpu_fail(be, NPL_ACCEL_ERR_NO_MEMORY, "vnpu: out of memory");
    }
    box->mem[0] = gi;
    box->mem[1] = ti;
    box->mem[2] = c; /* owns the names and quant arrays the info points at */
    npl_accel_binary_info *info = &box->info;
    info->abi_version = BINARY_ABI;
    info->format_version = FORMAT_VERSION;
    snprintf(info->kernel_family, sizeof info->kernel_family, "%s", vnpu_family_name(c->family));
    info->total_size = size;
    for (uint32_t i = 0; i < c->n_packs; i++)
        info->static_bytes += c->packs[i].fmt == VNPU_PK_GGML ? c->t[c->packs[i].w[0]].nbytes + (c->packs[i].n_parts == 2 ? c->t[c->packs[i].w[1]].nbytes : 0) : c->packs[i].size;
    size_t k = 0;
    for (uint32_t g = 0; g < c->n_g; g++) {
        gi[g].name = c->g[g]->name;
        gi[g].n_nodes = c->g[g]->n_steps;
        gi[g].arena_bytes = c->g[g]->arena_size;
        for (int pass = 0; pass < 2; pass++) {
            uint32_t kind = pass ? NPL_ACCEL_APP_READ : NPL_ACCEL_APP_WRITE;
            if (pass) gi[g].outputs = ti + k;
            else gi[g].inputs = ti + k;
            for (uint32_t t = 0; t < c->n_t; t++)
                if (c->t[t].graph == (int32_t)g && c->t[t].kind == kind) {
                    fill_tinfo(&ti[k++], &c->t[t]);
                    if (pass) gi[g].n_outputs++;
                    else gi[g].n_inputs++;
                }
        }
    }
    info->context_tensors = ti + k;
    for (uint32_t t = 0; t < c->n_t; t++)
        if (c->t[t].kind == NPL_ACCEL_APP_READWRITE) {
            fill_tinfo(&ti[k++], &c->t[t]);
            info->n_context_tensors++;
        }
    info->n_graphs = c->n_g;
    info->graphs = gi;
    *out = info;
    return NPL_ACCEL_OK;
}

void vnpu_binary_info_free(npl_accel_binary_info *info) {
    if (!info) return;
    info_box *box = (info_box *)info;
    free(box->mem[0]);
    free(box->mem[1]);
    vnpu_context_release(box->mem[2]);
    free(box);
}
