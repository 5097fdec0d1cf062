/* Pieces of the double-precision reference dots of the kernel tests
 * (test_vec_dot, test_gemm). */
#ifndef NPL_TEST_DOT_REF_H
#define NPL_TEST_DOT_REF_H
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

/* q8_1 carries s = d * sum(qs) rounded to f16, and llama.cpp's q4_1 / q5_1
 * dots take the min term from it: m * s, not m * d * sum(qs). Returns what
 * that rounding adds to the exact dot of the dequantized rows xq (weights)
 * and yq (q8_1), n elements; 0 for other weight types. */
static inline double dot_ref_q8_1_s_rounding(int type, const void *xq, const void *yq, int n) {
    if (type != NPL_TYPE_Q4_1 && type != NPL_TYPE_Q5_1) return 0;
    const block_q8_1 *y = yq;
    double adj = 0;
    for (int i = 0; i < n / QK8_1; i++) {
        /* both block types start with d, m */
        const uint16_t *dm = (const uint16_t *)((const uint8_t *)xq +
                                                (size_t)i * (type == NPL_TYPE_Q4_1 ? sizeof(block_q4_1) : sizeof(block_q5_1)));
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) sum += y[i].qs[j];
        adj += (double)npl_f16_to_f32(dm[1]) *
               ((double)npl_f16_to_f32(y[i].s) - (double)npl_f16_to_f32(y[i].d) * sum);
    }
    return adj;
}

#endif
