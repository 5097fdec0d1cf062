/* The host-side record a QNN HTP context binary carries: Rope's angles are
 * computed on the host from the bound positions (qnn_rope.c) and reach the
 * graph as hidden cos / sin inputs, so a binary of a graph with Rope needs
 * what QNN's binary does not hold: which inputs are those and how to fill
 * them. The adapter's binary is QNN's context binary, unchanged, followed
 * (only when some graph has a Rope) by this record:
 *
 *   per Rope, in graph order:
 *     graph, positions, cos, sin names (u16 length + bytes each)
 *     u32 n_pos, half; u8 f16, neox, has_factors, 0
 *     f64 base, freq_scale, ext_factor, attn_factor, corr_lo, corr_hi
 *     f32 factors[half] if has_factors
 *   footer (24 bytes): u64 QNN binary size, u32 Rope count,
 *     u32 FNV-1a of the records, "NPLQROPE"
 *
 * Little-endian (x86 and the phones' ARM). A binary without the footer is
 * QNN's alone; tools that read QNN binaries take its first "QNN binary
 * size" bytes. */
#include <stdlib.h>
#include <string.h>

#include "accel/qnn/qnn_impl.h"

#define FAIL(be, st, ...) qnn_fail((be), (st), "qnn-htp: " __VA_ARGS__)

static const char MAGIC[8] = {'N', 'P', 'L', 'Q', 'R', 'O', 'P', 'E'};
enum { FOOTER = 24, FIXED = 4 * 2 + 8 + 4 + 6 * 8 };

static uint32_t fnv1a(const uint8_t *p, uint64_t n) {
    uint32_t h = 2166136261u;
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint64_t rec_size(const npl_accel_context *c, const qnn_graph *g, const qnn_rope *r) {
    return FIXED + strlen(g->name) + strlen(c->t[r->pos].name) + strlen(c->t[r->cos].name) + strlen(c->t[r->sin].name) +
           (r->factors ? 4ull * r->half : 0);
}

uint64_t qnn_binrec_size(const npl_accel_context *c) {
    uint64_t n = 0, k = 0;
    for (uint32_t i = 0; i < c->n_g; i++)
        for (uint32_t j = 0; j < c->g[i]->n_ropes; j++) n += rec_size(c, c->g[i], &c->g[i]->ropes[j]), k++;
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
    uint32_t k = 0;
    for (uint32_t i = 0; i < c->n_g; i++)
        for (uint32_t j = 0; j < c->g[i]->n_ropes; j++, k++) {
            const qnn_graph *g = c->g[i];
            const qnn_rope *r = &g->ropes[j];
            const uint8_t flags[4] = {(uint8_t)r->f16, (uint8_t)r->neox, r->factors != NULL, 0};
            const double d[6] = {r->base, r->freq_scale, r->ext_factor, r->attn_factor, r->corr_lo, r->corr_hi};
            p = put_str(p, g->name), p = put_str(p, c->t[r->pos].name);
            p = put_str(p, c->t[r->cos].name), p = put_str(p, c->t[r->sin].name);
            p = put(put(put(p, &r->n_pos, 4), &r->half, 4), flags, 4);
            p = put(p, d, sizeof d);
            if (r->factors) p = put(p, r->factors, 4ull * r->half);
        }
    const uint32_t sum = fnv1a(dst, (uint64_t)(p - dst));
    p = put(put(put(p, &qnn_size, 8), &k, 4), &sum, 4);
    put(p, MAGIC, 8);
}

uint64_t qnn_binrec_split(const void *bin, uint64_t size) {
    const uint8_t *b = bin;
    uint64_t q;
    if (size < FOOTER || memcmp(b + size - 8, MAGIC, 8)) return size;
    memcpy(&q, b + size - FOOTER, 8);
    return q < size - FOOTER ? q : size; /* a footer that does not fit is QNN's bytes (QNN judges them) */
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

static qnn_tensor *io(npl_accel_context *c, const qnn_graph *g, const char *name, npl_accel_tensor_id *id) {
    for (uint32_t i = 0; i < c->n_t; i++)
        if (c->t[i].graph == g && c->t[i].kind == NPL_ACCEL_APP_WRITE && !strcmp(c->t[i].name, name)) return *id = i, &c->t[i];
    return NULL;
}

npl_accel_status qnn_binrec_load(npl_accel_context *c, const void *bin, uint64_t qnn_size, uint64_t size) {
    if (qnn_size == size) return NPL_ACCEL_OK;
    npl_accel_backend *be = c->be;
    const uint8_t *b = bin, *recs = b + qnn_size, *foot = b + size - FOOTER;
    uint32_t n, sum;
    memcpy(&n, foot + 8, 4), memcpy(&sum, foot + 12, 4);
    if (fnv1a(recs, (uint64_t)(foot - recs)) != sum)
        return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Rope record (after QNN's %llu bytes) fails its checksum",
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
        const uint64_t want = (uint64_t)r.n_pos * r.half * (r.f16 ? 2 : 4);
        if (!g || !tp || !tc || !ts || tp->dtype != NPL_ACCEL_DT_INT32 || tp->bytes != 4ull * r.n_pos || tc->bytes != want ||
            ts->bytes != want || !r.half || fl[2] > 1)
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
    if (k.p != k.end) return FAIL(be, NPL_ACCEL_ERR_BINARY_CORRUPT, "the binary's Rope record has %lld stray bytes", (long long)(k.end - k.p));
    return NPL_ACCEL_OK;
}
