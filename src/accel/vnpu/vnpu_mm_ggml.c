/* vnpu matmul over GGML block weights (VNPU_PK_GGML): the weights are the
 * model file's blocks, bit for bit, and the activations are quantized to the
 * block type's dot partner (Q8_0 for Q4_0..Q8_0, Q8_K for the k-quants)
 * exactly as the CPU path does it. The kernels are the host's quantized
 * dot / GEMM kernels of the family's ISA (generic C, AVX2, AVX-512, AMX):
 * re-rounding q4_K / q6_K weights to an int8 grid, as the I8 packs did, cost
 * more agreement with the CPU path than f16 activations do. */
#include "accel/vnpu/vnpu.h"
#include "cpu/cpu_backend.h"

static void ggml_tensors(const vnpu_pack *p, const float *x, int64_t m, float *y, npl_tensor *w, npl_tensor *xt,
                         npl_tensor *yt) {
    *w = (npl_tensor){(npl_type)p->gtype, {2, {p->k, p->n[0], 1, 1}}, (void *)p->wraw};
    *xt = (npl_tensor){NPL_TYPE_F32, {2, {p->k, m, 1, 1}}, (void *)x};
    *yt = (npl_tensor){NPL_TYPE_F32, {2, {p->n[0], m, 1, 1}}, y};
}

size_t vnpu_matmul_ggml_scratch(const vnpu_pack *p, int64_t m) {
    npl_tensor w, x, y;
    ggml_tensors(p, NULL, m, NULL, &w, &x, &y);
    return npl_cpu_matmul_scratch(&w, &x);
}

int vnpu_matmul_ggml_ok(int gtype) {
    const npl_type_traits *tr = npl_type_get(gtype);
    const npl_kernels *k = npl_kernels_get(NPL_ISA_GENERIC);
    return tr && k->vec_dot[gtype] && tr->vec_dot_type != NPL_TYPE_F32 && k->quantize_row[tr->vec_dot_type];
}

void vnpu_matmul_ggml(int isa, npl_pool *pool, const vnpu_pack *p, const float *x, int64_t m, float *y,
                      uint8_t *scratch) {
    npl_tensor w, xt, yt;
    ggml_tensors(p, x, m, y, &w, &xt, &yt);
    const npl_cpu_ctx cc = {(npl_isa)isa, npl_kernels_get((npl_isa)isa), NULL};
    char err[8];
    npl_cpu_matmul(&cc, pool, &w, &xt, &yt, scratch, err, sizeof err); /* cannot fail: vnpu_matmul_ggml_ok at plan */
}
