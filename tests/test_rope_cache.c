/* The RoPE angle cache a session's rope nodes share (cpu/rope_cache.h):
 * a set is filled once and then found by its arguments and positions, any
 * change of either refills, the least recently used of more sets than it
 * keeps is refilled, a wider n_rot at the same positions gets room for it
 * (ASan), and the last reference frees it and clears its slot. Turning by
 * the cached angles (npl_rope_apply) gives npl_rope_ext's bits, NeoX and
 * interleaved, with partial rotation. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "cpu/rope_cache.h"
#include "kernels/nn_kernels.h"

static void fill_rows(const npl_rope_args *a, const int32_t *pos, int n, float *cs) {
    for (int r = 0; r < n; r++) npl_rope_cos_sin(a, pos[r], cs + (size_t)r * a->n_rot);
}

/* rows of a fresh table, computed apart */
static int rows_match(const npl_rope_args *a, const int32_t *pos, int n, const float *cs) {
    float want[64 * 8];
    fill_rows(a, pos, n, want);
    return !memcmp(want, cs, (size_t)n * a->n_rot * sizeof(float));
}

static void check_cache(void) {
    npl_rope_cache *slot = NULL;
    npl_rope_cache *k = npl_rope_cache_ref(&slot);
    CHECK(k != NULL && slot == k);
    CHECK(npl_rope_cache_ref(&slot) == k); /* a second node */
    int32_t pos[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    npl_rope_args a = {.n_rot = 16, .neox = 1, .base = 10000.0f, .freq_scale = 1.0f, .attn_factor = 1.0f};
    int fill = -1;
    float *cs = npl_rope_cache_rows(k, &a, pos, 8, &fill);
    CHECK(cs != NULL && fill == 1);
    if (!cs) return;
    fill_rows(&a, pos, 8, cs);
    CHECK(npl_rope_cache_rows(k, &a, pos, 8, &fill) == cs && fill == 0);
    CHECK(rows_match(&a, pos, 8, cs));
    /* another position, another base, fewer rows: each a new set */
    pos[7] = 9;
    CHECK(npl_rope_cache_rows(k, &a, pos, 8, &fill) != NULL && fill == 1);
    pos[7] = 7;
    npl_rope_args b = a;
    b.base = 1e6f;
    float *cb = npl_rope_cache_rows(k, &b, pos, 8, &fill);
    CHECK(cb != NULL && fill == 1);
    if (cb) fill_rows(&b, pos, 8, cb);
    CHECK(npl_rope_cache_rows(k, &a, pos, 7, &fill) != NULL && fill == 1);
    /* the first set and b's are still there (4 kept) */
    CHECK(npl_rope_cache_rows(k, &a, pos, 8, &fill) == cs && fill == 0);
    CHECK(npl_rope_cache_rows(k, &b, pos, 8, &fill) == cb && fill == 0 && rows_match(&b, pos, 8, cb));
    /* two more sets: the least recently used (pos[7] = 9, then the 7 rows) go first */
    npl_rope_args c = a, d = a;
    c.freq_scale = 0.5f, d.neox = 0;
    CHECK(npl_rope_cache_rows(k, &c, pos, 8, &fill) != NULL && fill == 1);
    CHECK(npl_rope_cache_rows(k, &d, pos, 8, &fill) != NULL && fill == 1);
    CHECK(npl_rope_cache_rows(k, &a, pos, 8, &fill) == cs && fill == 0);
    CHECK(npl_rope_cache_rows(k, &b, pos, 8, &fill) == cb && fill == 0);
    npl_rope_args e = a;
    e.attn_factor = 2.0f; /* a fifth set evicts c, the least recently used now */
    CHECK(npl_rope_cache_rows(k, &e, pos, 8, &fill) != NULL && fill == 1);
    CHECK(npl_rope_cache_rows(k, &c, pos, 8, &fill) != NULL && fill == 1);
    /* a wider rotation over the same 8 positions in a reused set: room for 8 x 64 */
    npl_rope_args w = a;
    w.n_rot = 64;
    float *cw = npl_rope_cache_rows(k, &w, pos, 8, &fill);
    CHECK(cw != NULL && fill == 1);
    if (cw) {
        fill_rows(&w, pos, 8, cw);
        CHECK(rows_match(&w, pos, 8, cw));
    }
    npl_rope_cache_unref(k);
    CHECK(slot == k); /* one reference left */
    npl_rope_cache_unref(k);
    CHECK(slot == NULL);
}

static void check_apply(int neox, int n_rot, int hd) {
    enum { HEADS = 3 };
    float x[HEADS * 64], y[HEADS * 64], cs[64];
    const npl_rope_args a = {.n_rot = n_rot, .neox = neox, .base = 10000.0f, .freq_scale = 1.0f, .attn_factor = 1.0f};
    for (int32_t pos = 0; pos < 3000; pos += 997) {
        for (int i = 0; i < HEADS * hd; i++) x[i] = y[i] = (float)((i * 37) % 101 - 50) / 17.0f;
        npl_rope_ext(x, HEADS, hd, pos, &a);
        npl_rope_cos_sin(&a, pos, cs);
        npl_rope_apply(y, HEADS, hd, cs, &a);
        CHECK(!memcmp(x, y, sizeof(float) * HEADS * (size_t)hd));
    }
}

int main(void) {
    check_cache();
    check_apply(1, 64, 64);
    check_apply(0, 64, 64);
    check_apply(1, 32, 64); /* partial rotation: the rest untouched */
    check_apply(0, 16, 48);
    TEST_MAIN_END();
}
