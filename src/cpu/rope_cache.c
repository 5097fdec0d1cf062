/* RoPE angle tables per session (see rope_cache.h). */
#include "cpu/rope_cache.h"

#include <stdlib.h>
#include <string.h>

enum { SETS = 4 }; /* distinct argument sets kept (Gemma 3: local and global bases) */

typedef struct {
    npl_rope_args a;
    int64_t n;              /* positions held */
    int64_t cap_pos, cap_cs; /* elements allocated */
    int32_t *pos;
    float *cs;
    uint64_t used; /* for the least recently used */
} rope_set;

struct npl_rope_cache {
    rope_set set[SETS];
    int refs;
    uint64_t clock;
    npl_rope_cache **slot;
};

npl_rope_cache *npl_rope_cache_ref(npl_rope_cache **slot) {
    if (!*slot) {
        if (!(*slot = calloc(1, sizeof **slot))) return NULL;
        (*slot)->slot = slot;
    }
    (*slot)->refs++;
    return *slot;
}

void npl_rope_cache_unref(npl_rope_cache *k) {
    if (!k || --k->refs > 0) return;
    for (int i = 0; i < SETS; i++) free(k->set[i].pos), free(k->set[i].cs);
    *k->slot = NULL;
    free(k);
}

static int same_args(const npl_rope_args *x, const npl_rope_args *y) {
    return x->n_rot == y->n_rot && x->neox == y->neox && x->base == y->base && x->freq_scale == y->freq_scale &&
           x->freq_factors == y->freq_factors && x->ext_factor == y->ext_factor && x->attn_factor == y->attn_factor &&
           x->corr_lo == y->corr_lo && x->corr_hi == y->corr_hi;
}

float *npl_rope_cache_rows(npl_rope_cache *k, const npl_rope_args *a, const int32_t *pos, int64_t n, int *fill) {
    rope_set *lru = &k->set[0];
    for (int i = 0; i < SETS; i++) {
        rope_set *s = &k->set[i];
        if (s->cs && s->n == n && same_args(&s->a, a) && !memcmp(s->pos, pos, (size_t)n * sizeof *pos)) {
            s->used = ++k->clock;
            *fill = 0;
            return s->cs;
        }
        if (s->used < lru->used) lru = s;
    }
    const int64_t ncs = n * a->n_rot;
    if (n > lru->cap_pos) {
        int32_t *p = realloc(lru->pos, (size_t)n * sizeof *p);
        if (!p) return NULL;
        lru->pos = p, lru->cap_pos = n;
    }
    if (ncs > lru->cap_cs) {
        float *c = realloc(lru->cs, (size_t)ncs * sizeof *c);
        if (!c) { /* forget the set: its rows would not match its key */
            free(lru->cs), lru->cs = NULL, lru->cap_cs = 0, lru->used = 0;
            return NULL;
        }
        lru->cs = c, lru->cap_cs = ncs;
    }
    lru->a = *a, lru->n = n, lru->used = ++k->clock;
    memcpy(lru->pos, pos, (size_t)n * sizeof *pos);
    *fill = 1;
    return lru->cs;
}
