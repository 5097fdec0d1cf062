/* The GEMV row loop of gemv_avx2.c and the AVX-512 32-block kernels: a
 * range of rows as NR streams. Included after the file defines NR,
 * PF_ROWS, INLINE and rows_nr(K, nr, x, g, out, pf), the nr rows' sums
 * against one prepared activation row. */
#ifndef NPL_GEMV_ROWS_H
#define NPL_GEMV_ROWS_H

/* One group: rows x[0..nr) (row numbers rj[]) against the m activation rows */
INLINE void group(const int K, const int nr, const uint8_t *const *x, const int64_t *rj, const npl_gemv_x *gx, int m,
                  float *y, int64_t ldy, size_t pf) {
    for (int c = 0; c < m; c++) {
        float out[NR];
        rows_nr(K, nr, x, &gx[c], out, c ? 0 : pf);
        for (int j = 0; j < nr; j++) y[(int64_t)c * ldy + rj[j]] = out[j];
    }
}

/* Rows [r0, r1) as NR streams: the range splits into NR contiguous parts
 * and a group takes the next row of each, so each stream reads memory
 * front to back, row after row, where the hardware prefetcher follows it
 * (NR adjacent rows at once were NR interleaved streams inside one span).
 * The first activation row prefetches each stream's row PF_ROWS / NR groups
 * ahead (the later ones find the group in cache); a stream's last
 * prefetches fall on the next part's start or past the range, harmless
 * (prefetches do not fault). Fewer than NR rows left over: one group. */
INLINE void rows_with(const int K, const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m,
                      float *y, int64_t ldy) {
    const int64_t q = (r1 - r0) / NR;
    const size_t pf = (size_t)(PF_ROWS / NR) * w_row;
    const uint8_t *x[NR];
    int64_t rj[NR];
    for (int64_t i = 0; i < q; i++) {
        for (int j = 0; j < NR; j++) {
            rj[j] = r0 + j * q + i;
            x[j] = (const uint8_t *)w + (size_t)rj[j] * w_row;
        }
        group(K, NR, x, rj, gx, m, y, ldy, pf);
    }
    const int left = (int)(r1 - r0 - NR * q);
    for (int j = 0; j < left; j++) {
        rj[j] = r0 + NR * q + j;
        x[j] = (const uint8_t *)w + (size_t)rj[j] * w_row;
    }
    if (left == 3) group(K, 3, x, rj, gx, m, y, ldy, 0);
    else if (left == 2) group(K, 2, x, rj, gx, m, y, ldy, 0);
    else if (left == 1) group(K, 1, x, rj, gx, m, y, ldy, 0);
}

/* rows_NAME: the kernel table's rows function for kind K */
#define NPL_GEMV_ROWS_FN(name, K)                                                                              \
    static void rows_##name(const void *w, size_t w_row, int64_t r0, int64_t r1, const npl_gemv_x *gx, int m, \
                            float *y, int64_t ldy) {                                                          \
        rows_with(K, w, w_row, r0, r1, gx, m, y, ldy);                                                         \
    }

#endif
