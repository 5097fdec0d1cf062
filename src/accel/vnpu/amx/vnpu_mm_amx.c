/* vnpu AMX matmul kernels: int8 with TDPBSSD (signed activations x signed
 * weights, no offset trick needed) and bf16 with TDPBF16PS. Each 32x32
 * output block uses four accumulator tiles (2 row tiles x 2 column panels).
 * The packed panels are already in the B-tile layout (vnpu_mm.h), so a
 * B tile is one contiguous 1 KiB load; A tiles read the prepared activation
 * rows in place. f32 / f16 / int16 weights keep the AVX-512 kernels.
 *
 * Tile state is per thread: every call configures the tiles itself and
 * releases them at the end (the OS permission was requested by
 * npl_cpu_best_isa). The 64-byte config is filled through a volatile view
 * because GCC 12 at -O2 may drop plain stores to a buffer that is only read
 * by the ldtilecfg intrinsic. */
#include <immintrin.h>
#include <string.h>

#include "accel/vnpu/vnpu_mm.h"
#include "kernels/x86/amx/amx_tiles.h"

#define B VNPU_BLOCK

/* tmm0-3: C (16 x 64 B); tmm4-5: A (16 rows x a_bytes); tmm6-7: B (b_rows x 64 B) */
static void configure_tiles(int a_bytes, int b_rows) {
    const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, (uint8_t)b_rows, (uint8_t)b_rows};
    const uint16_t colsb[8] = {64, 64, 64, 64, (uint16_t)a_bytes, (uint16_t)a_bytes, 64, 64};
    npl_amx_configure(8, rows, colsb);
}

static void mm_i8_amx(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const int kt = p->bk % 64 == 0 ? 64 : 32; /* k per tile step: one quant block must hold whole steps */
    const int64_t xs = j->x_stride;
    _Alignas(64) int32_t acc[B * B];
    _Alignas(64) float facc[B * B];
    configure_tiles(kt, kt / 4);
    for (int64_t cb = c0; cb < c1; cb += B) {
        const uint8_t *w0 = vnpu_pk_panel(p, cb), *w1 = vnpu_pk_panel(p, cb + VNPU_PANEL);
        for (int64_t rb = r0; rb < r1; rb += B) {
            const uint8_t *x0 = j->x + rb * xs, *x1 = x0 + 16 * xs;
            for (int64_t b = 0; b < p->nblk; b++) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                for (int64_t k = b * p->bk; k < (b + 1) * p->bk; k += kt) {
                    _tile_loadd(4, x0 + k, xs);
                    _tile_loadd(5, x1 + k, xs);
                    _tile_loadd(6, w0 + k * 16, 64);
                    _tile_loadd(7, w1 + k * 16, 64);
                    _tile_dpbssd(0, 4, 6);
                    _tile_dpbssd(1, 4, 7);
                    _tile_dpbssd(2, 5, 6);
                    _tile_dpbssd(3, 5, 7);
                }
                _tile_stored(0, acc, B * 4);
                _tile_stored(1, acc + 16, B * 4);
                _tile_stored(2, acc + 16 * B, B * 4);
                _tile_stored(3, acc + 16 * B + 16, B * 4);
                vnpu_epi_int(j, acc, facc, rb, B, cb, b, 0, b == 0);
            }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    }
    _tile_release();
}

static void mm_bf16_amx(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const int64_t xs = j->x_stride;
    _Alignas(64) float facc[B * B];
    configure_tiles(64, 16);
    for (int64_t cb = c0; cb < c1; cb += B) {
        const uint8_t *w0 = vnpu_pk_panel(p, cb), *w1 = vnpu_pk_panel(p, cb + VNPU_PANEL);
        for (int64_t rb = r0; rb < r1; rb += B) {
            const uint8_t *x0 = j->x + rb * xs, *x1 = x0 + 16 * xs;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t k = 0; k < p->kpad; k += 32) { /* 32 bf16 per A-tile row, 16 k-pairs per B tile */
                _tile_loadd(4, x0 + k * 2, xs);
                _tile_loadd(5, x1 + k * 2, xs);
                _tile_loadd(6, w0 + k * 32, 64);
                _tile_loadd(7, w1 + k * 32, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, facc, B * 4);
            _tile_stored(1, facc + 16, B * 4);
            _tile_stored(2, facc + 16 * B, B * 4);
            _tile_stored(3, facc + 16 * B + 16, B * 4);
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    }
    _tile_release();
}

/* int16 as byte planes: x = xh*256 + xl, w = wh*256 + wl (h signed, l
 * unsigned), so x.w = 65536 xh.wh + 256 (xh.wl + xl.wh) + xl.wl, the four
 * products being TDPBSSD, TDPBSUD, TDPBUSD and TDPBUUD. Each 16x16 output
 * tile takes the four accumulators (tmm0-3); A tiles xh, xl (tmm4-5), B
 * tiles wh, wl (tmm6-7). Exact in int32 for blocks of up to 32768. */
static void mm_i16s_amx(const vnpu_mm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const vnpu_pack *p = j->pk;
    const int kt = p->bk % 64 == 0 ? 64 : 32;
    const int64_t xs = j->x_stride, lo_plane = p->kpad * VNPU_PANEL;
    _Alignas(64) int32_t part[4][16 * 16];
    _Alignas(64) float acc[B * B], facc[B * B];
    configure_tiles(kt, kt / 4);
    for (int64_t cb = c0; cb < c1; cb += B)
        for (int64_t rb = r0; rb < r1; rb += B) {
            for (int64_t b = 0; b < p->nblk; b++) {
                for (int sub = 0; sub < 4; sub++) {
                    const int rh = sub >> 1, ch = sub & 1;
                    const uint8_t *xh = j->x + (rb + 16 * rh) * xs, *xl = xh + p->kpad;
                    const uint8_t *wh = vnpu_pk_panel(p, cb + VNPU_PANEL * ch), *wl = wh + lo_plane;
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                    for (int64_t k = b * p->bk; k < (b + 1) * p->bk; k += kt) {
                        _tile_loadd(4, xh + k, xs);
                        _tile_loadd(5, xl + k, xs);
                        _tile_loadd(6, wh + k * 16, 64);
                        _tile_loadd(7, wl + k * 16, 64);
                        _tile_dpbssd(0, 4, 6);
                        _tile_dpbsud(1, 4, 7);
                        _tile_dpbusd(2, 5, 6);
                        _tile_dpbuud(3, 5, 7);
                    }
                    _tile_stored(0, part[0], 64);
                    _tile_stored(1, part[1], 64);
                    _tile_stored(2, part[2], 64);
                    _tile_stored(3, part[3], 64);
                    for (int r = 0; r < 16; r++)
                        for (int c = 0; c < 16; c++) {
                            const int e = r * 16 + c;
                            const double v = 65536.0 * part[0][e] + 256.0 * ((double)part[1][e] + part[2][e]) + part[3][e];
                            acc[(16 * rh + r) * B + 16 * ch + c] = (float)v;
                        }
                }
                vnpu_epi_intf(j, acc, facc, rb, B, cb, b, b == 0);
            }
            vnpu_epi_store(j, facc, rb, B, cb);
        }
    _tile_release();
}

void vnpu_mm_fill_amx(vnpu_mm_table *t) {
    t->fn[VNPU_PK_I16S] = mm_i16s_amx;
    t->act[VNPU_PK_I16S] = VNPU_ACT_I16S;
    t->kname[VNPU_PK_I16S] = "amx";
    t->fn[VNPU_PK_I8] = mm_i8_amx;
    t->act[VNPU_PK_I8] = VNPU_ACT_I8;
    t->kname[VNPU_PK_I8] = "amx";
    t->fn[VNPU_PK_BF16] = mm_bf16_amx;
    t->act[VNPU_PK_BF16] = VNPU_ACT_BF16;
    t->kname[VNPU_PK_BF16] = "amx";
}
