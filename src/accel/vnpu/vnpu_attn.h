/* vnpu attention kernels beyond the shared ones of cpu/kernels/nn_kernels.h:
 * the AMX tile kernel (attn/amx/vnpu_attn_amx.c) and what its driver
 * (vnpu_attention.c) prepares for it. */
#ifndef NPL_VNPU_ATTN_H
#define NPL_VNPU_ATTN_H
#include <stddef.h>
#include <stdint.h>

#define VNPU_ATTN_KG 64 /* keys per block (and per prepared group) */

/* One kv head's cache rows [kb0, kb0 + groups * KG) prepared as bf16 hi/lo
 * pairs: K row-major [key][hd], V^T in 1 KiB tiles per 32 keys and 16 dims.
 * Keys outside [lo, hi) (never attended) are zero. */
typedef struct {
    const uint16_t *kc, *vc;  /* f16 cache of this kv head: row j at + j * row_stride */
    int64_t row_stride;
    int hd;
    int64_t kb0, lo, hi;
    uint16_t *khi, *klo;
    uint32_t *vhi, *vlo;
    float scale, softcap;
} vnpu_attn_prep;

/* 16 query rows that read one kv head. Row r: q[r] (f32, hd; NULL = none),
 * output o[r] (NULL = not written; rows that attend nothing get zeros),
 * attended keys [j0[r], j1[r]); blocks [k0, k1) cover every row's range
 * (multiples of KG inside the prepared keys). */
typedef struct {
    const float *q[16];
    float *o[16];
    int32_t j0[16], j1[16];
    int64_t k0, k1;
} vnpu_attn_tile;

/* AMX family only. Prepares group g (keys kb0 + g KG ...); runs nt (1 or 2)
 * tiles together (each K / V tile loaded serves both), with `state` of
 * vnpu_attn_amx_state_size() bytes, 64-aligned, per calling thread. */
void vnpu_attn_amx_prep(const vnpu_attn_prep *p, int64_t g);
void vnpu_attn_amx_tiles(const vnpu_attn_prep *p, const vnpu_attn_tile *t, int nt, void *state);
size_t vnpu_attn_amx_state_size(void);

#endif
