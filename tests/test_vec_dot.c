/* Every vec_dot kernel of every ISA table this CPU can run (generic always)
 * against a double-precision dot of the dequantized rows, and the ISA
 * kernels against the generic ones. Also activation quantizers: identical
 * bytes on every ISA. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dot_ref.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

static const int types[] = {NPL_TYPE_F32,  NPL_TYPE_F16,  NPL_TYPE_BF16, NPL_TYPE_Q4_0, NPL_TYPE_Q4_1,
                            NPL_TYPE_Q5_0, NPL_TYPE_Q5_1, NPL_TYPE_Q8_0, NPL_TYPE_Q8_1, NPL_TYPE_Q2_K,
                            NPL_TYPE_Q3_K, NPL_TYPE_Q4_K, NPL_TYPE_Q5_K, NPL_TYPE_Q6_K, NPL_TYPE_Q8_K,
                            NPL_TYPE_IQ4_NL, NPL_TYPE_IQ4_XS, NPL_TYPE_MXFP4};
#define N_TYPES (int)(sizeof types / sizeof types[0])
/* 640 is Gemma 3 270M's width (not a K-quant multiple); the odd sizes only
 * apply to the plain float types and exercise their tails */
static const int sizes[] = {256, 512, 2048, 640, 32, 96, 224, 7, 77, 1000};

enum { MAXN = 2048 };

typedef struct {
    float x[MAXN], y[MAXN], xd[MAXN], yd[MAXN];
    uint8_t xq[MAXN * 4], yq[MAXN * 4], yq2[MAXN * 4];
} bufs;

/* Weights a bit heavier-tailed than activations, with some sign skew so
 * the dot is not all cancellation. */
static void fill(bufs *b, int n, uint64_t *s) {
    for (int i = 0; i < n; i++) {
        b->x[i] = rng_unit(s) * (rng_next(s) % 16 == 0 ? 3.0f : 1.0f);
        b->y[i] = rng_unit(s) + 0.25f * b->x[i];
    }
}

/* AVX2's q4_0 / q5_0 / q8_0 / q4_1 take plain C's steps (an exact int32 total per
 * block, then acc + total * dw * dx in block order): the same bits */
static int same_bits_as_generic(const npl_kernels *k, int type) {
#if defined(__x86_64__) || defined(__i386__)
    /* q4_1: every x86 family's q4_1 vec_dot is AVX2's */
    return (k->isa == NPL_ISA_AVX2 && (type == NPL_TYPE_Q4_0 || type == NPL_TYPE_Q5_0 || type == NPL_TYPE_Q8_0)) ||
           (k->isa >= NPL_ISA_AVX2 && type == NPL_TYPE_Q4_1);
#else
    (void)k, (void)type;
    return 0;
#endif
}

static void run_isa(const npl_kernels *k, const npl_kernels *gen, bufs *b) {
    uint64_t s = 2024;
    for (int ti = 0; ti < N_TYPES; ti++) {
        const int type = types[ti];
        const npl_type_traits *t = npl_type_get(type);
        const npl_type_traits *vt = npl_type_get(t->vec_dot_type);
        CHECK(k->vec_dot[type] != NULL);
        CHECK(k->quantize_row[t->vec_dot_type] != NULL);
        if (!k->vec_dot[type] || !k->quantize_row[t->vec_dot_type]) continue;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int n = sizes[si];
            if (n % t->block_size || n % vt->block_size) continue;
            for (int rep = 0; rep < 4; rep++) {
                fill(b, n, &s);
                t->from_float(b->x, b->xq, n);
                k->quantize_row[t->vec_dot_type](b->y, b->yq, n);
                /* activation quantization is bit-identical on every ISA */
                gen->quantize_row[t->vec_dot_type](b->y, b->yq2, n);
                size_t ybytes;
                npl_row_size(t->vec_dot_type, n, &ybytes);
                CHECK(memcmp(b->yq, b->yq2, ybytes) == 0);

                t->to_float(b->xq, b->xd, n);
                vt->to_float(b->yq, b->yd, n);
                double ref = 0, mag = 0;
                for (int i = 0; i < n; i++) {
                    ref += (double)b->xd[i] * b->yd[i];
                    mag += fabs((double)b->xd[i] * b->yd[i]);
                }
                ref += dot_ref_q8_1_s_rounding(type, b->xq, b->yq, n);
                float got = NAN, g = NAN;
                k->vec_dot[type](n, &got, b->xq, b->yq);
                gen->vec_dot[type](n, &g, b->xq, b->yq);
                /* integer block sums are exact; what is left is f32
                 * accumulation and scale products */
                const double tol = 2e-6 * mag + 1e-30;
                if (!(fabs(got - ref) <= tol))
                    fprintf(stderr, "%s %s n=%d: %.9g vs ref %.9g (mag %g)\n", npl_isa_name(k->isa), t->name, n,
                            got, ref, mag);
                CHECK(fabs(got - ref) <= tol);
                CHECK(fabs(got - g) <= 1e-5 * fabs(g) + 1e-6 * mag);
                if (same_bits_as_generic(k, type)) CHECK(memcmp(&got, &g, sizeof got) == 0);
            }
        }
        /* zero rows: zero scales, exact zero, no NaN */
        memset(b->x, 0, sizeof b->x);
        t->from_float(b->x, b->xq, 512);
        k->quantize_row[t->vec_dot_type](b->x, b->yq, 512);
        float z = NAN;
        k->vec_dot[type](512, &z, b->xq, b->yq);
        CHECK(z == 0.0f);
    }
}

/* Extreme but valid quants: every weight at its most negative or positive
 * code and activations at +-127, where int16 pair sums come closest to
 * saturating. */
static void run_extremes(const npl_kernels *k, const npl_kernels *gen, bufs *b) {
    for (int ti = 0; ti < N_TYPES; ti++) {
        const int type = types[ti];
        const npl_type_traits *t = npl_type_get(type);
        const npl_type_traits *vt = npl_type_get(t->vec_dot_type);
        const int n = 512;
        for (int sign = -1; sign <= 1; sign += 2) {
            for (int i = 0; i < n; i++) {
                b->x[i] = (float)sign * (i % 7 == 0 ? -1.0f : 1.0f);
                b->y[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (float)sign;
            }
            t->from_float(b->x, b->xq, n);
            k->quantize_row[t->vec_dot_type](b->y, b->yq, n);
            t->to_float(b->xq, b->xd, n);
            vt->to_float(b->yq, b->yd, n);
            double ref = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                ref += (double)b->xd[i] * b->yd[i];
                mag += fabs((double)b->xd[i] * b->yd[i]);
            }
            ref += dot_ref_q8_1_s_rounding(type, b->xq, b->yq, n);
            float got = NAN, g = NAN;
            k->vec_dot[type](n, &got, b->xq, b->yq);
            gen->vec_dot[type](n, &g, b->xq, b->yq);
            CHECK_NEAR(got, ref, 2e-6 * mag);
            CHECK_NEAR(got, g, 2e-6 * mag);
            if (same_bits_as_generic(k, type)) CHECK(memcmp(&got, &g, sizeof got) == 0);
        }
    }
}

/* Activation quantizers on inputs built to hit rounding ties, equal
 * magnitudes of both signs, zero and extreme scales: every ISA must write
 * the generic (reference) bytes. */
static void run_quantize_edges(const npl_kernels *k, const npl_kernels *gen, bufs *b) {
    static const int dst[] = {NPL_TYPE_Q8_0, NPL_TYPE_Q8_1, NPL_TYPE_Q8_K, NPL_TYPE_F16, NPL_TYPE_BF16, NPL_TYPE_F32};
    const int n = 1024;
    uint64_t s = 5;
    for (int pattern = 0; pattern < 10; pattern++) {
        for (int i = 0; i < n; i++) {
            switch (pattern) {
            case 0: b->y[i] = (float)((int)(rng_next(&s) % 509) - 254) * 0.5f; break; /* x.5 ties */
            case 1: b->y[i] = i % 256 == 0 ? -127.0f : (float)(i % 255) - 127.0f + 0.5f; break;
            case 2: b->y[i] = (i % 32 == 5 ? 3.0f : i % 32 == 9 ? -3.0f : 1.0f) * (i % 64 < 32 ? 1 : -1); break;
            case 3: b->y[i] = i % 32 < 16 ? 0.0f : 1e-40f * (float)(i % 7); break;            /* zero, subnormal */
            case 4: b->y[i] = rng_unit(&s) * 1e30f; break;
            case 5: b->y[i] = rng_unit(&s) * 1e-30f; break;
            case 6: b->y[i] = i % 3 ? 0.0f : -0.0f; break;
            case 7: b->y[i] = i % 97 == 0 ? NAN : rng_unit(&s); break;           /* NaN is skipped */
            case 8: b->y[i] = i % 200 == 0 ? (i % 400 ? -INFINITY : INFINITY) : rng_unit(&s); break;
            default: b->y[i] = rng_unit(&s) * (float)(1 << (i % 16)); break;
            }
        }
        if (pattern == 2) b->y[300] = -3.0f, b->y[400] = 3.0f; /* q8_K: first of equal magnitudes wins */
        for (size_t d = 0; d < sizeof dst / sizeof dst[0]; d++) {
            size_t bytes;
            npl_row_size((npl_type)dst[d], n, &bytes);
            memset(b->yq, 0xAA, bytes);
            memset(b->yq2, 0x55, bytes);
            k->quantize_row[dst[d]](b->y, b->yq, n);
            gen->quantize_row[dst[d]](b->y, b->yq2, n);
            if (memcmp(b->yq, b->yq2, bytes) != 0)
                fprintf(stderr, "%s quantize to %s differs on pattern %d\n", npl_isa_name(k->isa),
                        npl_type_name(dst[d]), pattern);
            CHECK(memcmp(b->yq, b->yq2, bytes) == 0);
        }
    }
}

/* Four-row kernels: each output equals vec_dot of its row up to f32
 * rounding, with strided activation rows and outputs. */
static void run_dot4(const npl_kernels *k, npl_isa isa, bufs *b) {
    uint64_t s = 77;
    for (int ti = 0; ti < N_TYPES; ti++) {
        const int type = types[ti];
        const npl_vec_dot4_fn d4 = npl_vec_dot4_get(isa, (npl_type)type);
        if (!d4) continue;
        const npl_type_traits *t = npl_type_get(type);
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int n = sizes[si];
            if (n % t->block_size || n % npl_type_get(t->vec_dot_type)->block_size) continue;
            size_t yrow;
            npl_row_size(t->vec_dot_type, n, &yrow);
            const size_t by = yrow + 40; /* rows need not be adjacent */
            uint8_t *ys = malloc(4 * by);
            float out[12];
            fill(b, n, &s);
            t->from_float(b->x, b->xq, n);
            t->to_float(b->xq, b->xd, n);
            for (int j = 0; j < 4; j++) {
                for (int i = 0; i < n; i++) b->y[i] = rng_unit(&s);
                k->quantize_row[t->vec_dot_type](b->y, ys + j * by, n);
            }
            d4(n, out, 3, b->xq, ys, by);
            for (int j = 0; j < 4; j++) {
                float one = NAN;
                k->vec_dot[type](n, &one, b->xq, ys + j * by);
                npl_type_get(t->vec_dot_type)->to_float(ys + j * by, b->yd, n);
                double ref = 0, mag = 0;
                for (int i = 0; i < n; i++) {
                    ref += (double)b->xd[i] * b->yd[i];
                    mag += fabs((double)b->xd[i] * b->yd[i]);
                }
                ref += dot_ref_q8_1_s_rounding(type, b->xq, ys + j * by, n);
                if (!(fabs(out[3 * j] - one) <= 1e-6 * mag))
                    fprintf(stderr, "%s dot4 %s n=%d row %d: %.9g vs %.9g\n", npl_isa_name(isa), t->name, n, j,
                            out[3 * j], one);
                CHECK(fabs(out[3 * j] - one) <= 1e-6 * mag);
                CHECK(fabs(out[3 * j] - ref) <= 2e-6 * mag);
#if defined(__aarch64__)
                CHECK(out[3 * j] == one); /* aarch64's dot4 is vec_dot's arithmetic per row: prefill = decode */
#endif
            }
            free(ys);
        }
    }
}

int main(void) {
    bufs *b = calloc(1, sizeof *b);
    if (!b) return 1;
    const npl_isa best = npl_cpu_best_isa();
    printf("best isa: %s\n", npl_isa_name(best));
    const npl_kernels *gen = npl_kernels_get(NPL_ISA_GENERIC);
    CHECK(gen && gen->isa == NPL_ISA_GENERIC);
    for (int isa = NPL_ISA_GENERIC; isa <= NPL_ISA_AMX; isa++) {
        const npl_kernels *k = npl_kernels_get((npl_isa)isa);
        CHECK(k != NULL);
        /* never above what the CPU has */
        CHECK((int)k->isa == (isa <= (int)best ? isa : (int)best));
        if (isa > (int)best) continue;
        printf("testing %s\n", npl_isa_name(k->isa));
        run_isa(k, gen, b);
        run_extremes(k, gen, b);
        run_dot4(k, (npl_isa)isa, b);
        run_quantize_edges(k, gen, b);
    }
    CHECK(npl_vec_dot4_get(NPL_ISA_GENERIC, NPL_TYPE_Q4_K) == NULL); /* generic: call vec_dot */
    CHECK(npl_vec_dot4_get(NPL_ISA_AVX512, (npl_type)-1) == NULL);
    CHECK(npl_kernels_get((npl_isa)-3)->isa == NPL_ISA_GENERIC);
#if defined(__aarch64__)
    CHECK(strcmp(npl_isa_name(NPL_ISA_DOTPROD), "dotprod") == 0);
#else
    CHECK(strcmp(npl_isa_name(NPL_ISA_AVX512), "avx512") == 0);
#endif
    free(b);
    TEST_MAIN_END();
}
