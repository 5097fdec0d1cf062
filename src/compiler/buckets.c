/* Decode KV-length buckets (compile --buckets): AR-1 graphs whose attention
 * reads only the first L cache rows, so a decode step early in a long
 * context does not pay for all of it (MNN #4489). The runtime picks the
 * smallest bucket that holds the history (plugin_accel.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int npl_compile_buckets(const char *list, int n_ctx, int *out, char *err, size_t errlen) {
    int n = 0;
    if (!list) { /* the default: powers of two from 512 below the context */
        for (long b = 512; b < n_ctx && n < NPL_MAX_BUCKETS; b *= 2) out[n++] = (int)b;
        return n;
    }
    if (!*list || !strcmp(list, "none")) return 0;
    int v[64], nv = 0;
    for (const char *p = list;;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || *p == '+' || *p == '-' || *p == ' ') {
            snprintf(err, errlen, "--buckets '%.80s': not a comma list of lengths (e.g. 512,1024,2048)", list);
            return -1;
        }
        if (x < 1 || x > n_ctx) {
            snprintf(err, errlen, "--buckets: %ld is not a KV length in [1, %d] (the context)", x, n_ctx);
            return -1;
        }
        if (nv == 64) {
            snprintf(err, errlen, "--buckets: more than 64 lengths");
            return -1;
        }
        v[nv++] = (int)x;
        if (!*end) break;
        p = end + 1;
    }
    qsort(v, (size_t)nv, sizeof v[0], cmp_int);
    for (int i = 0; i < nv; i++) {
        if (v[i] == n_ctx || (n && out[n - 1] == v[i])) continue; /* n_ctx: the AR-1 graph over every row */
        if (n == NPL_MAX_BUCKETS) {
            snprintf(err, errlen, "--buckets: more than %d lengths below the context of %d", NPL_MAX_BUCKETS, n_ctx);
            return -1;
        }
        out[n++] = v[i];
    }
    return n;
}
