/* npullm GGUF inspection: open a GGUF file (v2 or v3) with the library's
 * checks (every count, length, offset and type against the file's size) and
 * read its metadata, or print it like gguf-dump.
 *
 *   npl_gguf_file *f = npl_gguf_file_open("model.gguf", NULL, err, sizeof err);
 *   int64_t ctx;
 *   if (npl_gguf_file_get_int(f, "gemma3.context_length", &ctx) == NPL_OK) ...
 *   npl_gguf_file_close(f); */
#ifndef NPULLM_GGUF_H
#define NPULLM_GGUF_H

#include <stdio.h>

#include "npullm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npl_gguf_file npl_gguf_file;

/* NULL on failure with one line "FILE: FIELD: what was wrong" in err and
 * NPL_ERR_FILE (or NPL_ERR_MEMORY) in *status; either may be NULL. */
NPL_API npl_gguf_file *npl_gguf_file_open(const char *path, npl_status *status, char *err, size_t errlen);
NPL_API void npl_gguf_file_close(npl_gguf_file *f);
NPL_API uint32_t npl_gguf_file_version(const npl_gguf_file *f);
NPL_API int64_t npl_gguf_file_n_kv(const npl_gguf_file *f);
NPL_API int64_t npl_gguf_file_n_tensors(const npl_gguf_file *f);
NPL_API int npl_gguf_file_has_key(const npl_gguf_file *f, const char *key);
/* An integer or bool value: NPL_OK, or NPL_ERR_ARGUMENT if the key is absent
 * or holds another type (or a value outside int64). */
NPL_API npl_status npl_gguf_file_get_int(const npl_gguf_file *f, const char *key, int64_t *out);
/* A string value, NUL-terminated into buf (truncated to cap - 1 bytes):
 * its full length, or -1 if the key is absent or not a string. */
NPL_API int64_t npl_gguf_file_get_str(const npl_gguf_file *f, const char *key, char *buf, size_t cap);
/* An array of integers: its length (at most cap elements written), or -1 if
 * the key is absent or not an integer array. */
NPL_API int64_t npl_gguf_file_get_int_array(const npl_gguf_file *f, const char *key, int64_t *out, int64_t cap);
/* The header, every key/value pair (long arrays and strings shortened) and
 * the tensor table: index, name, type, shape, offset and size. NPL_OK, or
 * NPL_ERR_FILE if writing to out failed. */
NPL_API npl_status npl_gguf_file_print(const npl_gguf_file *f, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
