/* Flags shared by the bench-matmul variants (bench_matmul_flags.h). */
#include "bench_matmul_flags.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"

int bm_flag(const char *a, const char *v, bm_flags *f) {
    static const struct {
        const char *name;
        long long lo, hi;
        size_t off;
    } rows[] = {
        {"--m", 1, 1 << 16, offsetof(bm_flags, m)},       {"--k", 1, 1 << 16, offsetof(bm_flags, k)},
        {"--n", 1, 1 << 16, offsetof(bm_flags, n)},       {"--warmup", 0, 1000, offsetof(bm_flags, warmup)},
        {"--iters", 1, 10000, offsetof(bm_flags, iters)},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(a, rows[i].name))
            return cli_int("bench-matmul", a, v, rows[i].lo, rows[i].hi, (long long *)((char *)f + rows[i].off)) ? -1 : 1;
    return 0;
}

int bm_check_size(const bm_flags *f) {
    const long long lim = 1LL << 28;
    if (f->m * f->k <= lim && f->k * f->n <= lim && f->m * f->n <= lim) return 0;
    fprintf(stderr, "npullm bench-matmul: matrices over 2^28 elements are not supported\n");
    return -1;
}
