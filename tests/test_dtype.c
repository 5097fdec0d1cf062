/* dtype traits, row sizes, f16/bf16 conversions, and dequantization checked
 * against decoders written here independently from the block layout spec
 * (element by element, in double precision). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

/* ---- static facts ---- */

static void test_traits(void) {
    static const struct { int t; const char *name; int bs; size_t ts; int vdt; } want[] = {
        {NPL_TYPE_F32, "f32", 1, 4, NPL_TYPE_F32},        {NPL_TYPE_F16, "f16", 1, 2, NPL_TYPE_F16},
        {NPL_TYPE_BF16, "bf16", 1, 2, NPL_TYPE_BF16},     {NPL_TYPE_Q4_0, "q4_0", 32, 18, NPL_TYPE_Q8_0},
        {NPL_TYPE_Q4_1, "q4_1", 32, 20, NPL_TYPE_Q8_1},   {NPL_TYPE_Q5_0, "q5_0", 32, 22, NPL_TYPE_Q8_0},
        {NPL_TYPE_Q5_1, "q5_1", 32, 24, NPL_TYPE_Q8_1},   {NPL_TYPE_Q8_0, "q8_0", 32, 34, NPL_TYPE_Q8_0},
        {NPL_TYPE_Q8_1, "q8_1", 32, 36, NPL_TYPE_Q8_1},   {NPL_TYPE_Q2_K, "q2_K", 256, 84, NPL_TYPE_Q8_K},
        {NPL_TYPE_Q3_K, "q3_K", 256, 110, NPL_TYPE_Q8_K}, {NPL_TYPE_Q4_K, "q4_K", 256, 144, NPL_TYPE_Q8_K},
        {NPL_TYPE_Q5_K, "q5_K", 256, 176, NPL_TYPE_Q8_K}, {NPL_TYPE_Q6_K, "q6_K", 256, 210, NPL_TYPE_Q8_K},
        {NPL_TYPE_Q8_K, "q8_K", 256, 292, NPL_TYPE_Q8_K}, {NPL_TYPE_I8, "i8", 1, 1, NPL_TYPE_I8},
        {NPL_TYPE_I16, "i16", 1, 2, NPL_TYPE_I16},        {NPL_TYPE_I32, "i32", 1, 4, NPL_TYPE_I32},
        {NPL_TYPE_I64, "i64", 1, 8, NPL_TYPE_I64},        {NPL_TYPE_F64, "f64", 1, 8, NPL_TYPE_F64},
        {NPL_TYPE_IQ4_NL, "iq4_nl", 32, 18, NPL_TYPE_Q8_0}, {NPL_TYPE_IQ4_XS, "iq4_xs", 256, 136, NPL_TYPE_Q8_K},
        {NPL_TYPE_MXFP4, "mxfp4", 32, 17, NPL_TYPE_Q8_0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const npl_type_traits *t = npl_type_get(want[i].t);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK(strcmp(t->name, want[i].name) == 0);
        CHECK(strcmp(npl_type_name(want[i].t), want[i].name) == 0);
        CHECK_EQ_INT(t->block_size, want[i].bs);
        CHECK_EQ_INT(t->type_size, want[i].ts);
        CHECK_EQ_INT(t->vec_dot_type, want[i].vdt);
        CHECK_EQ_INT(t->is_quantized, want[i].bs > 1);
        const int is_int = want[i].t >= NPL_TYPE_I8 && want[i].t <= NPL_TYPE_I64;
        CHECK((t->to_float == NULL) == is_int);
        CHECK((t->from_float == NULL) == (is_int || want[i].t == NPL_TYPE_F64));
    }
    /* removed (4, 5: q4_2, q4_3), unknown, out of range */
    static const int bad[] = {-1, 4, 5, 16, 17, 18, 19, 21, 22, 29, 31, 35, 40, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(npl_type_get(bad[i]) == NULL);
        CHECK(strcmp(npl_type_name(bad[i]), "?") == 0);
    }
    CHECK_EQ_INT(sizeof(block_q8_K), 292);
}

static void test_row_size(void) {
    size_t r = 12345;
    CHECK(npl_row_size(NPL_TYPE_Q4_0, 64, &r) == 0 && r == 36);
    CHECK(npl_row_size(NPL_TYPE_Q4_K, 256, &r) == 0 && r == 144);
    CHECK(npl_row_size(NPL_TYPE_Q6_K, 2048, &r) == 0 && r == 8 * 210);
    CHECK(npl_row_size(NPL_TYPE_F32, 0, &r) == 0 && r == 0);
    CHECK(npl_row_size(NPL_TYPE_F16, 7, &r) == 0 && r == 14);
    r = 777;
    CHECK(npl_row_size(NPL_TYPE_Q4_0, 33, &r) == 1 && r == 777);  /* not a block multiple */
    CHECK(npl_row_size(NPL_TYPE_Q4_K, 640, &r) == 1 && r == 777);
    CHECK(npl_row_size(NPL_TYPE_F32, -1, &r) == 1);
    CHECK(npl_row_size((npl_type)4, 32, &r) == 1);                 /* removed type */
    CHECK(npl_row_size((npl_type)NPL_TYPE_COUNT, 32, &r) == 1);
    /* sizes near the top: n * type_size would overflow, n / block * size too */
    CHECK(npl_row_size(NPL_TYPE_F32, INT64_MAX, &r) == 1);
    CHECK(npl_row_size(NPL_TYPE_F32, (int64_t)1 << 62, &r) == 1);
    CHECK(npl_row_size(NPL_TYPE_F64, (int64_t)1 << 61, &r) == 1);
    /* 2^58 - 1 blocks of 34 bytes still fit in 64 bits */
    CHECK(npl_row_size(NPL_TYPE_Q8_0, INT64_MAX - INT64_MAX % 32, &r) == 0 &&
          r == (size_t)(INT64_MAX / 32) * 34);
    /* large but representable: computed per block, so no spurious overflow */
    CHECK(npl_row_size(NPL_TYPE_Q4_0, (int64_t)32 << 40, &r) == 0 && r == (size_t)18 << 40);
    CHECK(npl_row_size(NPL_TYPE_I8, INT64_MAX, &r) == 0 && r == (size_t)INT64_MAX);
}

/* ---- f16 / bf16 ---- */

static double f16_value(uint16_t h) { /* from the IEEE binary16 definition */
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void test_f16(void) {
    int mism = 0, nan_ok = 1;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = npl_f16_to_f32((uint16_t)h);
        double want = f16_value((uint16_t)h);
        if (isnan(want)) {
            nan_ok &= isnan(f) && isnan(npl_f16_to_f32(npl_f32_to_f16(f)));
            continue;
        }
        if ((double)f != want || !!signbit(f) != !!signbit(want)) mism++;
        if (npl_f32_to_f16(f) != h) mism++; /* every finite or infinite half round-trips */
    }
    CHECK_EQ_INT(mism, 0);
    CHECK(nan_ok);
    /* literal values, including the rounding boundaries */
    CHECK_EQ_INT(npl_f32_to_f16(1.0f), 0x3C00);
    CHECK_EQ_INT(npl_f32_to_f16(-2.0f), 0xC000);
    CHECK_EQ_INT(npl_f32_to_f16(-0.0f), 0x8000);
    CHECK_EQ_INT(npl_f32_to_f16(65504.0f), 0x7BFF);
    CHECK_EQ_INT(npl_f32_to_f16(65519.99f), 0x7BFF);
    CHECK_EQ_INT(npl_f32_to_f16(65520.0f), 0x7C00);   /* tie goes to even: inf */
    CHECK_EQ_INT(npl_f32_to_f16(1e10f), 0x7C00);
    CHECK_EQ_INT(npl_f32_to_f16(-INFINITY), 0xFC00);
    CHECK_EQ_INT(npl_f32_to_f16(0x1p-14f), 0x0400);   /* smallest normal */
    CHECK_EQ_INT(npl_f32_to_f16(0x1p-24f), 0x0001);   /* smallest subnormal */
    CHECK_EQ_INT(npl_f32_to_f16(0x1p-25f), 0x0000);   /* tie to even: zero */
    CHECK_EQ_INT(npl_f32_to_f16(0x1.8p-25f), 0x0001);
    CHECK_EQ_INT(npl_f32_to_f16(0x1.8p-24f), 0x0002); /* 1.5 ulp: tie to even 2 */
    CHECK_EQ_INT(npl_f32_to_f16(0x1.4p-24f), 0x0001);
    CHECK_EQ_INT(npl_f32_to_f16(1e-8f), 0x0000);
    CHECK_EQ_INT(npl_f32_to_f16(1.0f + 0x1p-11f), 0x3C00); /* tie to even */
    CHECK_EQ_INT(npl_f32_to_f16(1.0f + 0x3p-11f), 0x3C02);
    CHECK_EQ_INT(npl_f32_to_f16(0x1.ffcp-15f), 0x0400); /* subnormal rounding up to the normal */
    CHECK(isnan(npl_f16_to_f32(npl_f32_to_f16(NAN))));
    CHECK_EQ_INT(npl_f32_to_f16(NAN) & 0x7C00, 0x7C00);
    /* random floats: the result is a nearest half, ties to even mantissa */
    uint64_t s = 99;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f = ldexpf(rng_unit(&s), (int)(rng_next(&s) % 44) - 28);
        uint16_t h = npl_f32_to_f16(f);
        double v = f16_value(h), err = fabs(v - f);
        if (isinf(v)) { bad += fabs(f) < 65520.0; continue; }
        double up = fabs(f16_value((uint16_t)(h + 1)) - f), dn = h & 0x7FFF ? fabs(f16_value((uint16_t)(h - 1)) - f) : INFINITY;
        if (err > up || err > dn) bad++;
        if ((err == up || err == dn) && (h & 1)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_bf16(void) {
    int mism = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = npl_bf16_to_f32((uint16_t)h);
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (bits != h << 16) mism++;
        if (isnan(f)) mism += !isnan(npl_bf16_to_f32(npl_f32_to_bf16(f)));
        else if (npl_f32_to_bf16(f) != h) mism++;
    }
    CHECK_EQ_INT(mism, 0);
    CHECK_EQ_INT(npl_f32_to_bf16(1.0f), 0x3F80);
    CHECK_EQ_INT(npl_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);  /* tie to even */
    CHECK_EQ_INT(npl_f32_to_bf16(1.0f + 0x3p-8f), 0x3F82);
    CHECK_EQ_INT(npl_f32_to_bf16(1.0f + 0x1.8p-8f), 0x3F81);
    CHECK_EQ_INT(npl_f32_to_bf16(-INFINITY), 0xFF80);
    CHECK_EQ_INT(npl_f32_to_bf16(FLT_MAX), 0x7F80);          /* rounds up to inf */
    CHECK(isnan(npl_bf16_to_f32(npl_f32_to_bf16(NAN))));
    CHECK_EQ_INT(npl_f32_to_bf16(0x1p-130f), 0x0008);       /* subnormals kept */
    CHECK_NEAR(npl_bf16_to_f32(npl_f32_to_bf16(3.0e-39f)), 3.0e-39f, 0x1p-134);
}

/* ---- independent decoders: element e of one block, in double ---- */

static double h(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return f16_value(v);
}
static int nib(const uint8_t *qs, int e) { return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4; }
static int bit32(const uint8_t *qh, int e) { return (qh[e / 8] >> (e % 8)) & 1; }

static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static double decode(int type, const uint8_t *b, int e) {
    switch (type) {
    case NPL_TYPE_Q4_0: return h(b) * (nib(b + 2, e) - 8);
    case NPL_TYPE_Q4_1: return h(b) * nib(b + 4, e) + h(b + 2);
    case NPL_TYPE_Q5_0: return h(b) * ((nib(b + 6, e) | bit32(b + 2, e) << 4) - 16);
    case NPL_TYPE_Q5_1: return h(b) * (nib(b + 8, e) | bit32(b + 4, e) << 4) + h(b + 2);
    case NPL_TYPE_Q8_0: return h(b) * (int8_t)b[2 + e];
    case NPL_TYPE_Q8_1: return h(b) * (int8_t)b[4 + e];
    case NPL_TYPE_Q2_K: { /* scales[16] qs[64] d dmin */
        int half = e / 128, k = e % 128 / 32, l = e % 32, sc = b[e / 16];
        int q = (b[16 + 32 * half + l] >> (2 * k)) & 3;
        return h(b + 80) * (sc & 15) * q - h(b + 82) * (sc >> 4);
    }
    case NPL_TYPE_Q3_K: { /* hmask[32] qs[64] scales[12] d */
        int half = e / 128, k = e % 128 / 32, l = e % 32, j = e / 16;
        const uint8_t *s = b + 96;
        int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4, hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        int q = ((b[32 + 32 * half + l] >> (2 * k)) & 3) - (((b[l] >> (4 * half + k)) & 1) ? 0 : 4);
        return h(b + 108) * ((lo | hi << 4) - 32) * q;
    }
    case NPL_TYPE_Q4_K:
    case NPL_TYPE_Q5_K: { /* d dmin scales[12] (qh[32]) qs[128] */
        int g = e / 64, r = e % 64, sc, m;
        k4_scale_min(b + 4, 2 * g + (r >= 32), &sc, &m);
        const uint8_t *qs = b + (type == NPL_TYPE_Q5_K ? 48 : 16);
        int q = r < 32 ? qs[32 * g + r] & 15 : qs[32 * g + r - 32] >> 4;
        if (type == NPL_TYPE_Q5_K) q |= ((b[16 + r % 32] >> (2 * g + (r >= 32))) & 1) << 4;
        return h(b) * sc * q - h(b + 2) * m;
    }
    case NPL_TYPE_Q6_K: { /* ql[128] qh[64] scales[16] d */
        int half = e / 128, k = e % 128 / 32, l = e % 32;
        int byte = b[64 * half + (k & 1) * 32 + l];
        int lo = k < 2 ? byte & 15 : byte >> 4;
        int hi = (b[128 + 32 * half + l] >> (2 * k)) & 3;
        return h(b + 208) * (int8_t)b[192 + e / 16] * ((lo | hi << 4) - 32);
    }
    case NPL_TYPE_Q8_K: {
        float d;
        memcpy(&d, b, 4);
        return (double)d * (int8_t)b[4 + e];
    }
    }
    return NAN;
}

/* Random bytes with sane (finite, moderate) scale fields. */
static void random_block(int type, uint8_t *b, size_t size, uint64_t *s) {
    for (size_t i = 0; i < size; i++) b[i] = (uint8_t)rng_next(s);
    uint16_t d1 = npl_f32_to_f16(rng_unit(s)), d2 = npl_f32_to_f16(rng_unit(s));
    switch (type) {
    case NPL_TYPE_Q4_1: case NPL_TYPE_Q5_1: case NPL_TYPE_Q8_1: case NPL_TYPE_Q4_K: case NPL_TYPE_Q5_K:
        memcpy(b + 2, &d2, 2); /* fallthrough */
    case NPL_TYPE_Q4_0: case NPL_TYPE_Q5_0: case NPL_TYPE_Q8_0:
        memcpy(b, &d1, 2);
        break;
    case NPL_TYPE_Q2_K: memcpy(b + 80, &d1, 2); memcpy(b + 82, &d2, 2); break;
    case NPL_TYPE_Q3_K: memcpy(b + 108, &d1, 2); break;
    case NPL_TYPE_Q6_K: memcpy(b + 208, &d1, 2); break;
    case NPL_TYPE_Q8_K: { float d = rng_unit(s); memcpy(b, &d, 4); break; }
    }
}

static const int quant_types[] = {NPL_TYPE_Q4_0, NPL_TYPE_Q4_1, NPL_TYPE_Q5_0, NPL_TYPE_Q5_1,
                                  NPL_TYPE_Q8_0, NPL_TYPE_Q8_1, NPL_TYPE_Q2_K, NPL_TYPE_Q3_K,
                                  NPL_TYPE_Q4_K, NPL_TYPE_Q5_K, NPL_TYPE_Q6_K, NPL_TYPE_Q8_K};
#define N_QUANT (int)(sizeof quant_types / sizeof quant_types[0])

static void test_dequant_random(void) {
    uint64_t s = 7;
    uint8_t buf[3 * 292];
    float out[3 * 256];
    for (int ti = 0; ti < N_QUANT; ti++) {
        const int type = quant_types[ti];
        const npl_type_traits *t = npl_type_get(type);
        int bad = 0;
        for (int rep = 0; rep < 50; rep++) {
            for (int k = 0; k < 3; k++) random_block(type, buf + k * t->type_size, t->type_size, &s);
            t->to_float(buf, out, 3 * t->block_size);
            for (int k = 0; k < 3; k++)
                for (int e = 0; e < t->block_size; e++) {
                    double want = decode(type, buf + k * t->type_size, e);
                    double got = out[k * t->block_size + e];
                    if (!(fabs(got - want) <= 1e-6 * fabs(want) + 1e-7)) bad++;
                }
        }
        if (bad) fprintf(stderr, "dequant %s: %d mismatches\n", t->name, bad);
        CHECK_EQ_INT(bad, 0);
    }
}

/* Blocks built by hand with values worked out on paper. */
static void test_dequant_literals(void) {
    float y[256];
    { /* q4_0: d = 0.5; qs[0] = 0x1F: x0 = (15-8)/2, x16 = (1-8)/2 */
        block_q4_0 b = {0};
        b.d = 0x3800;
        b.qs[0] = 0x1F;
        b.qs[5] = 0x88;
        npl_type_get(NPL_TYPE_Q4_0)->to_float(&b, y, 32);
        CHECK(y[0] == 3.5f && y[16] == -3.5f && y[5] == 0.0f && y[21] == 0.0f && y[1] == -4.0f);
    }
    { /* q4_1: d = 2, m = -1: x = 2q - 1 */
        block_q4_1 b = {0};
        b.d = 0x4000;
        b.m = 0xBC00;
        b.qs[3] = 0xA3;
        npl_type_get(NPL_TYPE_Q4_1)->to_float(&b, y, 32);
        CHECK(y[3] == 5.0f && y[19] == 19.0f && y[0] == -1.0f);
    }
    { /* q5_0: d = 1; element 0: nibble 3, fifth bit set -> 19 - 16 = 3;
       * element 16: nibble 0, bit clear -> -16; element 17: bit 17 set -> 0 */
        block_q5_0 b = {0};
        b.d = 0x3C00;
        b.qs[0] = 0x03;
        b.qh[0] = 0x01;
        b.qh[2] = 0x02;
        npl_type_get(NPL_TYPE_Q5_0)->to_float(&b, y, 32);
        CHECK(y[0] == 3.0f && y[16] == -16.0f && y[17] == 0.0f && y[1] == -16.0f);
    }
    { /* q5_1: d = 1, m = 0.5; element 31: nibble 15 | bit 31 -> 31.5 */
        block_q5_1 b = {0};
        b.d = 0x3C00;
        b.m = 0x3800;
        b.qs[15] = 0xF0;
        b.qh[3] = 0x80;
        npl_type_get(NPL_TYPE_Q5_1)->to_float(&b, y, 32);
        CHECK(y[31] == 31.5f && y[15] == 0.5f);
    }
    { /* q8_0: d = 2; qs[3] = -5 -> -10 */
        block_q8_0 b = {0};
        b.d = 0x4000;
        b.qs[3] = -5;
        b.qs[31] = 127;
        npl_type_get(NPL_TYPE_Q8_0)->to_float(&b, y, 32);
        CHECK(y[3] == -10.0f && y[31] == 254.0f && y[0] == 0.0f);
    }
    { /* q2_K: d = 1, dmin = 1, sub-block 0 scale 1 min 2; qs[0] = 0x03 -> 1*3 - 2 = 1;
       * element 32 is bits 2-3 of qs[0] (0) in sub-block 2 (scale 0, min 0) */
        block_q2_K b = {0};
        b.d = 0x3C00;
        b.dmin = 0x3C00;
        b.scales[0] = 0x21;
        b.qs[0] = 0x03;
        b.scales[15] = 0x53; /* last sub-block: scale 3, min 5 */
        b.qs[63] = 0x80;     /* element 255: bits 6-7 of qs[63] = 2 */
        npl_type_get(NPL_TYPE_Q2_K)->to_float(&b, y, 256);
        CHECK(y[0] == 1.0f && y[1] == -2.0f && y[32] == 0.0f && y[255] == 1.0f && y[254] == -5.0f);
    }
    { /* q3_K: d = 1; scale 0 stored as 34 (4 low bits in scales[0], 2 high in
       * scales[8]) -> 2; qs[0] = 3 with hmask bit -> +3, without -> 3 - 4 */
        block_q3_K b = {0};
        b.d = 0x3C00;
        b.scales[0] = 34 & 15;
        b.scales[8] = 34 >> 4;
        b.qs[0] = 0x03;
        b.qs[1] = 0x03;
        b.hmask[0] = 0x01;
        npl_type_get(NPL_TYPE_Q3_K)->to_float(&b, y, 256);
        CHECK(y[0] == 6.0f && y[1] == -2.0f && y[2] == -8.0f);
        /* every other sub-block has raw scale 0 -> -32; element 16: q = 0 - 4 */
        CHECK(y[16] == 128.0f);
    }
    { /* q4_K: d = 1, dmin = 0.5; sub-block 0: scale 3, min 2; sub-block 4:
       * scale 1 | 1<<4 = 17 (high bits from scales[0] bits 6-7), min 2 */
        block_q4_K b = {0};
        b.d = 0x3C00;
        b.dmin = 0x3800;
        b.scales[0] = 3 | (1 << 6);
        b.scales[4] = 2;
        b.scales[8] = 0x21;
        b.qs[0] = 0x05;
        b.qs[64] = 0x02;
        npl_type_get(NPL_TYPE_Q4_K)->to_float(&b, y, 256);
        CHECK(y[0] == 14.0f && y[1] == -1.0f && y[128] == 33.0f && y[129] == -1.0f);
    }
    { /* q5_K: as q4_K plus element 0's fifth bit (qh[0] bit 0) -> q = 21 */
        block_q5_K b = {0};
        b.d = 0x3C00;
        b.dmin = 0x3800;
        b.scales[0] = 3;
        b.scales[4] = 2;
        b.qs[0] = 0x05;
        b.qh[0] = 0x01;
        b.qh[1] = 0x02; /* element 33: sub-block 1 (scale 0, min 0) */
        npl_type_get(NPL_TYPE_Q5_K)->to_float(&b, y, 256);
        CHECK(y[0] == 62.0f && y[33] == 0.0f);
    }
    { /* q6_K: d = 0.25, scale -2; element 0: (0xA | 2 << 4) - 32 = 10 -> -5;
       * element 96 (high nibble of ql[32], qh bits 6-7) */
        block_q6_K b = {0};
        b.d = 0x3400;
        b.scales[0] = -2;
        b.scales[6] = 4;
        b.ql[0] = 0x0A;
        b.qh[0] = 0x02 | 0xC0;
        b.ql[32] = 0x10;
        npl_type_get(NPL_TYPE_Q6_K)->to_float(&b, y, 256);
        CHECK(y[0] == -5.0f && y[1] == 16.0f && y[96] == 1.0f * (49 - 32));
    }
}

/* ---- quantize -> dequantize ---- */

static void test_roundtrip_error(void) {
    static const struct { int t; double rms; } lim[] = {
        {NPL_TYPE_F16, 4e-4}, {NPL_TYPE_BF16, 3e-3}, {NPL_TYPE_Q4_0, 0.11}, {NPL_TYPE_Q4_1, 0.09},
        {NPL_TYPE_Q5_0, 0.055}, {NPL_TYPE_Q5_1, 0.045}, {NPL_TYPE_Q8_0, 0.007}, {NPL_TYPE_Q8_1, 0.007},
        {NPL_TYPE_Q2_K, 0.3}, {NPL_TYPE_Q3_K, 0.16}, {NPL_TYPE_Q4_K, 0.075}, {NPL_TYPE_Q5_K, 0.04},
        {NPL_TYPE_Q6_K, 0.021}, {NPL_TYPE_Q8_K, 0.013}, {NPL_TYPE_F32, 0.0},
    };
    enum { N = 4096 };
    static float x[N], z[N];
    static uint8_t q[N * 4];
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) x[i] = rng_unit(&s) * (i % 64 == 3 ? 4.0f : 1.0f); /* a few outliers */
    for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++) {
        const npl_type_traits *t = npl_type_get(lim[k].t);
        t->from_float(x, q, N);
        t->to_float(q, z, N);
        double e2 = 0, x2 = 0, worst = 0;
        for (int i = 0; i < N; i++) {
            e2 += (x[i] - z[i]) * (double)(x[i] - z[i]);
            x2 += (double)x[i] * x[i];
            worst = fmax(worst, fabs(x[i] - z[i]));
        }
        double rms = sqrt(e2 / x2);
        if (!(rms <= lim[k].rms)) fprintf(stderr, "%s: rms %g\n", t->name, rms);
        CHECK(rms <= lim[k].rms);
        CHECK(worst < 4.0); /* nothing wildly off */
    }
    /* 8-bit absmax types: every element within half a step (amax / 127) of
     * its value, plus what rounding the scale to f16 costs (127 * 2^-11) */
    static const int q8[] = {NPL_TYPE_Q8_0, NPL_TYPE_Q8_1, NPL_TYPE_Q8_K};
    for (int k = 0; k < 3; k++) {
        const npl_type_traits *t = npl_type_get(q8[k]);
        t->from_float(x, q, N);
        t->to_float(q, z, N);
        int bad = 0;
        for (int b = 0; b < N / t->block_size; b++) {
            float amax = 0;
            for (int i = 0; i < t->block_size; i++) amax = fmaxf(amax, fabsf(x[b * t->block_size + i]));
            for (int i = 0; i < t->block_size; i++) {
                int j = b * t->block_size + i;
                const double slack = q8[k] == NPL_TYPE_Q8_K ? 1e-5 : 127 * 0x1p-11;
                bad += !(fabs(x[j] - z[j]) <= amax / 127 * (0.5 + slack + 1e-6));
            }
        }
        CHECK_EQ_INT(bad, 0);
    }
    /* all-zero input: zero scale, zero output, no NaN */
    memset(x, 0, sizeof x);
    for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++) {
        const npl_type_traits *t = npl_type_get(lim[k].t);
        t->from_float(x, q, 512);
        t->to_float(q, z, 512);
        int nz = 0;
        for (int i = 0; i < 512; i++) nz += z[i] != 0.0f;
        CHECK_EQ_INT(nz, 0);
    }
}

/* llama.cpp's rounding, exactly: roundf (half away from zero) for q8_0,
 * nearest_int (half to even) for q8_K, truncation after +8.5 for q4_0. */
static void test_quantizer_rounding(void) {
    float x[256] = {127.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f};
    block_q8_0 b8[8];
    npl_type_get(NPL_TYPE_Q8_0)->from_float(x, b8, 32);
    CHECK(b8[0].d == 0x3C00);
    CHECK(b8[0].qs[0] == 127 && b8[0].qs[1] == 1 && b8[0].qs[2] == -1 && b8[0].qs[3] == 2 &&
          b8[0].qs[4] == 3 && b8[0].qs[5] == -3 && b8[0].qs[6] == 0);
    block_q8_1 b81;
    npl_type_get(NPL_TYPE_Q8_1)->from_float(x, &b81, 32);
    CHECK(b81.s == npl_f32_to_f16(127 + 1 - 1 + 2 + 3 - 3)); /* s = d * sum(qs) */

    float xk[256] = {-127.0f, 0.5f, 1.5f, 2.5f, -0.5f};
    block_q8_K bk;
    npl_type_get(NPL_TYPE_Q8_K)->from_float(xk, &bk, 256);
    CHECK(bk.d == 1.0f);
    CHECK(bk.qs[0] == -127 && bk.qs[1] == 0 && bk.qs[2] == 2 && bk.qs[3] == 2 && bk.qs[4] == 0);
    CHECK(bk.bsums[0] == -123 && bk.bsums[1] == 0);

    float x4[32] = {-8.0f, 7.4f, 6.6f, -0.6f};
    block_q4_0 b4;
    npl_type_get(NPL_TYPE_Q4_0)->from_float(x4, &b4, 32);
    CHECK(b4.d == 0x3C00); /* d = max / -8 = 1 */
    CHECK((b4.qs[0] & 15) == 0 && (b4.qs[1] & 15) == 15 && (b4.qs[2] & 15) == 15 && (b4.qs[3] & 15) == 7);
}

int main(void) {
    test_traits();
    test_row_size();
    test_f16();
    test_bf16();
    test_dequant_random();
    test_dequant_literals();
    test_roundtrip_error();
    test_quantizer_rounding();
    TEST_MAIN_END();
}
