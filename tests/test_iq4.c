/* iq4_nl, iq4_xs and mxfp4 against llama.cpp and gguf-py, and their dot
 * kernels on every kernel family this CPU has.
 *   - tests/data/quant/iq4.gguf (tests/tools/make_iq4_fixture.py) holds
 *     inputs, llama.cpp's quantization of them (quantize_iq4_nl / _xs /
 *     quantize_mxfp4 as llama-quantize writes files, and
 *     quantize_row_iq4_nl_ref; gguf-py's mxfp4 quantizer agrees), gguf-py's
 *     dequantization, and random blocks with gguf-py's and llama.cpp's
 *     dequantization: our quantizers must write the same bytes and our
 *     dequantizers the same floats, bit for bit.
 *   - dequantization equals a double-precision decode written here from the
 *     block layout (to f32 rounding).
 *   - every family's vec_dot (generic, AVX2, AVX-512, AMX uses the AVX-512
 *     table; on aarch64 generic, NEON, dotprod, i8mm, run under qemu by
 *     scripts/test_aarch64.sh) against a double dot of the dequantized rows, on the fixture's
 *     blocks and on random rows; the largest error relative to sum |x_i y_i|
 *     is printed per family and type. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/gguf.h"
#include "kernels/dtype.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"

enum { N = 4096 };
#if defined(__aarch64__)
#define FIRST_DOT4_ISA NPL_ISA_NEON
#define LAST_OWN_TABLE_ISA NPL_ISA_I8MM
#else
#define FIRST_DOT4_ISA NPL_ISA_AVX512
#define LAST_OWN_TABLE_ISA NPL_ISA_AMX
#endif

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

static const npl_gguf_tensor *need(const npl_gguf *g, const char *type, const char *what, int want_type) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", type, what);
    const npl_gguf_tensor *t = npl_gguf_find_tensor(g, name);
    if (!t) fprintf(stderr, "fixture: %s missing\n", name);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(t->type, want_type);
        CHECK_EQ_INT(t->ne[0] * t->ne[1], N);
    }
    return t;
}

/* Element i of a row of type t decoded in double from the layout spec. */
static double decode_ref(int type, const void *row, int i) {
    if (type == NPL_TYPE_MXFP4) { /* E2M1 level (doubled) times 2^(e - 128) */
        const block_mxfp4 *b = (const block_mxfp4 *)row + i / 32;
        const int j = i % 32, code = j < 16 ? b->qs[j] & 0xF : b->qs[j - 16] >> 4;
        static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
        return (code & 8 ? -1 : 1) * e2m1[code & 7] * ldexp(1.0, b->e - 127);
    }
    if (type == NPL_TYPE_IQ4_NL) {
        const block_iq4_nl *b = (const block_iq4_nl *)row + i / 32;
        const int j = i % 32, code = j < 16 ? b->qs[j] & 0xF : b->qs[j - 16] >> 4;
        return (double)npl_f16_to_f32(b->d) * npl_kvalues_iq4nl[code];
    }
    const block_iq4_xs *b = (const block_iq4_xs *)row + i / 256;
    const int ib = (i % 256) / 32, j = i % 32;
    const int lo = (b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF, hi = (b->scales_h >> (2 * ib)) & 3;
    const uint8_t *qs = b->qs + 16 * ib;
    const int code = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
    return (double)npl_f16_to_f32(b->d) * ((lo | hi << 4) - 32) * npl_kvalues_iq4nl[code];
}

static void check_decode(int type, const void *row, const float *got, const char *what) {
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const double r = decode_ref(type, row, i);
        if (!(fabs(got[i] - r) <= fabs(r) * 0x1p-24) && !(type == NPL_TYPE_MXFP4 && got[i] == r)) bad++;
    }
    if (bad) fprintf(stderr, "%s %s: %d values differ from the double decode\n", npl_type_name(type), what, bad);
    CHECK_EQ_INT(bad, 0);
}

static int bits_equal(const float *a, const float *b, int n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

static void check_fixture(const npl_gguf *g, int type) {
    const npl_type_traits *t = npl_type_get(type);
    const char *nm = t->name;
    const npl_gguf_tensor *src = need(g, nm, "src", NPL_TYPE_F32), *q = need(g, nm, "q", type),
                          *deq = need(g, nm, "deq", NPL_TYPE_F32), *rnd = need(g, nm, "rand", type),
                          *rdeq = need(g, nm, "rand_deq", NPL_TYPE_F32),
                          *rdeq2 = need(g, nm, "rand_deq_ggml", NPL_TYPE_F32);
    if (!src || !q || !deq || !rnd || !rdeq || !rdeq2) return;
    size_t bytes;
    npl_row_size(type, N, &bytes);
    CHECK_EQ_INT(q->size, bytes);
    uint8_t *mine = malloc(bytes);
    float *f = malloc(sizeof(float) * N);
    /* quantization: llama.cpp's bytes */
    t->from_float(src->data, mine, N);
    int diff = 0;
    for (size_t i = 0; i < bytes; i++) diff += mine[i] != ((const uint8_t *)q->data)[i];
    printf("%s: quantized %d values, %d of %zu bytes differ from llama.cpp's\n", nm, N, diff, bytes);
    CHECK_EQ_INT(diff, 0);
    if (type == NPL_TYPE_IQ4_NL) {
        const npl_gguf_tensor *qr = need(g, nm, "q_ref", type);
        if (qr) {
            npl_quantize_row_iq4_nl_ref(src->data, mine, N);
            CHECK(memcmp(mine, qr->data, bytes) == 0);
            CHECK(memcmp(qr->data, q->data, bytes) != 0); /* the trials do change blocks */
        }
    }
    /* dequantization: gguf-py's floats, bit for bit, and the double decode */
    t->to_float(q->data, f, N);
    CHECK(bits_equal(f, deq->data, N));
    check_decode(type, q->data, f, "quantized");
    t->to_float(rnd->data, f, N);
    CHECK(bits_equal(f, rdeq->data, N));
    CHECK(bits_equal(f, rdeq2->data, N));
    check_decode(type, rnd->data, f, "random blocks");
    /* the error of a 4-bit code (bit-exact with llama.cpp, so its quality;
     * measured 0.135 for iq4_nl, 0.102 for iq4_xs, 0.135 for mxfp4 (power-of-2
     * scales, no search) on these heavy-tailed inputs) */
    t->to_float(q->data, f, N);
    double e2 = 0, x2 = 0;
    for (int i = 0; i < N; i++) {
        const double x = ((const float *)src->data)[i];
        e2 += (f[i] - x) * (f[i] - x);
        x2 += x * x;
    }
    printf("%s: relative rms quantization error %.4f\n", nm, sqrt(e2 / x2));
    CHECK(sqrt(e2 / x2) < (type == NPL_TYPE_IQ4_NL ? 0.14 : type == NPL_TYPE_IQ4_XS ? 0.11 : 0.15));
    free(mine);
    free(f);
}

typedef struct {
    double max_rel, max_vs_generic;
    int n;
} dot_stats;

/* One dot of weight row xq (type) with activation row y (f32, quantized
 * here to the type's partner) on kernel table k, judged against the double
 * dot of both dequantized rows. */
static void one_dot(const npl_kernels *k, const npl_kernels *gen, int type, const void *xq, const float *y, int n,
                    dot_stats *st) {
    const npl_type_traits *t = npl_type_get(type), *vt = npl_type_get(t->vec_dot_type);
    size_t yb;
    npl_row_size(t->vec_dot_type, n, &yb);
    uint8_t *yq = malloc(yb), *yq2 = malloc(yb);
    float *xd = malloc(sizeof(float) * (size_t)n), *yd = malloc(sizeof(float) * (size_t)n);
    k->quantize_row[t->vec_dot_type](y, yq, n);
    gen->quantize_row[t->vec_dot_type](y, yq2, n);
    CHECK(memcmp(yq, yq2, yb) == 0);
    t->to_float(xq, xd, n);
    vt->to_float(yq, yd, n);
    double ref = 0, mag = 0;
    for (int i = 0; i < n; i++) {
        ref += (double)xd[i] * yd[i];
        mag += fabs((double)xd[i] * yd[i]);
    }
    float got = NAN, g = NAN;
    k->vec_dot[type](n, &got, xq, yq);
    gen->vec_dot[type](n, &g, xq, yq);
    const double rel = mag > 0 ? fabs(got - ref) / mag : fabs(got - ref);
    if (!(rel <= 2e-6))
        fprintf(stderr, "%s %s n=%d: %.9g vs double %.9g (sum |xy| %g)\n", npl_isa_name(k->isa), t->name, n, got, ref,
                mag);
    CHECK(rel <= 2e-6);
    CHECK(isfinite(got));
    if (rel > st->max_rel || !(rel == rel)) st->max_rel = rel;
    const double vg = mag > 0 ? fabs(got - g) / mag : fabs(got - g);
    if (vg > st->max_vs_generic) st->max_vs_generic = vg;
    st->n++;
    free(yq);
    free(yq2);
    free(xd);
    free(yd);
}

static void check_dots(const npl_gguf *g, const npl_kernels *k, const npl_kernels *gen, int type) {
    const npl_type_traits *t = npl_type_get(type);
    dot_stats st = {0, 0, 0};
    uint64_t s = 99 + (uint64_t)type;
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    size_t bytes;
    npl_row_size(type, N, &bytes);
    uint8_t *xq = malloc(bytes);
    /* the fixture's llama.cpp-quantized and random blocks, whole and in pieces */
    const char *rows[] = {"q", "rand"};
    for (int r = 0; r < 2; r++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", t->name, rows[r]);
        const npl_gguf_tensor *w = npl_gguf_find_tensor(g, name);
        CHECK(w != NULL);
        if (!w) continue;
        static const int lens[] = {N, 256, 512, 768, 1024, 2048, 3840};
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int rep = 0; rep < 3; rep++) {
                for (int i = 0; i < lens[li]; i++) y[i] = rng_unit(&s) * (rng_next(&s) % 8 == 0 ? 4.0f : 1.0f);
                one_dot(k, gen, type, w->data, y, lens[li], &st);
            }
    }
    /* random rows quantized here, at odd block counts (the kernels' tails) */
    for (int n = t->block_size; n <= N; n += t->block_size * (n < 8 * t->block_size ? 1 : 5)) {
        for (int i = 0; i < n; i++) {
            x[i] = rng_unit(&s) * (rng_next(&s) % 16 == 0 ? 3.0f : 1.0f);
            y[i] = rng_unit(&s) + 0.25f * x[i];
        }
        t->from_float(x, xq, n);
        one_dot(k, gen, type, xq, y, n, &st);
    }
    /* extremes: every code at both ends, activations at +-127 */
    for (int sign = -1; sign <= 1; sign += 2) {
        for (int i = 0; i < 1024; i++) {
            x[i] = (float)sign * (i % 7 == 0 ? -1.0f : 1.0f);
            y[i] = (float)sign * (i % 3 == 0 ? -1.0f : 1.0f);
        }
        t->from_float(x, xq, 1024);
        one_dot(k, gen, type, xq, y, 1024, &st);
    }
    /* zero rows: exactly zero */
    memset(x, 0, sizeof(float) * N);
    t->from_float(x, xq, 512);
    size_t yb;
    npl_row_size(t->vec_dot_type, 512, &yb);
    uint8_t *yq = malloc(yb);
    k->quantize_row[t->vec_dot_type](x, yq, 512);
    float z = NAN;
    k->vec_dot[type](512, &z, xq, yq);
    CHECK(z == 0.0f);
    printf("%-7s %-6s %3d dots: max |dot - double| / sum|x*y| = %.3g, vs generic %.3g\n", npl_isa_name(k->isa),
           t->name, st.n, st.max_rel, st.max_vs_generic);
    free(yq);
    free(x);
    free(y);
    free(xq);
}

static void check_traits(void) {
    const npl_type_traits *nl = npl_type_get(NPL_TYPE_IQ4_NL), *xs = npl_type_get(NPL_TYPE_IQ4_XS);
    CHECK(nl && xs);
    if (!nl || !xs) return;
    CHECK(strcmp(nl->name, "iq4_nl") == 0 && strcmp(xs->name, "iq4_xs") == 0);
    CHECK_EQ_INT(NPL_TYPE_IQ4_NL, 20); /* GGML's ids */
    CHECK_EQ_INT(NPL_TYPE_IQ4_XS, 23);
    CHECK_EQ_INT(nl->block_size, 32);
    CHECK_EQ_INT(nl->type_size, 18);
    CHECK_EQ_INT(xs->block_size, 256);
    CHECK_EQ_INT(xs->type_size, 136);
    CHECK_EQ_INT(nl->vec_dot_type, NPL_TYPE_Q8_0);
    CHECK_EQ_INT(xs->vec_dot_type, NPL_TYPE_Q8_K);
    size_t r;
    CHECK(npl_row_size(NPL_TYPE_IQ4_XS, 128, &r) != 0); /* not a multiple of 256 */
    CHECK(npl_row_size(NPL_TYPE_IQ4_XS, 4096, &r) == 0 && r == 16 * 136);
    const npl_type_traits *mx = npl_type_get(NPL_TYPE_MXFP4);
    CHECK(mx && strcmp(mx->name, "mxfp4") == 0);
    CHECK_EQ_INT(NPL_TYPE_MXFP4, 39);
    if (mx) {
        CHECK_EQ_INT(mx->block_size, 32);
        CHECK_EQ_INT(mx->type_size, 17);
        CHECK_EQ_INT(mx->vec_dot_type, NPL_TYPE_Q8_0);
    }
    /* E8M0 halves: 2^(e - 128), subnormal below e = 2, finite at 255 */
    CHECK(npl_e8m0_to_f32_half(127) == 0.5f && npl_e8m0_to_f32_half(128) == 1.0f);
    CHECK(npl_e8m0_to_f32_half(0) == 0x1p-128f && npl_e8m0_to_f32_half(1) == 0x1p-127f);
    CHECK(npl_e8m0_to_f32_half(255) == 0x1p127f);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *data = getenv("NPL_TEST_DATA");
    CHECK(data != NULL);
    if (!data) TEST_MAIN_END();
    check_traits();
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/quant/iq4.gguf", data);
    npl_gguf *g = npl_gguf_open(path, NULL, err, sizeof err);
    if (!g) fprintf(stderr, "%s\n", err);
    CHECK(g != NULL);
    if (!g) TEST_MAIN_END();
    check_fixture(g, NPL_TYPE_IQ4_NL);
    check_fixture(g, NPL_TYPE_IQ4_XS);
    check_fixture(g, NPL_TYPE_MXFP4);
    const npl_kernels *gen = npl_kernels_get(NPL_ISA_GENERIC);
    for (int isa = NPL_ISA_GENERIC; isa <= (int)npl_cpu_best_isa(); isa++) {
        const npl_kernels *k = npl_kernels_get((npl_isa)isa);
        CHECK_EQ_INT(k->isa, isa);
        CHECK(k->vec_dot[NPL_TYPE_IQ4_NL] != NULL && k->vec_dot[NPL_TYPE_IQ4_XS] != NULL &&
              k->vec_dot[NPL_TYPE_MXFP4] != NULL);
        /* AVX-512 (and AMX) and every aarch64 family decode iq4_nl / mxfp4
         * once for four activation rows; test_vec_dot checks those kernels
         * against vec_dot */
        CHECK((npl_vec_dot4_get((npl_isa)isa, NPL_TYPE_IQ4_NL) != NULL) == (isa >= FIRST_DOT4_ISA));
        CHECK((npl_vec_dot4_get((npl_isa)isa, NPL_TYPE_MXFP4) != NULL) == (isa >= FIRST_DOT4_ISA));
#if defined(__aarch64__) /* x86 runs iq4_xs through vec_dot row by row */
        CHECK((npl_vec_dot4_get((npl_isa)isa, NPL_TYPE_IQ4_XS) != NULL) == (isa >= FIRST_DOT4_ISA));
#endif
        if (isa > NPL_ISA_GENERIC && isa < LAST_OWN_TABLE_ISA) { /* AMX shares the AVX-512 table, i8mm dotprod's */
            CHECK(k->vec_dot[NPL_TYPE_IQ4_NL] != gen->vec_dot[NPL_TYPE_IQ4_NL]);
            CHECK(k->vec_dot[NPL_TYPE_IQ4_XS] != gen->vec_dot[NPL_TYPE_IQ4_XS]);
            CHECK(k->vec_dot[NPL_TYPE_MXFP4] != gen->vec_dot[NPL_TYPE_MXFP4]);
        }
        check_dots(g, k, gen, NPL_TYPE_IQ4_NL);
        check_dots(g, k, gen, NPL_TYPE_IQ4_XS);
        check_dots(g, k, gen, NPL_TYPE_MXFP4);
    }
    npl_gguf_close(g);
    TEST_MAIN_END();
}
