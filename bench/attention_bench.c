/* attention_bench: CPU time of the attention kernel alone, for the long-prompt
 * case (queries at the end of a long cache, all keys attended).
 *
 *   cc -O2 -Isrc -Iinclude bench/attention_bench.c build/libnpullm.a -lm -lpthread -o /tmp/attention_bench
 *   /tmp/attention_bench [WINDOW [N_CTX [ISA [NQ]]]]  (ISA: 0 generic, 1 AVX2, 2 AVX-512, 3 AMX)
 *
 * Gemma 3 270M's shapes: 4 query heads sharing 1 kv head of 256. NQ (256)
 * queries at positions N_CTX-NQ .. N_CTX-1, one thread, best of 3 runs;
 * prints the CPU milliseconds per query (REPS=N in the environment: best of
 * N). NQ 1 times a decode step. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/nn_kernels.h"
#include "kernels/x86/amx/attn_amx.h"

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const int hd = 256, nh = 4, nkv = 1, nq = argc > 4 ? atoi(argv[4]) : 256;
    const int window = argc > 1 ? atoi(argv[1]) : 0, nctx = argc > 2 ? atoi(argv[2]) : 8192;
    const npl_isa isa = argc > 3 ? (npl_isa)atoi(argv[3]) : NPL_ISA_AVX512;
    if (nq < 1 || (isa == NPL_ISA_AMX && npl_cpu_best_isa() < NPL_ISA_AMX)) {
        fprintf(stderr, "attention_bench: NQ must be >= 1; ISA 3 needs AMX\n");
        return 2;
    }
    if (nctx < nq || nctx > 1 << 20) {
        fprintf(stderr, "attention_bench: N_CTX %d not in [%d, 2^20]\n", nctx, nq);
        return 2;
    }
    int32_t *pos = malloc(sizeof(int32_t) * nq);
    float *q = malloc(sizeof(float) * (size_t)nq * nh * hd), *out = malloc(sizeof(float) * (size_t)nq * nh * hd);
    uint16_t *kc = malloc(2 * (size_t)nctx * nkv * hd), *vc = malloc(2 * (size_t)nctx * nkv * hd);
    if (!pos || !q || !out || !kc || !vc) return 1;
    srand(1);
    for (int i = 0; i < nq; i++) pos[i] = nctx - nq + i;
    for (size_t i = 0; i < (size_t)nq * nh * hd; i++) q[i] = (float)(rand() % 1000 - 500) * 1e-3f;
    for (size_t i = 0; i < (size_t)nctx * nkv * hd; i++) {
        kc[i] = (uint16_t)(0x3000 + rand() % 512); /* f16 values in [0.125, 0.25) */
        vc[i] = (uint16_t)(0x3000 + rand() % 512);
    }
    const npl_attn_args a = {.q = q, .q_stride = nh * hd, .kc = kc, .vc = vc, .out = out, .out_stride = nh * hd,
                             .pos = pos, .n_q = nq, .n_head = nh, .n_kv = nkv, .hd = hd, .scale = 0.0625f,
                             .window = window};
    const npl_nn_kernels *k = npl_nn_kernels_get(isa);
    void *scratch = isa == NPL_ISA_AMX ? malloc(npl_attn_amx_scratch(nctx, nkv, hd, 1)) : NULL;
    double best = 1e9;
    for (int r = 0; r < (getenv("REPS") ? atoi(getenv("REPS")) : 3); r++) {
        const double t0 = cpu_s();
        if (scratch)
            npl_attention_amx(&a, nctx, scratch, NULL);
        else
            k->attention(&a, 0, 1);
        const double t = cpu_s() - t0;
        best = t < best ? t : best;
    }
    printf("window %d, %d keys: %.1f ms CPU for %d queries (%.3f ms/query), out[0] %f\n", window, nctx, best * 1e3, nq,
           best * 1e3 / nq, out[0]);
    free(pos), free(q), free(out), free(kc), free(vc), free(scratch);
    return 0;
}
