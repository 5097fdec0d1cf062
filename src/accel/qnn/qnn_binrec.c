/* The host-side record a QNN HTP context binary carries: Rope's angles are
 * computed on the host from the bound positions (qnn_rope.c) and reach the
 * graph as hidden cos / sin inputs; Attention's KV caches are host buffers
 * bound as hidden inputs, its mask is made on the host and its new rows are
 * hidden outputs (qnn_attn.c). So a binary of such graphs needs what QNN's
 * binary does not hold: which inputs and outputs are those and how to fill
 * them. The adapter's binary is QNN's context binary, unchanged, followed
 * (only when some graph has a Rope or an Attention) by this record:
 *
 *   per Rope, in graph order:
 *     graph, positions, cos, sin names (u16 length + bytes each)
 *     u32 n_pos, half; u8 f16, neox, has_factors, full width (cos / sin [S, 1, D], interleaved f16)
 *     f64 base, freq_scale, ext_factor, attn_factor, corr_lo, corr_hi
 *     f32 factors[half] if has_factors
 *   per Attention, in graph order:
 *     graph, positions, k cache, v cache (context tensors), kin, vin, mask,
 *     kout, vout names (u16 length + bytes each)
 *     u32 C, Hkv, D (the caches' dims), n_pos, len, window
 *   footer (32 bytes): u64 QNN binary size, u32 Rope count, u32 Attention
 *     count, u32 FNV-1a of the records, u32 0, "NPLQREC2"
 * (a footer of 24 bytes, u64 size, u32 Rope count, u32 FNV-1a, "NPLQROPE",
 * is the older form without Attention records; it is still read).
 *
 * Little-endian (x86 and the phones' ARM). A binary without the footer is
 * QNN's alone; tools that read QNN binaries take its first "QNN binary
 * size" bytes. */
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

#define FAIL(be, st, ...) qnn_fail((be), (st), "qnn-htp: " __VA_ARGS__)

static const char MAGIC[8] = {'N', 'P', 'L', 'Q', 'R', 'E', 'C', '2'}, MAGIC1[8] = {'N', 'P', 'L', 'Q', 'R', 'O', 'P', 'E'};
enum { FOOTER = 32, FOOTER1 = 24, FIXED = 4 * 2 + 8 + 4 + 6 * 8, AFIXED = 9 * 2 + 6 * 4 };

static uint32_t fnv1a(const uint8_t *p, uint64_t n) {
    uint32_t h = 2166136261u;
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint64_t rec_size(const npl_accel_context *c, const qnn_graph *g, const qnn_rope *r) {
    return FIXED + strlen(g->name) + strlen(c->t[r->pos].name) + strlen(c->t[r->cos].name) + strlen(c->t[r->sin].name) +
           (r->factors ? 4ull * r->half : 0);
}

static void attn_names(const npl_accel_context *c, const qnn_attn *a, const char **n) {
    const npl_accel_tensor_id ids[8] = {a->pos, a->kc, a->vc, a->kin, a->vin, a->mask, a->kout, a->vout};
    for (int i = 0; i < 8; i++) n[i] = c->t[ids[i]].name;
}

static uint64_t attn_size(const npl_accel_context *c, const qnn_graph *g, const qnn_attn *a) {
    const char *n[8];
    attn_names(c, a, n);
    uint64_t s = AFIXED + strlen(g->name);
    for (int i = 0; i < 8; i++) s += strlen(n[i]);
    return s;
}

uint64_t qnn_binrec_size(const npl_accel_context *c) {
    uint64_t n = 0, k = 0;
    for (uint32_t i = 0; i < c->n_g; i++) {
        for (uint32_t j = 0; j < c->g[i]->n_ropes; j++) n += rec_size(c, c->g[i], &c->g[i]->ropes[j]), k++;
        for (uint32_t j = 0; j < c->g[i]->n_attns; j++) n += attn_size(c, c->g[i], &c->g[i]->attns[j]), k++;
    }
    return k ? n + FOOTER : 0;
}

static uint8_t *put(uint8_t *p, const void *v, size_t n) {
    memcpy(p, v, n);
    return p + n;
}

static uint8_t *put_str(uint8_t *p, const char *s) {
    uint16_t n = (uint16_t)strlen(s);
    return put(put(p, &n, 2), s, n);
}

void qnn_binrec_write(const npl_accel_context *c, uint64_t qnn_size, uint8_t *dst) {
    uint8_t *p = dst;
    uint32_t k = 0, ka = 0;
    for (uint32_t i = 0; i < c->n_g; i++)
        for (uint32_t j = 0; j < c->g[i]->n_ropes; j++, k++) {
            const qnn_graph *g = c->g[i];
            const qnn_rope *r = &g->ropes[j];
            const uint8_t flags[4] = {(uint8_t)r->f16, (uint8_t)r->neox, r->factors != NULL, r->width != 0};
            const double d[6] = {r->base, r->freq_scale, r->ext_factor, r->attn_factor, r->corr_lo, r->corr_hi};
            p = put_str(p, g->name), p = put_str(p, c->t[r->pos].name);
            p = put_str(p, c->t[r->cos].name), p = put_str(p, c->t[r->sin].name);
            p = put(put(put(p, &r->n_pos, 4), &r->half, 4), flags, 4);
            p = put(p, d, sizeof d);
            if (r->factors) p = put(p, r->factors, 4ull * r->half);
        }
    for (uint32_t i = 0; i < c->n_g; i++)
        for (uint32_t j = 0; j < c->g[i]->n_attns; j++, ka++) {
            const qnn_attn *a = &c->g[i]->attns[j];
            const char *n[8];
            attn_names(c, a, n);
            p = put_str(p, c->g[i]->name);
            for (int m = 0; m < 8; m++) p = put_str(p, n[m]);
            const qnn_tensor *kc = &c->t[a->kc];
            const uint32_t u[6] = {kc->dims[0], kc->dims[1], kc->dims[2], a->n_pos, a->len, a->window};
            p = put(p, u, sizeof u);
        }
    const uint32_t sum = fnv1a(dst, (uint64_t)(p - dst)), zero = 0;
    p = put(put(put(put(put(p, &qnn_size, 8), &k, 4), &ka, 4), &sum, 4), &zero, 4);
    put(p, MAGIC, 8);
}

/* the footer's size (0: none) */
static uint64_t footer_of(const uint8_t *b, uint64_t size) {
    if (size >= FOOTER && !memcmp(b + size - 8, MAGIC, 8)) return FOOTER;
    if (size >= FOOTER1 && !memcmp(b + size - 8, MAGIC1, 8)) return FOOTER1;
    return 0;
}

uint64_t qnn_binrec_split(const void *bin, uint64_t size) {
    const uint8_t *b = bin;
    const uint64_t f = footer_of(b, size);
    uint64_t q;
    if (!f) return size;
    memcpy(&q, b + size - f, 8);
    return q < size - f ? q : size; /* a footer that does not fit is QNN's bytes (QNN judges them) */
}

typedef struct {
    const uint8_t *p, *end;
    int bad;
} cursor;

static void take(cursor *k, void *v, size_t n) {
    if (k->bad || (size_t)(k->end - k->p) < n) {
        k->bad = 1;
        memset(v, 0, n);
        return;
    }
    memcpy(v, k->p, n);
    k->p += n;
}

/* a name as a NUL-terminated copy in buf (names longer than buf are bad) */
static const char *take_str(cursor *k, char *buf, size_t len) {
    uint16_t n = 0;
    take(k, &n, 2);
    if (n >= len) k->bad = 1;
    if (!k->bad) take(k, buf, n);
    buf[k->bad ? 0 : n] = 0;
    return buf;
}

static qnn_tensor *io_kind(npl_accel_context *c, const qnn_graph *g, const char *name, npl_accel_kind kind, npl_accel_tensor_id *id) {
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].graph == g && c->t[i].kind == kind && !strcmp(c->t[i].name, name)) return *id = i, &c->t[i];
    return NULL;
}

static qnn_tensor *io(npl_accel_context *c, const qnn_graph *g, const char *name, npl_accel_tensor_id *id) {
    return io_kind(c, g, name, NPL_ACCEL_APP_WRITE, id);
}

/* The context's cache tensor `name` [C, Hkv, D] F16, created (zeroed) by its first record. */
static npl_accel_status cache_of(npl_accel_context *c, const char *name, const uint32_t *dims, npl_accel_tensor_id *id) {
    npl_accel_backend *be = c->be;
    for (uint32_t i = 0; i < c->n_t; i++)
        if (!strcmp(c->t[i].name, name)) {
            const qnn_tensor *t = &c->t[i];
            if (t->kind != NPL_ACCEL_APP_READWRITE || t->rank != 3 || memcmp(t->dims, dims, 12))
                return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Attention records disagree on cache '%s'", name);
            *id = i;
            return NPL_ACCEL_OK;
        }
    const npl_accel_tensor_desc d = {.name = name, .kind = NPL_ACCEL_APP_READWRITE, .dtype = NPL_ACCEL_DT_F16, .rank = 3,
                                     .dims = {dims[0], dims[1], dims[2]}};
    if ((uint64_t)dims[0] * dims[1] * dims[2] > (1ull << 30))
        return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's cache '%s' [%u, %u, %u] is too large", name, dims[0], dims[1], dims[2]);
    return qnn_new_tensor(c, NULL, &d, id);
}

static npl_accel_status load_attn(npl_accel_context *c, cursor *k, uint32_t i) {
    npl_accel_backend *be = c->be;
    char gn[256], n[8][256];
    uint32_t u[6];
    take_str(k, gn, sizeof gn);
    for (int m = 0; m < 8; m++) take_str(k, n[m], sizeof n[m]);
    take(k, u, sizeof u);
    qnn_graph *g = k->bad ? NULL : qnn_find_graph(c, gn);
    if (!g) return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Attention record %u names no graph ('%s')", i, k->bad ? "(truncated)" : gn);
    qnn_attn a = {0};
    a.n_pos = u[3], a.len = u[4], a.window = u[5];
    npl_accel_status st = cache_of(c, n[1], u, &a.kc);
    if (!st) st = cache_of(c, n[2], u, &a.vc);
    if (st) return st;
    qnn_tensor *tp = io(c, g, n[0], &a.pos), *ki = io(c, g, n[3], &a.kin), *vi = io(c, g, n[4], &a.vin), *mk = io(c, g, n[5], &a.mask);
    qnn_tensor *ko = io_kind(c, g, n[6], NPL_ACCEL_APP_READ, &a.kout), *vo = io_kind(c, g, n[7], NPL_ACCEL_APP_READ, &a.vout);
    const uint64_t row = 2ull * u[1] * u[2];
    if (!tp || !ki || !vi || !mk || !ko || !vo || tp->dtype != NPL_ACCEL_DT_INT32 || tp->bytes != 4ull * a.n_pos || !a.len ||
        a.len > u[0] || ki->bytes != row * a.len || vi->bytes != row * a.len || mk->bytes != 2ull * a.n_pos * (a.len + a.n_pos) ||
        ko->bytes != row * a.n_pos || vo->bytes != row * a.n_pos)
        return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Attention record %u does not match its graph ('%s')", i, gn);
    qnn_attn *as = realloc(g->attns, sizeof *as * (g->n_attns + 1));
    if (!as) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
    g->attns = as;
    as[g->n_attns++] = a;
    c->t[a.kin].hidden = c->t[a.vin].hidden = c->t[a.mask].hidden = c->t[a.kout].hidden = c->t[a.vout].hidden = 1;
    return NPL_ACCEL_OK;
}

npl_accel_status qnn_binrec_load(npl_accel_context *c, const void *bin, uint64_t qnn_size, uint64_t size) {
    if (qnn_size == size) return NPL_ACCEL_OK;
    npl_accel_backend *be = c->be;
    const uint8_t *b = bin;
    const uint64_t fs = footer_of(b, size);
    const uint8_t *recs = b + qnn_size, *foot = b + size - fs;
    uint32_t n, na = 0, sum;
    memcpy(&n, foot + 8, 4);
    if (fs == FOOTER) memcpy(&na, foot + 12, 4), memcpy(&sum, foot + 16, 4);
    else memcpy(&sum, foot + 12, 4);
    if (fnv1a(recs, (uint64_t)(foot - recs)) != sum)
        return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's host record (after QNN's %llu bytes) fails its checksum",
                    (unsigned long long)qnn_size);
    cursor k = {recs, foot, 0};
    for (uint32_t i = 0; i < n; i++) {
        char gn[256], pn[256], cn[256], sn[256];
        uint8_t fl[4];
        qnn_rope r;
        memset(&r, 0, sizeof r);
        take_str(&k, gn, sizeof gn), take_str(&k, pn, sizeof pn), take_str(&k, cn, sizeof cn), take_str(&k, sn, sizeof sn);
        take(&k, &r.n_pos, 4), take(&k, &r.half, 4), take(&k, fl, 4);
        double d[6];
        take(&k, d, sizeof d);
        r.f16 = fl[0], r.neox = fl[1];
        r.base = d[0], r.freq_scale = d[1], r.ext_factor = d[2], r.attn_factor = d[3], r.corr_lo = d[4], r.corr_hi = d[5];
        qnn_graph *g = k.bad ? NULL : qnn_find_graph(c, gn);
        qnn_tensor *tp = NULL, *tc = NULL, *ts = NULL;
        if (g) tp = io(c, g, pn, &r.pos), tc = io(c, g, cn, &r.cos), ts = io(c, g, sn, &r.sin);
        /* full width (flag 3): cos / sin [S, 1, D], D from their size */
        if (fl[3] == 1 && tc && r.n_pos && r.f16) r.width = (uint32_t)(tc->bytes / (2ull * r.n_pos));
        const uint64_t want = (uint64_t)r.n_pos * (r.width ? r.width : r.half) * (r.f16 ? 2 : 4);
        if (!g || !tp || !tc || !ts || tp->dtype != NPL_ACCEL_DT_INT32 || tp->bytes != 4ull * r.n_pos || tc->bytes != want ||
            ts->bytes != want || !r.half || fl[2] > 1 || fl[3] > 1 || (fl[3] && (!r.f16 || r.width < 2 * r.half)))
            return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Rope record %u does not match its graphs ('%s')", i,
                        k.bad ? "(truncated)" : gn);
        if (fl[2]) {
            if (!(r.factors = malloc(4ull * r.half))) return FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
            take(&k, r.factors, 4ull * r.half);
        }
        qnn_rope *rs = k.bad ? NULL : realloc(g->ropes, sizeof *rs * (g->n_ropes + 1));
        if (!rs) {
            free(r.factors);
            return k.bad ? FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Rope record %u is truncated", i)
                         : FAIL(be, NPL_ACCEL_ERR_NO_MEMORY, "out of memory");
        }
        g->ropes = rs;
        rs[g->n_ropes++] = r;
        tc->hidden = ts->hidden = 1;
    }
    for (uint32_t i = 0; i < na; i++) {
        npl_accel_status st = load_attn(c, &k, i);
        if (st) return st;
    }
    if (k.p != k.end) return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's host record has %lld stray bytes", (long long)(k.end - k.p));
    return NPL_ACCEL_OK;
}
