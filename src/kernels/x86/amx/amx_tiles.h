/* AMX tile configuration, shared by every AMX kernel (CPU GEMM, vnpu matmul
 * and attention). */
#ifndef NPL_AMX_TILES_H
#define NPL_AMX_TILES_H
#include <immintrin.h>
#include <stdint.h>

typedef struct {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} npl_amx_config;
_Static_assert(sizeof(npl_amx_config) == 64, "tile config is 64 bytes");

/* Loads palette 1 with tiles t < n of rows[t] x colsb[t] bytes. The block is
 * filled through a volatile view: GCC may drop plain stores to a buffer that
 * only ldtilecfg reads, and the tile instructions then fault (SIGILL). */
static inline void npl_amx_configure(int n, const uint8_t *rows, const uint16_t *colsb) {
    _Alignas(64) npl_amx_config cfg;
    volatile npl_amx_config *v = &cfg;
    volatile uint8_t *raw = (volatile uint8_t *)v;
    for (int i = 0; i < 64; i++) raw[i] = 0;
    v->palette_id = 1;
    for (int t = 0; t < n; t++) {
        v->rows[t] = rows[t];
        v->colsb[t] = colsb[t];
    }
    __asm__ __volatile__("" ::: "memory");
    _tile_loadconfig((const void *)&cfg);
}

#endif
