/* AVX-512 VNNI GEMV on packed q5_0 (kernels/wpack.h's Q5_0 x 8 panels):
 * decode and small batches, in AVX2's order (gemm.h), so plain C's bits.
 *
 * As the packed GEMM (gemm_avx512_q5_0.c): two panels side by side fill a
 * zmm (row j of the pair in int32 lane j), the weights stay unsigned
 * (u = w + 16) against the activation's 4 bytes broadcast from memory, and
 * each lane's dpbusd total starts at -16 x the block's quant sum: the exact
 * int32 w . x, then acc + (float)total x dw x dx per block, blocks in
 * order. 16 rows per unpacking instead of the AVX2 kernel's 8 (the
 * unpacking is most of a decode GEMV's instructions). The activation row
 * is the AVX2 packed GEMV's (gemv_avx2_packed.c): the q8_0 row as it is,
 * its scales as floats and 16 x its quant sums. */
#include "kernels/wpack.h"

#if defined(__x86_64__) || defined(__i386__)
#include <string.h>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512/gemv_hint.h"
#include "kernels/x86/avx512/q5_0_packed512.h"

#define INLINE static inline __attribute__((always_inline))

enum { PB = 176, PANEL = 8, MAXM = 16 }; /* bytes of a panel block; rows of a panel; activation rows at most */

#ifndef PACKED_PF
/* bytes ahead of the block being read, in each of the two panels
 * (gemv_bench token, 2 threads, AMD EPYC Zen 5: Gemma's gate/up 27-30 GB/s
 * at 1024, 32-33 at 4096, 38-42 at 8192, no better further) */
#define PACKED_PF 8192
#endif

/* panels p0, p1 (p1 may repeat p0: lanes 8-15 then not stored) against M
 * activation rows (M constant for M = 1, the decode case; else m) */
INLINE void pair(const uint8_t *p0, const uint8_t *p1, int64_t nb, const npl_gemv_x *gx, const int M, int m, float *y,
                 int64_t ldy, __mmask16 keep) {
    if (M) m = M;
    __m512 acc[MAXM];
    for (int c = 0; c < m; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p0 += PB, p1 += PB) {
        for (int o = 0; o < 192; o += 64) {
            _mm_prefetch((const char *)p0 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
            _mm_prefetch((const char *)p1 + PACKED_PF + o, NPL_GEMV_WEIGHT_HINT);
        }
        __m512i u[8];
        unpack16(p0, p1, u);
        const __m512 dw = scales16(p0, p1);
        for (int c = 0; c < m; c++) {
            const int8_t *xq = ((const block_q8_0 *)gx[c].qs + b)->qs;
            __m512i s = _mm512_set1_epi32(-gx[c].cz[b]);
            for (int g = 0; g < 8; g++) dpbusd_bcast(&s, u[g], xq + 4 * g);
            __m512 f = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), dw), _mm512_set1_ps(gx[c].d[b]));
            __asm__("" : "+v"(f)); /* no fma: plain C rounds the product */
            acc[c] = _mm512_add_ps(acc[c], f);
        }
    }
    for (int c = 0; c < m; c++) _mm512_mask_storeu_ps(y + (int64_t)c * ldy, keep, acc[c]);
}

static void rows_q5_0_packed(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                             float *y, int64_t ldy) {
    const int64_t nb = gx[0].k / QK5_0;
    for (int64_t r = r0; r < r1; r += 2 * PANEL) {
        const uint8_t *p0 = (const uint8_t *)w + (size_t)r * w_row;
        const int two = r1 - r > PANEL;
        const uint8_t *p1 = two ? p0 + PANEL * w_row : p0;
        const __mmask16 keep = two ? 0xFFFF : 0x00FF;
        if (m == 1) pair(p0, p1, nb, gx, 1, 1, y + r, ldy, keep);
        else pair(p0, p1, nb, gx, 0, m, y + r, ldy, keep);
    }
}

static void prep_q5_0_packed(npl_gemv_x *gx, void *mem, const void *xq, int64_t k) {
    npl_gemv_get_avx2_packed(NPL_TYPE_Q5_0)->prep(gx, mem, xq, k);
}

static const npl_gemv_kernels k_q5_0_packed = {prep_q5_0_packed, rows_q5_0_packed};

const npl_gemv_kernels *npl_gemv_get_avx512_packed(npl_type t) { return t == NPL_TYPE_Q5_0 ? &k_q5_0_packed : NULL; }

#else
const npl_gemv_kernels *npl_gemv_get_avx512_packed(npl_type t) {
    (void)t;
    return NULL;
}
#endif
