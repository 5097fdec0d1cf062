/* Packed weights (wpack.h): the plain C repack, its inverse for tests, the
 * table of a model's packed copies and the family lookups. */
#include "kernels/wpack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

enum { PANEL_BLOCK = 176 }; /* one block of 8 q5_0 rows */

/* element e (0..31) of a q5_0 block: its 5 bits */
static unsigned q5_elem(const block_q5_0 *b, int e) {
    uint32_t qh;
    memcpy(&qh, b->qh, sizeof qh);
    const unsigned nib = e < 16 ? b->qs[e] & 0x0F : b->qs[e - 16] >> 4;
    return nib | ((qh >> e) & 1) << 4;
}

void npl_wpack_q5_0(const void *src, void *dst, int64_t k, int64_t n) {
    const int64_t nb = k / QK5_0;
    const block_q5_0 *w = src;
    uint8_t *o = dst;
    for (int64_t p = 0; p < n / NPL_WPACK_ROWS; p++)
        for (int64_t b = 0; b < nb; b++, o += PANEL_BLOCK) {
            memset(o, 0, PANEL_BLOCK);
            for (int j = 0; j < NPL_WPACK_ROWS; j++) {
                const block_q5_0 *x = &w[(p * NPL_WPACK_ROWS + j) * nb + b];
                memcpy(o + 2 * j, &x->d, 2);
                for (int g = 0; g < 8; g++)
                    for (int e = 0; e < 4; e++) {
                        const unsigned u = q5_elem(x, 4 * g + e), i = 4 * (unsigned)j + (unsigned)e;
                        o[16 + i] |= (uint8_t)((u >> 4) << g);
                        o[48 + 32 * (g & 3) + i] |= (uint8_t)((u & 0x0F) << (g < 4 ? 0 : 4));
                    }
            }
        }
}

void npl_wpack_q5_0_row(const void *packed, int64_t k, int64_t r, void *row) {
    const int64_t nb = k / QK5_0, j = r % NPL_WPACK_ROWS;
    const uint8_t *pb = (const uint8_t *)packed + (r / NPL_WPACK_ROWS) * nb * PANEL_BLOCK;
    block_q5_0 *x = row;
    for (int64_t b = 0; b < nb; b++, pb += PANEL_BLOCK) {
        memcpy(&x[b].d, pb + 2 * j, 2);
        uint32_t qh = 0;
        memset(x[b].qs, 0, sizeof x[b].qs);
        for (int g = 0; g < 8; g++)
            for (int e = 0; e < 4; e++) {
                const int el = 4 * g + e, i = 4 * (int)j + e;
                const unsigned nib = (pb[48 + 32 * (g & 3) + i] >> (g < 4 ? 0 : 4)) & 0x0F;
                qh |= (uint32_t)((pb[16 + i] >> g) & 1) << el;
                x[b].qs[el & 15] |= (uint8_t)(nib << (el < 16 ? 0 : 4));
            }
        memcpy(x[b].qh, &qh, sizeof qh);
    }
}

/* element e (0..31) of a q4_1 block: its 4 bits */
static unsigned q4_1_elem(const block_q4_1 *b, int e) { return e < 16 ? b->qs[e] & 0x0F : b->qs[e - 16] >> 4; }

void npl_wpack_q4_1(const void *src, void *dst, int64_t k, int64_t n) {
    const int64_t nb = k / QK4_1;
    const block_q4_1 *w = src;
    uint8_t *o = dst;
    for (int64_t p = 0; p < n / NPL_WPACK_ROWS; p++)
        for (int64_t b = 0; b < nb; b++, o += NPL_WPACK_Q4_1_BLOCK) {
            memset(o, 0, NPL_WPACK_Q4_1_BLOCK);
            for (int j = 0; j < NPL_WPACK_ROWS; j++) {
                const block_q4_1 *x = &w[(p * NPL_WPACK_ROWS + j) * nb + b];
                memcpy(o + 2 * j, &x->d, 2);
                memcpy(o + 16 + 2 * j, &x->m, 2);
                for (int g = 0; g < 8; g++)
                    for (int e = 0; e < 4; e++)
                        o[32 + 32 * (g & 3) + 4 * j + e] |= (uint8_t)(q4_1_elem(x, 4 * g + e) << (g < 4 ? 0 : 4));
            }
        }
}

void npl_wpack_q4_1_row(const void *packed, int64_t k, int64_t r, void *row) {
    const int64_t nb = k / QK4_1, j = r % NPL_WPACK_ROWS;
    const uint8_t *pb = (const uint8_t *)packed + (r / NPL_WPACK_ROWS) * nb * NPL_WPACK_Q4_1_BLOCK;
    block_q4_1 *x = row;
    for (int64_t b = 0; b < nb; b++, pb += NPL_WPACK_Q4_1_BLOCK) {
        memcpy(&x[b].d, pb + 2 * j, 2);
        memcpy(&x[b].m, pb + 16 + 2 * j, 2);
        memset(x[b].qs, 0, sizeof x[b].qs);
        for (int g = 0; g < 8; g++)
            for (int e = 0; e < 4; e++) {
                const int el = 4 * g + e;
                const unsigned nib = (pb[32 + 32 * (g & 3) + 4 * j + e] >> (g < 4 ? 0 : 4)) & 0x0F;
                x[b].qs[el & 15] |= (uint8_t)(nib << (el < 16 ? 0 : 4));
            }
    }
}

/* element e (0..31) of sub-block s (0..7) of a q4_K super-block: its 4 bits */
static unsigned q4k_elem(const block_q4_K *b, int s, int e) {
    const uint8_t v = b->qs[32 * (s / 2) + e];
    return s % 2 ? v >> 4 : v & 0x0F;
}

void npl_wpack_q4_K(const void *src, void *dst, int64_t k, int64_t n) {
    const int64_t nb = k / QK_K;
    const block_q4_K *w = src;
    uint8_t *o = dst;
    for (int64_t p = 0; p < n / NPL_WPACK_ROWS; p++)
        for (int64_t i = 0; i < nb; i++, o += NPL_WPACK_Q4_K_BLOCK) {
            memset(o, 0, NPL_WPACK_Q4_K_BLOCK);
            for (int j = 0; j < NPL_WPACK_ROWS; j++) {
                const block_q4_K *x = &w[(p * NPL_WPACK_ROWS + j) * nb + i];
                memcpy(o + 2 * j, &x->d, 2);
                memcpy(o + 16 + 2 * j, &x->dmin, 2);
                for (int sb = 0; sb < 8; sb++) {
                    uint8_t sc, m;
                    npl_get_scale_min_k4(sb, x->scales, &sc, &m);
                    o[32 + 8 * sb + j] = sc;
                    o[96 + 16 * (sb / 2) + 2 * j + sb % 2] = m;
                    for (int g = 0; g < 8; g++)
                        for (int e = 0; e < 4; e++)
                            o[160 + 128 * sb + 32 * (g & 3) + 4 * j + e] |=
                                (uint8_t)(q4k_elem(x, sb, 4 * g + e) << (g < 4 ? 0 : 4));
                }
            }
        }
}

void npl_wpack_q4_K_row(const void *packed, int64_t k, int64_t r, void *row) {
    const int64_t nb = k / QK_K, j = r % NPL_WPACK_ROWS;
    const uint8_t *pb = (const uint8_t *)packed + (r / NPL_WPACK_ROWS) * nb * NPL_WPACK_Q4_K_BLOCK;
    block_q4_K *x = row;
    for (int64_t i = 0; i < nb; i++, pb += NPL_WPACK_Q4_K_BLOCK) {
        memcpy(&x[i].d, pb + 2 * j, 2);
        memcpy(&x[i].dmin, pb + 16 + 2 * j, 2);
        uint8_t sc[8], m[8];
        for (int sb = 0; sb < 8; sb++) sc[sb] = pb[32 + 8 * sb + j], m[sb] = pb[96 + 16 * (sb / 2) + 2 * j + sb % 2];
        /* the 12-byte 6-bit layout npl_get_scale_min_k4 reads */
        for (int q = 0; q < 4; q++) {
            x[i].scales[q] = (uint8_t)((sc[q] & 63) | (sc[q + 4] >> 4) << 6);
            x[i].scales[q + 4] = (uint8_t)((m[q] & 63) | (m[q + 4] >> 4) << 6);
            x[i].scales[q + 8] = (uint8_t)((sc[q + 4] & 15) | (m[q + 4] & 15) << 4);
        }
        memset(x[i].qs, 0, sizeof x[i].qs);
        for (int sb = 0; sb < 8; sb++)
            for (int g = 0; g < 8; g++)
                for (int e = 0; e < 4; e++) {
                    const unsigned v = (pb[160 + 128 * sb + 32 * (g & 3) + 4 * j + e] >> (g < 4 ? 0 : 4)) & 0x0F;
                    x[i].qs[32 * (sb / 2) + 4 * g + e] |= (uint8_t)(v << (sb % 2 ? 4 : 0));
                }
    }
}

/* element e (0..31) of 32-group G (0..7) of a q6_K super-block: its 6 bits u = w + 32 */
static unsigned q6k_elem(const block_q6_K *b, int G, int e) {
    const int h = G / 4, k = G % 4;
    const uint8_t lo = b->ql[64 * h + 32 * (k & 1) + e], hi = b->qh[32 * h + e];
    return (unsigned)((k < 2 ? lo & 0x0F : lo >> 4) | ((hi >> (2 * k)) & 3) << 4);
}

void npl_wpack_q6_K(const void *src, void *dst, int64_t k, int64_t n) {
    const int64_t nb = k / QK_K;
    const block_q6_K *w = src;
    uint8_t *o = dst;
    for (int64_t p = 0; p < n / NPL_WPACK_ROWS; p++)
        for (int64_t i = 0; i < nb; i++, o += NPL_WPACK_Q6_K_BLOCK) {
            memset(o, 0, NPL_WPACK_Q6_K_BLOCK);
            for (int j = 0; j < NPL_WPACK_ROWS; j++) {
                const block_q6_K *x = &w[(p * NPL_WPACK_ROWS + j) * nb + i];
                memcpy(o + 2 * j, &x->d, 2);
                for (int c = 0; c < 16; c++) o[16 + 8 * c + j] = (uint8_t)x->scales[c];
                for (int G = 0; G < 8; G++)
                    for (int g = 0; g < 8; g++)
                        for (int e = 0; e < 4; e++) {
                            const unsigned u = q6k_elem(x, G, 4 * g + e), bi = 4 * (unsigned)j + (unsigned)e;
                            o[144 + 128 * G + 32 * (g & 3) + bi] |= (uint8_t)((u & 0x0F) << (g < 4 ? 0 : 4));
                            o[1168 + 64 * G + 32 * (g / 4) + bi] |= (uint8_t)((u >> 4) << (2 * (g & 3)));
                        }
            }
        }
}

void npl_wpack_q6_K_row(const void *packed, int64_t k, int64_t r, void *row) {
    const int64_t nb = k / QK_K, j = r % NPL_WPACK_ROWS;
    const uint8_t *pb = (const uint8_t *)packed + (r / NPL_WPACK_ROWS) * nb * NPL_WPACK_Q6_K_BLOCK;
    block_q6_K *x = row;
    for (int64_t i = 0; i < nb; i++, pb += NPL_WPACK_Q6_K_BLOCK) {
        memcpy(&x[i].d, pb + 2 * j, 2);
        for (int c = 0; c < 16; c++) x[i].scales[c] = (int8_t)pb[16 + 8 * c + j];
        memset(x[i].ql, 0, sizeof x[i].ql);
        memset(x[i].qh, 0, sizeof x[i].qh);
        for (int G = 0; G < 8; G++)
            for (int g = 0; g < 8; g++)
                for (int e = 0; e < 4; e++) {
                    const int bi = 4 * (int)j + e, el = 4 * g + e, h = G / 4, kk = G % 4;
                    const unsigned lo = (pb[144 + 128 * G + 32 * (g & 3) + bi] >> (g < 4 ? 0 : 4)) & 0x0F;
                    const unsigned hi = (pb[1168 + 64 * G + 32 * (g / 4) + bi] >> (2 * (g & 3))) & 3;
                    x[i].ql[64 * h + 32 * (kk & 1) + el] |= (uint8_t)(lo << (kk < 2 ? 0 : 4));
                    x[i].qh[32 * h + el] |= (uint8_t)(hi << (2 * kk));
                }
    }
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
    if (t == NPL_TYPE_Q4_1) return npl_gemm_get_avx2_q4_1_packed();
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
    if (posix_memalign(&dst, 64, bytes)) return -1;
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

void npl_wpack_free(npl_wpack_table *tab) {
    for (int i = 0; i < tab->n; i++) free(tab->e[i].dst);
    free(tab->e);
    *tab = (npl_wpack_table){0};
}
