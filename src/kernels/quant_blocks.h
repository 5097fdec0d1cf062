/* On-disk quantization blocks, bit-exact with llama.cpp's ggml-common.h.
 * Half-precision fields are raw IEEE binary16 bits (uint16_t); every struct
 * is checked against the byte size GGUF files rely on. */
#ifndef NPL_QUANT_BLOCKS_H
#define NPL_QUANT_BLOCKS_H
#include <stdint.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256
#define K_SCALE_SIZE 12
#define QK4_NL 32
#define QK_MXFP4 32

typedef uint16_t npl_half;

typedef struct {
    npl_half d;           /* scale */
    uint8_t qs[QK4_0 / 2]; /* nibbles: low = x[j], high = x[j+16] */
} block_q4_0;
_Static_assert(sizeof(block_q4_0) == 2 + QK4_0 / 2, "block_q4_0 size");

typedef struct {
    npl_half d, m;        /* scale, min */
    uint8_t qs[QK4_1 / 2];
} block_q4_1;
_Static_assert(sizeof(block_q4_1) == 4 + QK4_1 / 2, "block_q4_1 size");

typedef struct {
    npl_half d;
    uint8_t qh[4];        /* 5th bit of each of the 32 quants, little-endian u32 */
    uint8_t qs[QK5_0 / 2];
} block_q5_0;
_Static_assert(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "block_q5_0 size");

typedef struct {
    npl_half d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;
_Static_assert(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "block_q5_1 size");

typedef struct {
    npl_half d;
    int8_t qs[QK8_0];
} block_q8_0;
_Static_assert(sizeof(block_q8_0) == 2 + QK8_0, "block_q8_0 size");

typedef struct {
    npl_half d;           /* scale */
    npl_half s;           /* d * sum(qs) */
    int8_t qs[QK8_1];
} block_q8_1;
_Static_assert(sizeof(block_q8_1) == 4 + QK8_1, "block_q8_1 size");

/* K-quants: super-blocks of 256 with 16 or 8 sub-blocks. */
typedef struct {
    uint8_t scales[QK_K / 16]; /* low nibble scale, high nibble min */
    uint8_t qs[QK_K / 4];      /* 2-bit quants */
    npl_half d, dmin;
} block_q2_K;
_Static_assert(sizeof(block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "block_q2_K size");

typedef struct {
    uint8_t hmask[QK_K / 8];   /* high bit */
    uint8_t qs[QK_K / 4];      /* low 2 bits */
    uint8_t scales[12];        /* 16 6-bit scales */
    npl_half d;
} block_q3_K;
_Static_assert(sizeof(block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "block_q3_K size");

typedef struct {
    npl_half d, dmin;
    uint8_t scales[K_SCALE_SIZE]; /* 8 6-bit scales and 8 6-bit mins */
    uint8_t qs[QK_K / 2];
} block_q4_K;
_Static_assert(sizeof(block_q4_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2, "block_q4_K size");

typedef struct {
    npl_half d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;
_Static_assert(sizeof(block_q5_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2 + QK_K / 8, "block_q5_K size");

typedef struct {
    uint8_t ql[QK_K / 2];      /* low 4 bits */
    uint8_t qh[QK_K / 4];      /* high 2 bits */
    int8_t scales[QK_K / 16];
    npl_half d;
} block_q6_K;
_Static_assert(sizeof(block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "block_q6_K size");

/* Activation type for K-quant dot products; never stored in files. */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];  /* sums of groups of 16 quants */
} block_q8_K;
_Static_assert(sizeof(block_q8_K) == 4 + QK_K + QK_K / 16 * 2, "block_q8_K size");

/* Non-linear 4-bit quants: each nibble indexes npl_kvalues_iq4nl. */
typedef struct {
    npl_half d;
    uint8_t qs[QK4_NL / 2]; /* nibbles: low = x[j], high = x[j+16] */
} block_iq4_nl;
_Static_assert(sizeof(block_iq4_nl) == 2 + QK4_NL / 2, "block_iq4_nl size");

typedef struct {
    npl_half d;
    uint16_t scales_h;          /* high 2 bits of the 8 6-bit sub-block scales */
    uint8_t scales_l[QK_K / 64]; /* low 4 bits, two per byte */
    uint8_t qs[QK_K / 2];       /* 8 sub-blocks of 32, nibbles as in iq4_nl */
} block_iq4_xs;
_Static_assert(sizeof(block_iq4_xs) == 2 + 2 + QK_K / 64 + QK_K / 2, "block_iq4_xs size");

/* llama.cpp's kvalues_iq4nl: the 16 levels of iq4_nl / iq4_xs. */
static const int8_t npl_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

/* MXFP4 (OCP microscaling): an E8M0 exponent and 32 E2M1 codes. */
typedef struct {
    uint8_t e;                /* E8M0: scale 2^(e - 127) */
    uint8_t qs[QK_MXFP4 / 2]; /* nibbles: low = x[j], high = x[j+16] */
} block_mxfp4;
_Static_assert(sizeof(block_mxfp4) == 1 + QK_MXFP4 / 2, "block_mxfp4 size");

/* llama.cpp's kvalues_mxfp4: the E2M1 values doubled (so the scale is halved). */
static const int8_t npl_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Half the E8M0 scale, 2^(e - 128), as llama.cpp's ggml_e8m0_to_fp32_half
 * (e < 2 as subnormals; e = 255 gives 2^127, not NaN). */
static inline float npl_e8m0_to_f32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

/* Sub-block scale ib (0..7) of an iq4_xs block, minus its offset 32. */
static inline int npl_iq4_xs_scale(const block_iq4_xs *b, int ib) {
    return (((b->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((b->scales_h >> 2 * ib) & 3) << 4)) - 32;
}

#endif
