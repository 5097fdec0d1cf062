/* Checked size arithmetic for every size that comes from a file or a user.
 * Each returns 0 on success and 1 on overflow, leaving *out untouched. */
#ifndef NPL_CHECKED_H
#define NPL_CHECKED_H
#include <stddef.h>
#include <stdint.h>

static inline int npl_mul_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return 1;
    *out = r;
    return 0;
}
static inline int npl_add_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return 1;
    *out = r;
    return 0;
}
static inline int npl_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return 1;
    *out = r;
    return 0;
}
/* Round up to a power-of-two alignment, checked. */
static inline int npl_align_size(size_t v, size_t align, size_t *out) {
    size_t r;
    if (align == 0 || (align & (align - 1))) return 1;
    if (__builtin_add_overflow(v, align - 1, &r)) return 1;
    *out = r & ~(align - 1);
    return 0;
}
#endif
