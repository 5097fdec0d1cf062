/* Weights repacked at load into the layout a kernel family reads fastest
 * (llama.cpp's CPU "repack" buffers do the same for its AVX2 q4_0 / q4_K).
 *
 * Decode streams every weight once per token; with q5_0's layout the AVX2
 * GEMV spends more time unpacking than reading (one thread: 13 GB/s hot
 * against q8_0's 28). The packed form holds the same bytes per row (the
 * same 22 per 32 weights) but 8 rows side by side, arranged as the GEMM's
 * panels already are after their transpose (gemm_avx2.c): vector g of a
 * block holds elements 4g..4g+3 of the 8 rows, row j in int32 lane j, so
 * an activation's 4 bytes broadcast against it give 8 rows' sums in 8
 * lanes with no horizontal sum, and the 8 scales are one load.
 *
 * Q5_0 x 8 (npl_wpack_q5_0): panel p (rows 8p..8p+7) starts at byte
 * 8p * row_bytes; its block b (176 bytes) is
 *   [0, 16)    the 8 rows' f16 scales d, row j at 2j;
 *   [16, 48)   high bits: byte 4j + e, bit g = the 5th bit of element
 *              4g + e of row j;
 *   [48, 176)  nibbles, 4 vectors of 32: vector h byte 4j + e = element
 *              4h + e of row j (low nibble) | element 4(h + 4) + e (high).
 * Exact integer sums and the same float step per block as the plain C
 * kernel: a packed matrix gives plain C's bits, in decode and in prefill.
 *
 * Q4_K x 8 (npl_wpack_q4_K): panel p starts at byte p * (k / 256) *
 * NPL_WPACK_Q4_K_BLOCK; its super-block i (1184 bytes, 2.8 % more than the
 * 8 rows' 1152: the 6-bit scales are stored unpacked) is
 *   [0, 16)      the 8 rows' f16 d; [16, 32) their f16 dmin;
 *   [32, 96)     scales: byte 8s + j = sub-block s's scale of row j;
 *   [96, 160)    mins in pairs: byte 16i + 2j + h = the min of sub-block
 *                2i + h of row j (one madd against the pair of 32-sums);
 *   [160, 1184)  nibbles: sub-block s at 160 + 128s, 4 vectors of 32 as
 *                q5_0's (vector h byte 4j + e: element 4h + e of the
 *                sub-block of row j | element 4(h + 4) + e in the high
 *                nibble).
 * Its kernels keep the AVX2 q4_K vec_dot's float accumulators lane for
 * lane (lane l of row j's: elements 4l..4l+3 of every sub-block), so a
 * packed matrix gives that family's bits.
 *
 * Q4_1 x 8 (npl_wpack_q4_1): block b of panel p (160 bytes, the 8 rows'
 * own) is [0, 16) the 8 rows' f16 d; [16, 32) their f16 m; [32, 160) the
 * nibbles as q5_0's. The panel the q4_1 GEMM decodes rows into (gemm_avx2_q4_1.c)
 * with no transpose, so its kernels give that GEMM's bits, plain C's. Every
 * x86 family reads q4_1 with AVX2's arithmetic, so every one packs it.
 *
 * Q6_K x 8 (npl_wpack_q6_K): super-block i of a panel is 1680 bytes, the 8
 * rows' own size: [0, 16) f16 d; [16, 144) scales, byte 8c + j = group c's
 * (16 elements) of row j; [144, 1168) the low 4 bits of u = w + 32 as
 * q4_K's nibbles, per 32-element group G at 144 + 128G; [1168, 1680) the
 * high 2 bits, 64 bytes per group: vector a (g = 0..3) and b (4..7), byte
 * 4j + e bits 2(g mod 4) and up = those of element 4g + e of row j. Lanes
 * as the AVX2 q6_K vec_dot's, so that family's bits.
 *
 * A model keeps the packed copies in anonymous memory next to its mapping
 * (npl_wpack_table), found by the original's address; a matmul whose
 * family has no packed kernels reads the original. */
#ifndef NPL_WPACK_H
#define NPL_WPACK_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/vec_dot.h"

enum { NPL_WPACK_ROWS = 8, NPL_WPACK_Q4_1_BLOCK = 160, NPL_WPACK_Q4_K_BLOCK = 1184, NPL_WPACK_Q6_K_BLOCK = 1680 };

/* 1 when the family `isa` (clamped to this CPU) reads weights of type t,
 * k x n, packed: a layout and both packed kernels exist, n is a multiple of
 * NPL_WPACK_ROWS and k fits the GEMM. */
int npl_wpack_wanted(npl_isa isa, npl_type t, int64_t k, int64_t n);
/* Bytes of the packed matrix (q5_0, q4_1, q6_K: the original's; q4_K: 1184 / 1152 of it). */
size_t npl_wpack_bytes(npl_type t, int64_t k, int64_t n);
/* Write the packed form of n rows of k weights of type t (q5_0, q4_1, q4_K, q6_K; n a multiple of 8). */
void npl_wpack_pack(npl_type t, const void *src, void *dst, int64_t k, int64_t n);
void npl_wpack_q5_0(const void *src, void *dst, int64_t k, int64_t n);
void npl_wpack_q4_1(const void *src, void *dst, int64_t k, int64_t n);
void npl_wpack_q4_K(const void *src, void *dst, int64_t k, int64_t n);
void npl_wpack_q6_K(const void *src, void *dst, int64_t k, int64_t n);
/* Row r of a packed matrix back in the type's own layout (tests). */
void npl_wpack_q5_0_row(const void *packed, int64_t k, int64_t r, void *row);
void npl_wpack_q4_1_row(const void *packed, int64_t k, int64_t r, void *row);
void npl_wpack_q4_K_row(const void *packed, int64_t k, int64_t r, void *row);
void npl_wpack_q6_K_row(const void *packed, int64_t k, int64_t r, void *row);

/* The packed kernels of family `isa` for type t, or NULL. Same interface as
 * the unpacked ones (gemv.h, gemm.h) with w the packed matrix; r0 and r1
 * multiples of NPL_WPACK_ROWS (r1 may be n). */
const npl_gemv_kernels *npl_gemv_get_packed(npl_isa isa, npl_type t);
const npl_gemm_kernels *npl_gemm_get_packed(npl_isa isa, npl_type t);
/* Internal: the AVX2 ones (x86/avx2/gemv_avx2_packed.c, gemm_avx2.c). */
const npl_gemv_kernels *npl_gemv_get_avx2_packed(npl_type t);
const npl_gemm_kernels *npl_gemm_get_avx2_packed(npl_type t);
/* Internal: AVX-512 VNNI's q5_0 GEMM, q5_0 and q4_K GEMVs in AVX2's order
 * (x86/avx512/gemm_avx512_q5_0.c, gemv_avx512_packed.c), or NULL. */
const npl_gemm_kernels *npl_gemm_get_avx512_packed(npl_type t);
const npl_gemv_kernels *npl_gemv_get_avx512_packed(npl_type t);
/* Internal: packed q4_1's AVX2 GEMM (x86/avx2/gemm_avx2_q4_1.c) and GEMV
 * (x86/avx2/gemv_avx2_q4_1.c); the AVX-512 GEMV is in gemv_avx512_packed.c. */
const npl_gemm_kernels *npl_gemm_get_avx2_q4_1_packed(void);
const npl_gemv_kernels *npl_gemv_get_avx2_q4_1_packed(void);

/* A model's packed copies, sorted by the original's address. */
typedef struct {
    const void *src;
    void *dst;
    size_t bytes;
} npl_wpack_entry;

typedef struct npl_wpack_table {
    npl_wpack_entry *e;
    int n, cap;
    size_t bytes;               /* all packed copies */
    char *arena;                /* npl_wpack_reserve's mapping (2 MiB aligned), or NULL */
    size_t arena_len, arena_used;
} npl_wpack_table;

/* Room for `bytes` of packed copies in one anonymous mapping advised for
 * 2 MiB pages (MADV_HUGEPAGE), which npl_wpack_add then fills before
 * anything else: decode streams every copy once a token, and on 4 KiB
 * pages each page costs a TLB walk (AMD EPYC Zen 4, Gemma 3 270M's packed
 * layer matmuls 1.12x faster on 2 MiB pages: 7 alternated op-profile
 * runs of a scratch build switching the advice). Untouched pages cost nothing; where the kernel gives no huge
 * pages the mapping is just memory. 0, or -1 when it cannot be mapped
 * (copies are then allocated one by one). */
int npl_wpack_reserve(npl_wpack_table *tab, size_t bytes);

/* Adds the packed copy of `src` (type t, k x n) unless it is there;
 * 0, or -1 when memory runs out (the table is unchanged then). drop_src 1:
 * src lies in a read-only file mapping, whose pages under it are then
 * dropped from this process (MADV_DONTNEED; they fault back in from the
 * page cache if read): never for anonymous memory, which that zeroes. */
int npl_wpack_add(npl_wpack_table *tab, npl_type t, const void *src, int64_t k, int64_t n, int drop_src);
/* The packed copy of the matrix at src, or NULL. */
const void *npl_wpack_find(const npl_wpack_table *tab, const void *src);
void npl_wpack_free(npl_wpack_table *tab);

#endif
