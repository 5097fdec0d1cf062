/* vnpu matmul over GGML block weights (VNPU_PK_GGML): the weights are the
 * model file's blocks, bit for bit, and the activations are quantized to the
 * block type's dot partner (Q8_0 for Q4_0..Q8_0, Q8_K for the k-quants)
 * exactly as the CPU path does it. The kernels are the host's quantized
 * dot / GEMM kernels of the family's ISA (generic C, AVX2, AVX-512, AMX):
 * re-rounding q4_K / q6_K weights to an int8 grid, as the I8 packs did, cost
 * more agreement with the CPU path than f16 activations do.
 *
 * Prefill-sized steps with a GEMM for the type take the fused path
 * (vnpu_ggml_fused): one pool job per MatMul step. Every share first
 * converts and quantizes activation rows it claims (from the step's input
 * type, no f32 copy of the tensor) and packs them for the GEMM; once all
 * rows are packed (a share waits only for rows other running shares have
 * claimed), shares claim 16 to 64 weight rows at a time, run the GEMM into a
 * per-share buffer and finish those output columns right away: bias, the
 * gating of a gate + up pack (both parts' same rows in one unit), the
 * conversion to the output type. A step on the same input as the step
 * before it (q, k and v) finds the activations packed already. The numbers
 * are the CPU path's: the same
 * quantizer, packer and GEMM kernel, and the elementwise epilogue the
 * separate passes applied. */
#include <stdatomic.h>
#include <string.h>

#include "accel/vnpu/vnpu.h"
#include "accel/vnpu/vnpu_exec.h"
#include "kernels/gemm.h"
#include "kernels/matmul.h"

static size_t a64(size_t v) { return (v + 63) & ~(size_t)63; }

size_t vnpu_matmul_ggml_scratch(const vnpu_pack *p, int64_t m) {
    return npl_matmul_kernel_scratch((npl_type)p->gtype, p->k, m);
}

int vnpu_matmul_ggml_ok(int gtype) {
    const npl_type_traits *tr = npl_type_get(gtype);
    const npl_kernels *k = npl_kernels_get(NPL_ISA_GENERIC);
    return tr && k->vec_dot[gtype] && tr->vec_dot_type != NPL_TYPE_F32 && k->quantize_row[tr->vec_dot_type];
}

void vnpu_matmul_ggml(int isa, npl_pool *pool, const vnpu_pack *p, const float *x, int64_t m, float *y,
                      int64_t y_stride, uint8_t *scratch) {
    char err[8];
    for (uint32_t part = 0; part < p->n_parts; part++) {
        /* each part straight into its columns of the strided output */
        const npl_matmul_kernel_args a = {.wtype = (npl_type)p->gtype, .w = part ? p->wraw1 : p->wraw, .x = x,
                                   .y = y + p->col0[part], .k = p->k, .n = p->n[part], .m = m,
                                   .ldx = p->k, .ldy = y_stride};
        npl_matmul_kernel((npl_isa)isa, pool, &a, scratch, err, sizeof err); /* cannot fail: vnpu_matmul_ggml_ok at plan */
    }
}

/* ---- the fused path ---- */

enum { UNIT_MAX = 64, QROWS = 4 };

/* output columns per unit: wide units make the per-row epilogue calls few,
 * narrow ones keep small matrices spread over the threads */
static int64_t unit_of(int64_t n) { return n >= 8 * 64 ? 64 : n >= 8 * 32 ? 32 : 16; }

static const npl_gemm_kernels *fused_gemm(int isa, const vnpu_pack *p, int64_t m) {
    if (m < 16 || p->k > NPL_GEMM_MAX_K) return NULL;
    return npl_gemm_get((npl_isa)isa, (npl_type)p->gtype); /* the CPU path's GEMM: the same numbers */
}

int vnpu_ggml_fused_ok(int isa, const vnpu_pack *p, int64_t m) { return fused_gemm(isa, p, m) != NULL; }

int vnpu_ggml_same_x(int isa, const vnpu_pack *a, const vnpu_pack *b, int64_t m) {
    const npl_gemm_kernels *ga = fused_gemm(isa, a, m), *gb = fused_gemm(isa, b, m);
    return ga && gb && ga->pack == gb->pack && a->k == b->k &&
           npl_type_get(a->gtype)->vec_dot_type == npl_type_get(b->gtype)->vec_dot_type;
}

/* per share: one row of f32 input, its quantized form, the unit's output */
static size_t share_bytes(const vnpu_pack *p, int64_t m) {
    size_t row = 0;
    npl_row_size(npl_type_get(p->gtype)->vec_dot_type, p->k, &row);
    return a64((size_t)p->k * 4) + a64(row) + a64((size_t)m * UNIT_MAX * p->n_parts * 4) + a64((size_t)UNIT_MAX * 4);
}

size_t vnpu_ggml_fused_scratch(const vnpu_pack *p, int64_t m, int n_shares) {
    return a64(npl_gemm_x_size(m, p->k)) + (size_t)n_shares * share_bytes(p, m);
}

typedef struct {
    const vnpu_pack *p;
    const vnpu_ggml_io *io;
    const npl_gemm_kernels *gemm;
    npl_from_float_fn quant;
    npl_gemm_x xp;
    int64_t m, nout, unit, n_units;
    size_t w_row;
    uint8_t *share_mem;
    size_t share_size;
    atomic_int_fast64_t qnext, qdone, next;
} fused_job;

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void fused_task(void *arg, int ith, int nth) {
    fused_job *j = arg;
    const vnpu_pack *p = j->p;
    const vnpu_ggml_io *io = j->io;
    const int64_t k = p->k, U = j->unit, W = U * (int64_t)p->n_parts;
    (void)nth;
    uint8_t *mem = j->share_mem + (size_t)ith * j->share_size;
    float *xf = (float *)mem;
    void *xq = mem + a64((size_t)k * 4);
    size_t row = 0;
    npl_row_size(npl_type_get(p->gtype)->vec_dot_type, k, &row);
    float *tb = (float *)((uint8_t *)xq + a64(row));
    float *fin = (float *)((uint8_t *)tb + a64((size_t)j->m * (size_t)W * 4));
    /* 1. activations: convert, quantize, pack */
    for (int64_t r0; (r0 = atomic_fetch_add(&j->qnext, QROWS)) < j->m;) {
        const int64_t r1 = r0 + QROWS < j->m ? r0 + QROWS : j->m;
        for (int64_t r = r0; r < r1; r++) {
            const float *src = xf;
            if (io->xt->dtype == NPL_ACCEL_DT_F32) src = (const float *)io->x + r * k;
            else vnpu_cvt_to_f32(io->family, io->xt, io->x, r * k, k, xf);
            j->quant(src, xq, k);
            j->gemm->pack(&j->xp, r, xq);
        }
        atomic_fetch_add(&j->qdone, r1 - r0);
    }
    while (atomic_load(&j->qdone) < j->m) relax();
    /* 2. 16 output columns (of each part) per unit */
    const vnpu_tensor *ot = io->ot;
    const int out_f32 = ot->dtype == NPL_ACCEL_DT_F32;
    for (int64_t u; (u = atomic_fetch_add(&j->next, 1)) < j->n_units;) {
        const int64_t c0 = u * U, nc = c0 + U <= j->nout ? U : j->nout - c0;
        for (uint32_t part = 0; part < p->n_parts; part++) {
            const uint8_t *w = (part ? p->wraw1 : p->wraw) + (size_t)c0 * j->w_row;
            j->gemm->rows(w, j->w_row, 0, nc, &j->xp, tb + part * U, W);
        }
        for (int64_t r = 0; r < j->m; r++) {
            const float *t = tb + r * W;
            float *o = out_f32 ? (float *)io->out + r * j->nout + c0 : fin;
            if (p->n_parts == 2) {
                if (io->geglu) io->nn->geglu(t, t + U, o, (int)nc);
                else io->nn->swiglu(t, t + U, o, (int)nc);
            } else if (io->bias) {
                for (int64_t c = 0; c < nc; c++) o[c] = t[c] + io->bias[c0 + c];
            } else {
                memcpy(o, t, (size_t)nc * 4);
            }
            if (!out_f32) vnpu_cvt_from_f32(io->family, ot, o, r * j->nout + c0, nc, io->out);
        }
    }
}

void vnpu_ggml_fused(int isa, npl_pool *pool, const vnpu_pack *p, const vnpu_ggml_io *io, int64_t m,
                     uint8_t *scratch) {
    fused_job j = {.p = p, .io = io, .gemm = fused_gemm(isa, p, m), .m = m, .nout = p->n[0]};
    const npl_type vdt = npl_type_get(p->gtype)->vec_dot_type;
    j.quant = npl_kernels_get((npl_isa)isa)->quantize_row[vdt];
    npl_row_size((npl_type)p->gtype, p->k, &j.w_row);
    npl_gemm_x_init(&j.xp, scratch, m, p->k);
    j.share_mem = scratch + a64(npl_gemm_x_size(m, p->k));
    j.share_size = share_bytes(p, m);
    j.unit = unit_of(j.nout);
    j.n_units = (j.nout + j.unit - 1) / j.unit;
    atomic_init(&j.qnext, io->x_ready ? m : 0);
    atomic_init(&j.qdone, io->x_ready ? m : 0);
    atomic_init(&j.next, 0);
    npl_pool_run(pool, fused_task, &j);
}
