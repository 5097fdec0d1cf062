/* Packed weights (wpack.h): the plain C repack, its inverse for tests, the
 * table of a model's packed copies and the family lookups. */
#include "kernels/wpack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

enum { PANEL_BLOCK = 176 }; /* one block of 8 q5_0 rows */

/* The 128 nibble bytes every layout here shares (wpack.h): element el
 * (0..31) of row j in vector el / 4 mod 4, byte 4j + el mod 4, the low
 * nibble for el < 16. */
static void nib_put(uint8_t *v, int j, int el, unsigned u) {
    v[32 * (el / 4 % 4) + 4 * j + el % 4] |= (uint8_t)((u & 0x0F) << (el < 16 ? 0 : 4));
}
static unsigned nib_get(const uint8_t *v, int j, int el) {
    return (v[32 * (el / 4 % 4) + 4 * j + el % 4] >> (el < 16 ? 0 : 4)) & 0x0F;
}

/* Every layout: panel p (rows 8p..8p+7) holds the rows' blocks in order,
 * block b of the panel (out bytes) made of block b of each row (in bytes). */
typedef void (*put_fn)(const void *blk, uint8_t *o, int j);    /* row j's block into the panel block o */
typedef void (*get_fn)(const uint8_t *pb, int j, void *blk);   /* ... and back */
static void pack_panels(const void *src, void *dst, int64_t nb, int64_t n, size_t in, size_t out, put_fn put) {
    const uint8_t *w = src;
    uint8_t *o = dst;
    for (int64_t p = 0; p < n / NPL_WPACK_ROWS; p++)
        for (int64_t b = 0; b < nb; b++, o += out) {
            memset(o, 0, out);
            for (int j = 0; j < NPL_WPACK_ROWS; j++) put(w + (size_t)((p * NPL_WPACK_ROWS + j) * nb + b) * in, o, j);
        }
}
static void unpack_row(const void *packed, int64_t nb, int64_t r, size_t in, size_t out, void *row, get_fn get) {
    const uint8_t *pb = (const uint8_t *)packed + (size_t)(r / NPL_WPACK_ROWS * nb) * out;
    for (int64_t b = 0; b < nb; b++, pb += out) get(pb, (int)(r % NPL_WPACK_ROWS), (uint8_t *)row + (size_t)b * in);
}

/* ---- q5_0: [0, 16) d; [16, 48) high bits; [48, 176) nibbles ---- */
static void put_q5_0(const void *blk, uint8_t *o, int j) {
    const block_q5_0 *x = blk;
    uint32_t qh;
    memcpy(&qh, x->qh, sizeof qh);
    memcpy(o + 2 * j, &x->d, 2);
    for (int el = 0; el < 32; el++) {
        const unsigned u = (el < 16 ? x->qs[el] & 0x0F : x->qs[el - 16] >> 4) | ((qh >> el) & 1) << 4;
        o[16 + 4 * j + el % 4] |= (uint8_t)((u >> 4) << (el / 4));
        nib_put(o + 48, j, el, u);
    }
}
static void get_q5_0(const uint8_t *pb, int j, void *blk) {
    block_q5_0 *x = blk;
    uint32_t qh = 0;
    memcpy(&x->d, pb + 2 * j, 2);
    memset(x->qs, 0, sizeof x->qs);
    for (int el = 0; el < 32; el++) {
        qh |= (uint32_t)((pb[16 + 4 * j + el % 4] >> (el / 4)) & 1) << el;
        x->qs[el & 15] |= (uint8_t)(nib_get(pb + 48, j, el) << (el < 16 ? 0 : 4));
    }
    memcpy(x->qh, &qh, sizeof qh);
}

/* ---- q4_1: [0, 16) d; [16, 32) m; [32, 160) nibbles ---- */
static void put_q4_1(const void *blk, uint8_t *o, int j) {
    const block_q4_1 *x = blk;
    memcpy(o + 2 * j, &x->d, 2);
    memcpy(o + 16 + 2 * j, &x->m, 2);
    for (int el = 0; el < 32; el++) nib_put(o + 32, j, el, el < 16 ? x->qs[el] & 0x0F : x->qs[el - 16] >> 4);
}
static void get_q4_1(const uint8_t *pb, int j, void *blk) {
    block_q4_1 *x = blk;
    memcpy(&x->d, pb + 2 * j, 2);
    memcpy(&x->m, pb + 16 + 2 * j, 2);
    memset(x->qs, 0, sizeof x->qs);
    for (int el = 0; el < 32; el++) x->qs[el & 15] |= (uint8_t)(nib_get(pb + 32, j, el) << (el < 16 ? 0 : 4));
}

/* ---- q4_K: [0, 16) d; [16, 32) dmin; [32, 96) scales; [96, 160) mins; [160, 1184) nibbles ---- */
static void put_q4_K(const void *blk, uint8_t *o, int j) {
    const block_q4_K *x = blk;
    memcpy(o + 2 * j, &x->d, 2);
    memcpy(o + 16 + 2 * j, &x->dmin, 2);
    for (int sb = 0; sb < 8; sb++) {
        uint8_t sc, m;
        npl_get_scale_min_k4(sb, x->scales, &sc, &m);
        o[32 + 8 * sb + j] = sc;
        o[96 + 16 * (sb / 2) + 2 * j + sb % 2] = m;
        for (int el = 0; el < 32; el++) {
            const uint8_t v = x->qs[32 * (sb / 2) + el];
            nib_put(o + 160 + 128 * sb, j, el, sb % 2 ? v >> 4 : v & 0x0F);
        }
    }
}
static void get_q4_K(const uint8_t *pb, int j, void *blk) {
    block_q4_K *x = blk;
    memcpy(&x->d, pb + 2 * j, 2);
    memcpy(&x->dmin, pb + 16 + 2 * j, 2);
    uint8_t sc[8], m[8];
    for (int sb = 0; sb < 8; sb++) sc[sb] = pb[32 + 8 * sb + j], m[sb] = pb[96 + 16 * (sb / 2) + 2 * j + sb % 2];
    /* the 12-byte 6-bit layout npl_get_scale_min_k4 reads */
    for (int q = 0; q < 4; q++) {
        x->scales[q] = (uint8_t)((sc[q] & 63) | (sc[q + 4] >> 4) << 6);
        x->scales[q + 4] = (uint8_t)((m[q] & 63) | (m[q + 4] >> 4) << 6);
        x->scales[q + 8] = (uint8_t)((sc[q + 4] & 15) | (m[q + 4] & 15) << 4);
    }
    memset(x->qs, 0, sizeof x->qs);
    for (int sb = 0; sb < 8; sb++)
        for (int el = 0; el < 32; el++)
            x->qs[32 * (sb / 2) + el] |= (uint8_t)(nib_get(pb + 160 + 128 * sb, j, el) << (sb % 2 ? 4 : 0));
}

/* ---- q6_K: [0, 16) d; [16, 144) scales; [144, 1168) low 4 bits of u = w + 32;
 * [1168, 1680) high 2 bits. Element el of 32-group G: ql / qh as the type has them ---- */
static void put_q6_K(const void *blk, uint8_t *o, int j) {
    const block_q6_K *x = blk;
    memcpy(o + 2 * j, &x->d, 2);
    for (int c = 0; c < 16; c++) o[16 + 8 * c + j] = (uint8_t)x->scales[c];
    for (int G = 0; G < 8; G++)
        for (int el = 0; el < 32; el++) {
            const int h = G / 4, kk = G % 4;
            const uint8_t lo = x->ql[64 * h + 32 * (kk & 1) + el], hi = x->qh[32 * h + el];
            const unsigned u = (unsigned)((kk < 2 ? lo & 0x0F : lo >> 4) | ((hi >> (2 * kk)) & 3) << 4);
            nib_put(o + 144 + 128 * G, j, el, u);
            o[1168 + 64 * G + 32 * (el / 16) + 4 * j + el % 4] |= (uint8_t)((u >> 4) << (2 * (el / 4 % 4)));
        }
}
static void get_q6_K(const uint8_t *pb, int j, void *blk) {
    block_q6_K *x = blk;
    memcpy(&x->d, pb + 2 * j, 2);
    for (int c = 0; c < 16; c++) x->scales[c] = (int8_t)pb[16 + 8 * c + j];
    memset(x->ql, 0, sizeof x->ql);
    memset(x->qh, 0, sizeof x->qh);
    for (int G = 0; G < 8; G++)
        for (int el = 0; el < 32; el++) {
            const int h = G / 4, kk = G % 4;
            const unsigned lo = nib_get(pb + 144 + 128 * G, j, el);
            const unsigned hi = (pb[1168 + 64 * G + 32 * (el / 16) + 4 * j + el % 4] >> (2 * (el / 4 % 4))) & 3;
            x->ql[64 * h + 32 * (kk & 1) + el] |= (uint8_t)(lo << (kk < 2 ? 0 : 4));
            x->qh[32 * h + el] |= (uint8_t)(hi << (2 * kk));
        }
}

void npl_wpack_q5_0(const void *src, void *dst, int64_t k, int64_t n) {
    pack_panels(src, dst, k / QK5_0, n, sizeof(block_q5_0), PANEL_BLOCK, put_q5_0);
}
void npl_wpack_q4_1(const void *src, void *dst, int64_t k, int64_t n) {
    pack_panels(src, dst, k / QK4_1, n, sizeof(block_q4_1), NPL_WPACK_Q4_1_BLOCK, put_q4_1);
}
void npl_wpack_q4_K(const void *src, void *dst, int64_t k, int64_t n) {
    pack_panels(src, dst, k / QK_K, n, sizeof(block_q4_K), NPL_WPACK_Q4_K_BLOCK, put_q4_K);
}
void npl_wpack_q6_K(const void *src, void *dst, int64_t k, int64_t n) {
    pack_panels(src, dst, k / QK_K, n, sizeof(block_q6_K), NPL_WPACK_Q6_K_BLOCK, put_q6_K);
}
void npl_wpack_q5_0_row(const void *packed, int64_t k, int64_t r, void *row) {
    unpack_row(packed, k / QK5_0, r, sizeof(block_q5_0), PANEL_BLOCK, row, get_q5_0);
}
void npl_wpack_q4_1_row(const void *packed, int64_t k, int64_t r, void *row) {
    unpack_row(packed, k / QK4_1, r, sizeof(block_q4_1), NPL_WPACK_Q4_1_BLOCK, row, get_q4_1);
}
void npl_wpack_q4_K_row(const void *packed, int64_t k, int64_t r, void *row) {
    unpack_row(packed, k / QK_K, r, sizeof(block_q4_K), NPL_WPACK_Q4_K_BLOCK, row, get_q4_K);
}
void npl_wpack_q6_K_row(const void *packed, int64_t k, int64_t r, void *row) {
    unpack_row(packed, k / QK_K, r, sizeof(block_q6_K), NPL_WPACK_Q6_K_BLOCK, row, get_q6_K);
}

void npl_wpack_pack(npl_type t, const void *src, void *dst, int64_t k, int64_t n) {
    if (t == NPL_TYPE_Q5_0) npl_wpack_q5_0(src, dst, k, n);
    else if (t == NPL_TYPE_Q4_1) npl_wpack_q4_1(src, dst, k, n);
    else if (t == NPL_TYPE_Q4_K) npl_wpack_q4_K(src, dst, k, n);
    else if (t == NPL_TYPE_Q6_K) npl_wpack_q6_K(src, dst, k, n);
}

size_t npl_wpack_bytes(npl_type t, int64_t k, int64_t n) {
    size_t row = 0;
    if (t == NPL_TYPE_Q4_K) return k % QK_K ? 0 : (size_t)(k / QK_K) * NPL_WPACK_Q4_K_BLOCK * (size_t)(n / NPL_WPACK_ROWS);
    if (npl_row_size(t, k, &row)) return 0;
    return row * (size_t)n;
}

#if defined(__x86_64__)
static npl_isa clamp_isa(npl_isa isa) {
    const npl_isa best = npl_cpu_best_isa();
    return (int)isa < (int)best ? isa : best;
}

/* Only the AVX2 kernels: AVX-512 and AMX have their own GEMM order (a row
 * must get the same bits in decode and prefill), but for the types the
 * AVX-512 family takes from AVX2 (gemm.h); aarch64 has its own kernels.
 * Not q6_K on AVX-512: its GEMV reads the file's rows faster (two rows per
 * zmm, 59 GB/s hot a core on an AMD EPYC Zen 5) than AVX2's the packed
 * ones (36), so the budget goes to q5_0 and q4_K. */
static int avx2_order(npl_isa isa, npl_type t) {
    const npl_isa c = clamp_isa(isa);
    /* q4_1: AVX2's kernels in every x86 family (gemm.h), AMX's too */
    if (t == NPL_TYPE_Q4_1) return (int)c >= (int)NPL_ISA_AVX2;
    return c == NPL_ISA_AVX2 || (c == NPL_ISA_AVX512 && npl_avx512_takes_avx2(t) && t != NPL_TYPE_Q6_K);
}
#endif

const npl_gemv_kernels *npl_gemv_get_packed(npl_isa isa, npl_type t) {
#if defined(__x86_64__)
    if (!avx2_order(isa, t)) return NULL;
    const npl_gemv_kernels *v = (int)clamp_isa(isa) >= (int)NPL_ISA_AVX512 ? npl_gemv_get_avx512_packed(t) : NULL;
    return v ? v : npl_gemv_get_avx2_packed(t);
#else
    (void)isa, (void)t;
    return NULL;
#endif
}

const npl_gemm_kernels *npl_gemm_get_packed(npl_isa isa, npl_type t) {
#if defined(__x86_64__)
    if (!avx2_order(isa, t)) return NULL;
    if (t == NPL_TYPE_Q4_1)
        return (int)clamp_isa(isa) >= (int)NPL_ISA_AVX512 ? npl_gemm_get_avx512_packed(t) : npl_gemm_get_avx2_q4_1_packed();
    /* AVX-512's VNNI GEMMs keep AVX2's order (gemm.h) */
    if (clamp_isa(isa) == NPL_ISA_AVX512) {
        const npl_gemm_kernels *v = t == NPL_TYPE_Q5_0 ? npl_gemm_get_avx512_packed(t) : npl_gemm_get_avx512_k(t, 1);
        if (v) return v;
    }
    return npl_gemm_get_avx2_packed(t);
#else
    (void)isa, (void)t;
    return NULL;
#endif
}

int npl_wpack_wanted(npl_isa isa, npl_type t, int64_t k, int64_t n) {
    const int blk = t == NPL_TYPE_Q5_0 ? QK5_0 : t == NPL_TYPE_Q4_1 ? QK4_1 : t == NPL_TYPE_Q4_K || t == NPL_TYPE_Q6_K ? QK_K : 0;
    return blk && k > 0 && k % blk == 0 && k <= NPL_GEMM_MAX_K && n > 0 && n % NPL_WPACK_ROWS == 0 &&
           npl_gemv_get_packed(isa, t) && npl_gemm_get_packed(isa, t);
}

/* first entry whose src is >= p */
static int lower_bound(const npl_wpack_table *tab, const void *p) {
    int lo = 0, hi = tab->n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if ((uintptr_t)tab->e[mid].src < (uintptr_t)p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

const void *npl_wpack_find(const npl_wpack_table *tab, const void *src) {
    if (!tab || !tab->n) return NULL;
    const int i = lower_bound(tab, src);
    return i < tab->n && tab->e[i].src == src ? tab->e[i].dst : NULL;
}

int npl_wpack_add(npl_wpack_table *tab, npl_type t, const void *src, int64_t k, int64_t n, int drop_src) {
    const int i = lower_bound(tab, src);
    if (i < tab->n && tab->e[i].src == src) return 0;
    const size_t bytes = npl_wpack_bytes(t, k, n);
    if (!bytes || (t != NPL_TYPE_Q5_0 && t != NPL_TYPE_Q4_1 && t != NPL_TYPE_Q4_K && t != NPL_TYPE_Q6_K)) return -1;
    if (tab->n == tab->cap) {
        const int cap = tab->cap ? 2 * tab->cap : 64;
        npl_wpack_entry *e = realloc(tab->e, (size_t)cap * sizeof *e);
        if (!e) return -1;
        tab->e = e;
        tab->cap = cap;
    }
    void *dst = NULL;
    const size_t room = (bytes + 63) & ~(size_t)63;
    if (tab->arena && tab->arena_len - tab->arena_used >= room) {
        dst = tab->arena + tab->arena_used;
        tab->arena_used += room;
    } else if (posix_memalign(&dst, 64, bytes)) {
        return -1;
    }
    npl_wpack_pack(t, src, dst, k, n);
    memmove(&tab->e[i + 1], &tab->e[i], (size_t)(tab->n - i) * sizeof *tab->e);
    tab->e[i] = (npl_wpack_entry){src, dst, bytes};
    tab->n++;
    tab->bytes += bytes;
    /* the original's whole pages leave this process's memory (a read-only
     * file mapping: they come back from the page cache if anything reads
     * them), so the packed copy replaces them instead of adding to them */
    size_t row = 0;
    npl_row_size(t, k, &row);
    const uintptr_t pg = 4096, a = ((uintptr_t)src + pg - 1) & ~(pg - 1), z = ((uintptr_t)src + row * (size_t)n) & ~(pg - 1);
    if (drop_src && z > a) madvise((void *)a, z - a, MADV_DONTNEED);
    return 0;
}

static int in_arena(const npl_wpack_table *tab, const void *p) {
    return tab->arena && (const char *)p >= tab->arena && (const char *)p < tab->arena + tab->arena_len;
}

int npl_wpack_reserve(npl_wpack_table *tab, size_t bytes) {
    const size_t huge = (size_t)2 << 20, len = (bytes + huge - 1) & ~(huge - 1);
    if (tab->arena || !len || len + huge < len) return -1;
    char *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -1;
    /* keep the 2 MiB aligned len bytes inside, unmap the rest */
    char *a = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (m + len + huge > a + len) munmap(a + len, (size_t)(m + len + huge - (a + len)));
    tab->arena = a;
    tab->arena_len = len;
    tab->arena_used = 0;
#ifdef MADV_HUGEPAGE
    madvise(tab->arena, len, MADV_HUGEPAGE); /* advice: without it, 4 KiB pages */
#endif
    return 0;
}

void npl_wpack_free(npl_wpack_table *tab) {
    for (int i = 0; i < tab->n; i++)
        if (!in_arena(tab, tab->e[i].dst)) free(tab->e[i].dst);
    if (tab->arena) munmap(tab->arena, tab->arena_len);
    free(tab->e);
    *tab = (npl_wpack_table){0};
}
