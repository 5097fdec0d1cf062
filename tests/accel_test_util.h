/* Helpers shared by the accelerator ABI tests. */
#ifndef NPL_TEST_ACCEL_UTIL_H
#define NPL_TEST_ACCEL_UTIL_H
#include <stdint.h>
#include <string.h>

#include "npullm_accel.h"

/* uniform in [-1, 1) from a 32-bit LCG state */
static inline float accel_frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* a tensor description of up to three dims (unused dims 0) */
static inline npl_accel_tensor_desc accel_desc(const char *name, uint32_t kind, uint32_t dt, uint32_t rank,
                                               uint32_t d0, uint32_t d1, uint32_t d2) {
    npl_accel_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name, d.kind = kind, d.dtype = dt, d.rank = rank;
    d.dims[0] = d0, d.dims[1] = d1, d.dims[2] = d2;
    return d;
}

/* A context binary's checksum, as vnpu_binary.c documents it: FNV-1a 64
 * over little-endian 64-bit words (the field at 56 counted as zero), the
 * tail byte by byte; written into that field. */
static inline void accel_reseal(uint8_t *b, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ull, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        if (i != 56) memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    memcpy(b + 56, &h, 8);
}
#endif
