/* Data types and their traits. Type ids are GGML's so that GGUF tensor types
 * map one to one; block layouts are bit-exact with llama.cpp (see
 * src/kernels/quant_blocks.h, where every block struct is static_assert'ed). */
#ifndef NPL_DTYPE_H
#define NPL_DTYPE_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    NPL_TYPE_F32 = 0,
    NPL_TYPE_F16 = 1,
    NPL_TYPE_Q4_0 = 2,
    NPL_TYPE_Q4_1 = 3,
    NPL_TYPE_Q5_0 = 6,
    NPL_TYPE_Q5_1 = 7,
    NPL_TYPE_Q8_0 = 8,
    NPL_TYPE_Q8_1 = 9,
    NPL_TYPE_Q2_K = 10,
    NPL_TYPE_Q3_K = 11,
    NPL_TYPE_Q4_K = 12,
    NPL_TYPE_Q5_K = 13,
    NPL_TYPE_Q6_K = 14,
    NPL_TYPE_Q8_K = 15,
    NPL_TYPE_IQ4_NL = 20,
    NPL_TYPE_IQ4_XS = 23,
    NPL_TYPE_I8 = 24,
    NPL_TYPE_I16 = 25,
    NPL_TYPE_I32 = 26,
    NPL_TYPE_I64 = 27,
    NPL_TYPE_F64 = 28,
    NPL_TYPE_BF16 = 30,
    NPL_TYPE_MXFP4 = 39,
    NPL_TYPE_COUNT = 40 /* upper bound of the id space we index by */
} npl_type;

/* Convert n values of a row (n a multiple of block_size) to f32. */
typedef void (*npl_to_float_fn)(const void *src, float *dst, int64_t n);
/* Quantize n floats (n a multiple of block_size) into blocks. */
typedef void (*npl_from_float_fn)(const float *src, void *dst, int64_t n);
/* *s = dot(x, y) over n elements; x is of this type, y of vec_dot_type. */
typedef void (*npl_vec_dot_fn)(int n, float *s, const void *x, const void *y);

typedef struct {
    const char *name;        /* "q4_K", as llama.cpp names it */
    int block_size;          /* elements per block (1 for plain types) */
    size_t type_size;        /* bytes per block */
    int is_quantized;
    npl_to_float_fn to_float;     /* NULL if not convertible */
    npl_from_float_fn from_float; /* reference quantizer; NULL if none */
    npl_type vec_dot_type;        /* type the activation row is converted to */
} npl_type_traits;

/* NULL for an id that is not a supported type (unknown or removed). */
const npl_type_traits *npl_type_get(int type);
const char *npl_type_name(int type); /* "?" if unknown */

/* Bytes of a row of n elements; returns 1 if n is not a multiple of the block
 * size or the size overflows. Computed as (n / block) * bytes, never n * bytes. */
int npl_row_size(npl_type t, int64_t n, size_t *out);

/* f16 / bf16 scalar conversions (exact, round-to-nearest-even). */
float npl_f16_to_f32(uint16_t h);
uint16_t npl_f32_to_f16(float f);
float npl_bf16_to_f32(uint16_t h);
uint16_t npl_f32_to_bf16(float f);

#endif
