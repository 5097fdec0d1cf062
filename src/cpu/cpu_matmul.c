/* The CPU backend's MatMul on tensors: y[n, m] = w[k, n] . x[k, m], f32
 * activations, run by the kernel library's driver (kernels/matmul.h). */
#include <stdio.h>

#ifndef NPL_WEIGHT_PREFETCH_KB
/* what the idle worker reads ahead of a decode matmul, over all threads'
 * shares: most of a layer matmul of a small model, within a core's L2.
 * Gemma 3 270M on AMD EPYC Zen 5 against a build with 0: tg512 +2.7 %
 * (bench/decode_ab.sh 16, ratio 0.97-1.16; 512 KiB and 2 MiB no better);
 * in the op profile q/k/v 16.9-18.1 -> 15.5-16.1 us, o 8.2-8.9 -> 7.7-8.1
 * us, attention 0.4 us slower (the worker's reads compete with it) */
#define NPL_WEIGHT_PREFETCH_KB 1024
#endif

#include "cpu/cpu_backend.h"
#include "kernels/matmul.h"
#include "kernels/wpack.h"

static npl_matmul_kernel_args args_of(const npl_cpu_ctx *cc, const npl_tensor *w, const npl_tensor *x, npl_tensor *y) {
    const int64_t k = w->shape.ne[0], n = w->shape.ne[1];
    return (npl_matmul_kernel_args){.wtype = w->type, .w = w->data, .wp = cc ? npl_wpack_find(cc->wpack, w->data) : NULL,
                             .x = x->data, .y = y ? y->data : NULL,
                             .k = k, .n = n, .m = x->shape.ne[1] * x->shape.ne[2] * x->shape.ne[3],
                             .ldx = k, .ldy = n, .no_gfni = cc ? cc->no_gfni : 0};
}

size_t npl_cpu_matmul_scratch(const npl_tensor *w, const npl_tensor *x) {
    const npl_matmul_kernel_args a = args_of(NULL, w, x, NULL);
    return npl_matmul_kernel_scratch(a.wtype, a.k, a.m);
}

int npl_cpu_matmul(const npl_cpu_ctx *cc, npl_pool *pool, const npl_tensor *w, const npl_tensor *x,
                   npl_tensor *y, void *scratch, char *err, size_t errlen) {
    if (x->type != NPL_TYPE_F32) {
        snprintf(err, errlen, "matmul: no kernel for %s weights", npl_type_name(w->type));
        return -1;
    }
    const npl_matmul_kernel_args a = args_of(cc, w, x, y);
    return npl_matmul_kernel(cc->isa, pool, &a, scratch, err, errlen);
}

int npl_cpu_matmul_group(const npl_cpu_ctx *cc, npl_pool *pool, npl_exec_ctx *c, int n) {
    npl_matmul_kernel_args a[NPL_MATMUL_GROUP_MAX];
    void *scratch[NPL_MATMUL_GROUP_MAX];
    if (n > NPL_MATMUL_GROUP_MAX) return 1;
    for (int i = 0; i < n; i++) {
        if (c[i].src[1].type != NPL_TYPE_F32) return 1;
        a[i] = args_of(cc, &c[i].src[0], &c[i].src[1], &c[i].dst);
        scratch[i] = c[i].scratch;
    }
    return npl_matmul_kernel_group(cc->isa, pool, a, n, scratch);
}

void npl_cpu_matmul_prefetch(const npl_cpu_ctx *cc, npl_pool *pool, const npl_exec_ctx *c, int n) {
    npl_matmul_kernel_args a[NPL_MATMUL_GROUP_MAX];
    if (n > NPL_MATMUL_GROUP_MAX) n = NPL_MATMUL_GROUP_MAX;
    for (int i = 0; i < n; i++) {
        if (c[i].src[1].type != NPL_TYPE_F32) return;
        a[i] = args_of(cc, &c[i].src[0], &c[i].src[1], NULL);
    }
    npl_matmul_kernel_prefetch(cc->isa, pool, a, n, (size_t)NPL_WEIGHT_PREFETCH_KB << 10);
}
