/* GGUF reader and writer (versions 2 and 3).
 *
 * The reader mmaps the file read-only and parses the header, metadata and
 * tensor infos in place. Every count, length, offset, dimension and type is
 * checked against the bytes remaining and against overflow before it is used
 * or allocated. Errors are one line, "FILE: FIELD: what was wrong". */
#ifndef NPL_GGUF_H
#define NPL_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    NPL_GGUF_UINT8 = 0, NPL_GGUF_INT8 = 1, NPL_GGUF_UINT16 = 2, NPL_GGUF_INT16 = 3,
    NPL_GGUF_UINT32 = 4, NPL_GGUF_INT32 = 5, NPL_GGUF_FLOAT32 = 6, NPL_GGUF_BOOL = 7,
    NPL_GGUF_STRING = 8, NPL_GGUF_ARRAY = 9, NPL_GGUF_UINT64 = 10, NPL_GGUF_INT64 = 11,
    NPL_GGUF_FLOAT64 = 12, NPL_GGUF_VTYPE_COUNT
} npl_gguf_vtype;

#define NPL_GGUF_MAX_DIMS 4
#define NPL_GGUF_DEFAULT_ALIGNMENT 32

/* Caps on what a file may ask for; 0 fields mean the default. */
typedef struct {
    uint64_t max_string_len;   /* default 1 MiB (chat templates are long) */
    uint64_t max_array_len;    /* default 16M elements */
    uint64_t max_kv;           /* default 1M key/value pairs */
    uint64_t max_tensors;      /* default 1M tensors */
} npl_gguf_limits;

/* A string inside the mapped file: NOT NUL-terminated. */
typedef struct { const char *ptr; uint64_t len; } npl_gguf_str;

typedef struct {
    const char *name;        /* NUL-terminated (owned by the npl_gguf) */
    int type;                /* npl_type id, validated against the traits table */
    int n_dims;              /* 1..4 */
    int64_t ne[NPL_GGUF_MAX_DIMS]; /* ne[0] is the innermost (row) dimension; unused dims = 1 */
    uint64_t offset;         /* from the start of the data section */
    size_t size;             /* bytes, checked to lie inside the file */
    const void *data;        /* points into the read-only mapping */
} npl_gguf_tensor;

typedef struct npl_gguf npl_gguf;

/* Open and validate. On failure returns NULL and writes one line to err. */
npl_gguf *npl_gguf_open(const char *path, const npl_gguf_limits *limits, char *err, size_t errlen);
/* Same checks over a caller-owned buffer (fuzzers, tests); not copied. */
npl_gguf *npl_gguf_open_memory(const void *buf, size_t size, const char *name,
                               const npl_gguf_limits *limits, char *err, size_t errlen);
void npl_gguf_close(npl_gguf *g);
/* The caps applied when limits is NULL (or for each field left 0). */
npl_gguf_limits npl_gguf_default_limits(void);
/* "u32", "string", "array", ...; "?" for an unknown type. */
const char *npl_gguf_vtype_name(npl_gguf_vtype t);

const char *npl_gguf_path(const npl_gguf *g);
uint32_t npl_gguf_version(const npl_gguf *g);
size_t npl_gguf_alignment(const npl_gguf *g);
size_t npl_gguf_file_size(const npl_gguf *g);
const void *npl_gguf_base(const npl_gguf *g);   /* start of the mapping */
size_t npl_gguf_data_offset(const npl_gguf *g); /* file offset of the data section */

/* ---- metadata ---- */
int64_t npl_gguf_n_kv(const npl_gguf *g);
int64_t npl_gguf_find_key(const npl_gguf *g, const char *key); /* -1 if absent */
npl_gguf_str npl_gguf_key(const npl_gguf *g, int64_t i);
npl_gguf_vtype npl_gguf_kv_type(const npl_gguf *g, int64_t i);
/* For arrays: element type and count. Arrays of arrays (up to 8 levels) are
 * validated at open; their elements are not exposed (arr_type says ARRAY). */
npl_gguf_vtype npl_gguf_arr_type(const npl_gguf *g, int64_t i);
uint64_t npl_gguf_arr_n(const npl_gguf *g, int64_t i);
/* Value bytes of a scalar at index i (may be unaligned: read with memcpy);
 * NULL for strings and arrays. */
const void *npl_gguf_kv_data(const npl_gguf *g, int64_t i);
/* String value at index i; {NULL,0} if it is not a string. */
npl_gguf_str npl_gguf_kv_str(const npl_gguf *g, int64_t i);
/* Pointer to the packed elements of a numeric array (may be unaligned: read
 * with memcpy). NULL for string/array element types. */
const void *npl_gguf_arr_data(const npl_gguf *g, int64_t i);
/* j-th string of a string array (bounds-checked; {NULL,0} if out of range). */
npl_gguf_str npl_gguf_arr_str(const npl_gguf *g, int64_t i, uint64_t j);

/* Typed getters by key. Return 0 on success, -1 if absent, -2 if the stored
 * type does not convert (integers convert between widths when the value
 * fits; floats accept f32/f64). */
int npl_gguf_get_u32(const npl_gguf *g, const char *key, uint32_t *out);
int npl_gguf_get_i64(const npl_gguf *g, const char *key, int64_t *out);
int npl_gguf_get_f32(const npl_gguf *g, const char *key, float *out);
int npl_gguf_get_bool(const npl_gguf *g, const char *key, int *out);
int npl_gguf_get_str(const npl_gguf *g, const char *key, npl_gguf_str *out);
/* Scalar value at index i rendered as double (numeric/bool types only). */
int npl_gguf_get_number_at(const npl_gguf *g, int64_t i, double *out);

/* ---- tensors ---- */
int64_t npl_gguf_n_tensors(const npl_gguf *g);
const npl_gguf_tensor *npl_gguf_tensor_at(const npl_gguf *g, int64_t i);
const npl_gguf_tensor *npl_gguf_find_tensor(const npl_gguf *g, const char *name); /* NULL if absent */

/* ---- writer ----
 * Collects metadata and tensors, then writes the file in one go to
 * PATH.tmp and renames it over PATH, so a failure leaves nothing behind. */
typedef struct npl_gguf_writer npl_gguf_writer;

npl_gguf_writer *npl_gguf_writer_new(void);
void npl_gguf_writer_free(npl_gguf_writer *w);
void npl_gguf_writer_set_alignment(npl_gguf_writer *w, uint32_t alignment); /* also writes general.alignment */
int npl_gguf_writer_set_u32(npl_gguf_writer *w, const char *key, uint32_t v);
int npl_gguf_writer_set_i32(npl_gguf_writer *w, const char *key, int32_t v);
int npl_gguf_writer_set_u64(npl_gguf_writer *w, const char *key, uint64_t v);
int npl_gguf_writer_set_f32(npl_gguf_writer *w, const char *key, float v);
int npl_gguf_writer_set_bool(npl_gguf_writer *w, const char *key, int v);
int npl_gguf_writer_set_str(npl_gguf_writer *w, const char *key, const char *v);
/* Generic scalar of any non-string, non-array type; value bytes copied. */
int npl_gguf_writer_set_scalar(npl_gguf_writer *w, const char *key, npl_gguf_vtype t, const void *value);
/* Numeric array: n packed elements of type t, copied. */
int npl_gguf_writer_set_arr(npl_gguf_writer *w, const char *key, npl_gguf_vtype t, const void *data, uint64_t n);
int npl_gguf_writer_set_arr_str(npl_gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Tensor whose bytes are copied at write time from `data` (caller keeps it
 * alive until npl_gguf_writer_write returns). size must equal the row size
 * times the number of rows. */
int npl_gguf_writer_add_tensor(npl_gguf_writer *w, const char *name, int type, int n_dims,
                               const int64_t *ne, const void *data, size_t size);
/* Returns 0 on success; on failure writes one line to err and removes PATH.tmp. */
int npl_gguf_writer_write(npl_gguf_writer *w, const char *path, char *err, size_t errlen);

/* Print metadata and the tensor table like gguf-dump (long arrays summarized). */
int npl_gguf_inspect(const npl_gguf *g, FILE *out);
#endif
