/* Sampler chain with llama.cpp's semantics (src/llama-sampling.cpp,
 * common/sampling.cpp), written for C with explicit state and no per-token
 * allocation. */
#include "llm/sampler.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct npl_sampler {
    const npl_sampler_i *iface;
    void *ctx;
};

/* ======================= generic interface ======================= */

npl_sampler *npl_sampler_init(const npl_sampler_i *iface, void *ctx) {
    if (!iface || !iface->apply) {
        if (iface && iface->free) iface->free(ctx);
        return NULL;
    }
    npl_sampler *s = malloc(sizeof *s);
    if (!s) {
        if (iface->free) iface->free(ctx);
        return NULL;
    }
    s->iface = iface;
    s->ctx = ctx;
    return s;
}

const char *npl_sampler_name(const npl_sampler *s) {
    return (s && s->iface->name) ? s->iface->name : "(null)";
}

void npl_sampler_apply(npl_sampler *s, npl_token_data_array *cur) {
    if (s && cur) s->iface->apply(s->ctx, cur);
}

void npl_sampler_accept(npl_sampler *s, int32_t token) {
    if (s && s->iface->accept) s->iface->accept(s->ctx, token);
}

void npl_sampler_reset(npl_sampler *s) {
    if (s && s->iface->reset) s->iface->reset(s->ctx);
}

void npl_sampler_free(npl_sampler *s) {
    if (!s) return;
    if (s->iface->free) s->iface->free(s->ctx);
    free(s);
}

/* ======================= ordering helpers ======================= */

/* a strictly before b: higher logit first, NaN last, then lower id. */
static inline int td_before(const npl_token_data *a, const npl_token_data *b) {
    int an = isnan(a->logit), bn = isnan(b->logit);
    if (an != bn) return bn;
    if (!an && a->logit != b->logit) return a->logit > b->logit;
    return a->id < b->id;
}

static inline void td_swap(npl_token_data *a, npl_token_data *b) {
    npl_token_data t = *a;
    *a = *b;
    *b = t;
}

/* Heap over h[0..n) whose root is the element that sorts last. */
static void heap_sift_down(npl_token_data *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && td_before(&h[m], &h[l])) m = l;
        if (r < n && td_before(&h[m], &h[r])) m = r;
        if (m == i) return;
        td_swap(&h[i], &h[m]);
        i = m;
    }
}

/* Pops the heap h[0..n) into sort order: the element that sorts last goes
 * to the end each time. */
static void heap_pop_all(npl_token_data *h, size_t n) {
    for (size_t end = n; end-- > 1;) {
        td_swap(&h[0], &h[end]);
        heap_sift_down(h, end, 0);
    }
}

static void heap_sort(npl_token_data *data, size_t n) {
    for (size_t i = n / 2; i-- > 0;) heap_sift_down(data, n, i);
    heap_pop_all(data, n);
}

/* Hoare partition of d[0..n), n > 2, around the median of three: returns
 * left in [1, n) with d[0..left) <= pivot <= d[left..n). */
static size_t partition(npl_token_data *d, size_t n) {
    const size_t mid = n / 2;
    if (td_before(&d[mid], &d[0])) td_swap(&d[mid], &d[0]);
    if (td_before(&d[n - 1], &d[0])) td_swap(&d[n - 1], &d[0]);
    if (td_before(&d[n - 1], &d[mid])) td_swap(&d[n - 1], &d[mid]);
    const npl_token_data pivot = d[mid];   /* d[0] <= pivot <= d[n-1]: sentinels */
    size_t i = 0, j = n - 1;
    for (;;) {
        while (td_before(&d[i], &pivot)) i++;
        while (td_before(&pivot, &d[j])) j--;
        if (i >= j) return j + 1;
        td_swap(&d[i], &d[j]);
        i++;
        j--;
    }
}

/* In-place introsort (glibc's qsort may malloc): quicksort with a median of
 * three, insertion sort for short runs, heapsort when the depth runs out.
 * Recurses on the smaller side only, so the stack stays O(log n). */
static void intro_sort(npl_token_data *d, size_t n, int depth) {
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(d, n);
            return;
        }
        const size_t left = partition(d, n);
        if (left < n - left) {
            intro_sort(d, left, depth);
            d += left;
            n -= left;
        } else {
            intro_sort(d + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        npl_token_data x = d[i];
        size_t k = i;
        for (; k > 0 && td_before(&x, &d[k - 1]); k--) d[k] = d[k - 1];
        d[k] = x;
    }
}

static void sort_inplace(npl_token_data *data, size_t n) {
    int depth = 0;
    for (size_t m = n; m > 1; m >>= 1) depth += 2;
    intro_sort(data, n, depth);
}

/* Quickselect: afterwards data[0..m) holds the m first elements in sort
 * order (themselves unsorted). Falls back to a full sort of the current
 * range when the depth runs out. */
static void quick_select(npl_token_data *d, size_t n, size_t m) {
    int depth = 0;
    for (size_t k = n; k > 1; k >>= 1) depth += 2;
    while (n > 16 && m > 0 && m < n) {
        if (depth-- == 0) break;
        const size_t left = partition(d, n);
        if (m <= left) {
            n = left;
        } else {
            d += left;
            n -= left;
            m -= left;
        }
    }
    if (m > 0 && m < n) sort_inplace(d, n);
}

/* Moves the m first elements (in sort order) to data[0..m), sorted; the
 * rest stays in data[m..size) in no particular order. A bounded heap for
 * small m (one pass, about one comparison per element), quickselect for
 * large m; then a sort of the m. */
static void partial_sort_inplace(npl_token_data *data, size_t size, size_t m) {
    if (m == 0) return;
    if (m >= size) {
        sort_inplace(data, size);
        return;
    }
    if (m > 1024) {
        quick_select(data, size, m);
        sort_inplace(data, m);
        return;
    }
    for (size_t i = m / 2; i-- > 0;) heap_sift_down(data, m, i);
    for (size_t i = m; i < size; i++) {
        if (td_before(&data[i], &data[0])) {
            td_swap(&data[i], &data[0]);
            heap_sift_down(data, m, 0);
        }
    }
    sort_inplace(data, m);
}

/* Softmax into p (float, like llama_sampler_softmax_impl without sorting). */
static void softmax_impl(npl_token_data_array *cur) {
    float max_l = cur->data[0].logit;
    if (!cur->sorted)
        for (size_t i = 1; i < cur->size; i++)
            if (cur->data[i].logit > max_l || isnan(max_l)) max_l = cur->data[i].logit;
    float cum = 0.0f;
    for (size_t i = 0; i < cur->size; i++) {
        float p = expf(cur->data[i].logit - max_l);
        cur->data[i].p = p;
        cum += p;
    }
    for (size_t i = 0; i < cur->size; i++) cur->data[i].p /= cum;
}

/* ======================= greedy ======================= */

static void greedy_apply(void *ctx, npl_token_data_array *cur) {
    (void)ctx;
    if (cur->size == 0) {
        cur->selected = -1;
        return;
    }
    size_t best = 0;
    for (size_t i = 1; i < cur->size; i++) {
        float l = cur->data[i].logit, b = cur->data[best].logit;
        if (l > b || (isnan(b) && !isnan(l))) best = i;
    }
    cur->selected = (int64_t)best;
}

static const npl_sampler_i greedy_iface = { "greedy", greedy_apply, NULL, NULL, NULL };

npl_sampler *npl_sampler_init_greedy(void) {
    return npl_sampler_init(&greedy_iface, NULL);
}

/* ======================= dist (xoshiro256**) ======================= */

typedef struct {
    uint32_t seed;
    uint32_t seed_cur;
    uint64_t s[4];
} dist_ctx;

static inline uint64_t rotl64(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t xoshiro_next(uint64_t s[4]) {
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double xoshiro_uniform(uint64_t s[4]) {
    return (double)(xoshiro_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void dist_seed(dist_ctx *d) {
    uint32_t seed = d->seed;
    if (seed == NPL_SAMPLER_DEFAULT_SEED) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32) ^ (uint64_t)(uintptr_t)d;
        seed = (uint32_t)splitmix64(&x);
    }
    d->seed_cur = seed;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) d->s[i] = splitmix64(&x);
}

static void dist_apply(void *ctx, npl_token_data_array *cur) {
    dist_ctx *d = ctx;
    if (cur->size == 0) {
        cur->selected = -1;
        return;
    }
    cur->selected = 0;
    if (cur->size == 1) {
        cur->data[0].p = 1.0f;
        return;
    }
    float max_l = cur->data[0].logit;
    if (!cur->sorted)
        for (size_t i = 1; i < cur->size; i++)
            if (cur->data[i].logit > max_l || isnan(max_l)) max_l = cur->data[i].logit;
    double sum_cum = 0.0;
    for (size_t i = 0; i < cur->size; i++) {
        float p = expf(cur->data[i].logit - max_l);
        cur->data[i].p = p;
        sum_cum += p;
    }
    if (!(sum_cum > 0.0) || !isfinite(sum_cum)) {   /* every logit -inf, NaN or +inf */
        cur->selected = -1;
        return;
    }
    /* Draw and normalise in one pass, as llama.cpp does; p > 0 keeps a
     * draw of exactly 0 from picking a -inf candidate. */
    const double sum_tgt = sum_cum * xoshiro_uniform(d->s);
    double sum_run = 0.0;
    int found = 0;
    for (size_t i = 0; i < cur->size; i++) {
        if (!found) {
            sum_run += cur->data[i].p;
            if (sum_run >= sum_tgt && cur->data[i].p > 0.0f) {
                cur->selected = (int64_t)i;
                found = 1;
            }
        }
        cur->data[i].p = (float)(cur->data[i].p / sum_cum);
    }
    if (!found) {   /* rounding: take the last candidate with mass */
        for (size_t i = cur->size; i-- > 0;)
            if (cur->data[i].p > 0.0f) {
                cur->selected = (int64_t)i;
                break;
            }
    }
}

static void dist_reset(void *ctx) {
    dist_seed(ctx);
}

static const npl_sampler_i dist_iface = { "dist", dist_apply, NULL, dist_reset, free };

npl_sampler *npl_sampler_init_dist(uint32_t seed) {
    dist_ctx *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->seed = seed;
    dist_seed(d);
    return npl_sampler_init(&dist_iface, d);
}

/* ======================= temperature ======================= */

typedef struct { float t; } temp_ctx;

static void temp_apply(void *ctx, npl_token_data_array *cur) {
    const float t = ((temp_ctx *)ctx)->t;
    if (cur->size == 0) return;
    if (t <= 0.0f) {   /* keep the first maximum, the rest become -inf */
        size_t max_i = 0;
        float max_l = cur->data[0].logit;
        for (size_t i = 1; i < cur->size; i++) {
            if (cur->data[i].logit > max_l) {
                cur->data[max_i].logit = -INFINITY;
                max_i = i;
                max_l = cur->data[i].logit;
            } else {
                cur->data[i].logit = -INFINITY;
            }
        }
        return;
    }
    for (size_t i = 0; i < cur->size; i++) cur->data[i].logit /= t;
}

static const npl_sampler_i temp_iface = { "temp", temp_apply, NULL, NULL, free };

npl_sampler *npl_sampler_init_temp(float t) {
    temp_ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->t = t;
    return npl_sampler_init(&temp_iface, c);
}

/* ======================= top-k ======================= */

typedef struct { int32_t k; } top_k_ctx;

static void top_k_apply(void *ctx, npl_token_data_array *cur) {
    int32_t k = ((top_k_ctx *)ctx)->k;
    if (k <= 0) return;
    size_t kk = (size_t)k < cur->size ? (size_t)k : cur->size;
    if (!cur->sorted) {
        partial_sort_inplace(cur->data, cur->size, kk);
        cur->sorted = 1;
    }
    cur->size = kk;
}

static const npl_sampler_i top_k_iface = { "top-k", top_k_apply, NULL, NULL, free };

npl_sampler *npl_sampler_init_top_k(int32_t k) {
    top_k_ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->k = k;
    return npl_sampler_init(&top_k_iface, c);
}

/* ======================= top-p ======================= */

typedef struct { float p; size_t min_keep; } prob_ctx;

static void top_p_apply(void *ctx, npl_token_data_array *cur) {
    const prob_ctx *c = ctx;
    if (c->p >= 1.0f || cur->size == 0) return;
    softmax_impl(cur);

    /* Unsorted and large: sort only the head first and widen it 16x at a
     * time while the mass is not reached there (llama.cpp sorts a 256 head,
     * then everything). */
    size_t sorted_upto = cur->size;
    if (!cur->sorted) {
        sorted_upto = cur->size > 1024 ? 256 : cur->size;
        partial_sort_inplace(cur->data, cur->size, sorted_upto);
    }
    float cum = 0.0f;
    size_t last = cur->size;
    for (size_t i = 0; i < cur->size; i++) {
        cum += cur->data[i].p;
        if (cum >= c->p && i + 1 >= c->min_keep) {
            last = i + 1;
            break;
        }
        if (i + 1 == sorted_upto && sorted_upto < cur->size) {
            /* data[0..i] are the i+1 first: sort the next ones after them */
            sorted_upto = sorted_upto <= cur->size / 16 ? sorted_upto * 16 : cur->size;
            partial_sort_inplace(cur->data + i + 1, cur->size - i - 1, sorted_upto - i - 1);
        }
    }
    cur->sorted = 1;
    cur->size = last;
}

static const npl_sampler_i top_p_iface = { "top-p", top_p_apply, NULL, NULL, free };

npl_sampler *npl_sampler_init_top_p(float p, size_t min_keep) {
    prob_ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->p = p;
    c->min_keep = min_keep;
    return npl_sampler_init(&top_p_iface, c);
}

/* ======================= min-p ======================= */

static void min_p_apply(void *ctx, npl_token_data_array *cur) {
    const prob_ctx *c = ctx;
    if (c->p <= 0.0f || cur->size == 0) return;

    if (!cur->sorted) {   /* unsorted: filter in place, keeping the order */
        float max_l = -FLT_MAX;
        for (size_t i = 0; i < cur->size; i++)
            if (cur->data[i].logit > max_l) max_l = cur->data[i].logit;
        const float min_logit = max_l + logf(c->p);
        size_t n = 0;
        for (size_t i = 0; i < cur->size; i++)
            if (cur->data[i].logit >= min_logit) n++;
        if (n > 0 && n >= c->min_keep) {
            size_t j = 0;
            for (size_t i = 0; i < cur->size; i++)
                if (cur->data[i].logit >= min_logit) cur->data[j++] = cur->data[i];
            cur->size = j;
            return;
        }
        sort_inplace(cur->data, cur->size);
        cur->sorted = 1;
    }
    const float min_logit = cur->data[0].logit + logf(c->p);
    size_t i = 1;   /* the first token always stays */
    for (; i < cur->size; i++)
        if (cur->data[i].logit < min_logit && i >= c->min_keep) break;
    cur->size = i;
}

static const npl_sampler_i min_p_iface = { "min-p", min_p_apply, NULL, NULL, free };

npl_sampler *npl_sampler_init_min_p(float p, size_t min_keep) {
    prob_ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    c->p = p;
    c->min_keep = min_keep;
    return npl_sampler_init(&min_p_iface, c);
}

/* ======================= penalties ======================= */

typedef struct {
    int32_t n_vocab;
    int32_t last_n;      /* 0 off, -1 unbounded */
    float repeat, freq, present;
    int32_t *count;      /* [n_vocab] occurrences inside the window */
    int32_t *ring;       /* [last_n] when last_n > 0 */
    size_t ring_first, ring_size;
} penalties_ctx;

static void penalties_accept(void *ctx, int32_t token) {
    penalties_ctx *c = ctx;
    if (c->last_n == 0 || token < 0 || token >= c->n_vocab) return;
    if (c->last_n > 0) {
        size_t cap = (size_t)c->last_n;
        if (c->ring_size == cap) {   /* evict the oldest */
            c->count[c->ring[c->ring_first]]--;
            c->ring_first = (c->ring_first + 1) % cap;
            c->ring_size--;
        }
        c->ring[(c->ring_first + c->ring_size) % cap] = token;
        c->ring_size++;
    }
    if (c->count[token] < INT32_MAX) c->count[token]++;
}

static void penalties_apply(void *ctx, npl_token_data_array *cur) {
    const penalties_ctx *c = ctx;
    if (c->last_n == 0 || (c->repeat == 1.0f && c->freq == 0.0f && c->present == 0.0f)) return;
    for (size_t i = 0; i < cur->size; i++) {
        int32_t id = cur->data[i].id;
        if (id < 0 || id >= c->n_vocab || c->count[id] == 0) continue;
        const int32_t n = c->count[id];
        float *l = &cur->data[i].logit;
        if (*l <= 0.0f) *l *= c->repeat;
        else *l /= c->repeat;
        *l -= (float)n * c->freq + (float)(n > 0) * c->present;
    }
    cur->sorted = 0;
}

static void penalties_reset(void *ctx) {
    penalties_ctx *c = ctx;
    if (c->count) memset(c->count, 0, (size_t)c->n_vocab * sizeof *c->count);
    c->ring_first = c->ring_size = 0;
}

static void penalties_free(void *ctx) {
    penalties_ctx *c = ctx;
    if (!c) return;
    free(c->count);
    free(c->ring);
    free(c);
}

static const npl_sampler_i penalties_iface = {
    "penalties", penalties_apply, penalties_accept, penalties_reset, penalties_free
};

npl_sampler *npl_sampler_init_penalties(int32_t n_vocab, int32_t last_n,
                                        float repeat, float freq, float present) {
    if (n_vocab <= 0) return NULL;
    if (last_n < -1) last_n = 0;
    penalties_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_vocab = n_vocab;
    c->last_n = last_n;
    c->repeat = repeat;
    c->freq = freq;
    c->present = present;
    if (last_n != 0) {
        c->count = calloc((size_t)n_vocab, sizeof *c->count);
        if (last_n > 0) c->ring = malloc((size_t)last_n * sizeof *c->ring);
        if (!c->count || (last_n > 0 && !c->ring)) {
            penalties_free(c);
            return NULL;
        }
    }
    return npl_sampler_init(&penalties_iface, c);
}

/* ======================= chain ======================= */

typedef struct {
    npl_sampler **items;
    int n, cap;
    int32_t n_vocab;
    npl_token_data *buf;          /* [n_vocab] scratch candidates */
    npl_token_data_array cur;
    char err[192];
} chain_ctx;

static void chain_apply(void *ctx, npl_token_data_array *cur) {
    chain_ctx *c = ctx;
    for (int i = 0; i < c->n; i++) npl_sampler_apply(c->items[i], cur);
}

static void chain_accept(void *ctx, int32_t token) {
    chain_ctx *c = ctx;
    for (int i = 0; i < c->n; i++) npl_sampler_accept(c->items[i], token);
}

static void chain_reset(void *ctx) {
    chain_ctx *c = ctx;
    for (int i = 0; i < c->n; i++) npl_sampler_reset(c->items[i]);
    c->cur.size = 0;
    c->cur.selected = -1;
    c->err[0] = '\0';
}

static void chain_free(void *ctx) {
    chain_ctx *c = ctx;
    if (!c) return;
    for (int i = 0; i < c->n; i++) npl_sampler_free(c->items[i]);
    free(c->items);
    free(c->buf);
    free(c);
}

static const npl_sampler_i chain_iface = { "chain", chain_apply, chain_accept, chain_reset, chain_free };

static chain_ctx *as_chain(const npl_sampler *s) {
    return (s && s->iface == &chain_iface) ? s->ctx : NULL;
}

npl_sampler *npl_sampler_chain_init(int32_t n_vocab) {
    if (n_vocab <= 0) return NULL;
    chain_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_vocab = n_vocab;
    c->buf = malloc((size_t)n_vocab * sizeof *c->buf);
    if (!c->buf) {
        free(c);
        return NULL;
    }
    c->cur.data = c->buf;
    c->cur.selected = -1;
    return npl_sampler_init(&chain_iface, c);
}

int npl_sampler_chain_add(npl_sampler *chain, npl_sampler *s) {
    chain_ctx *c = as_chain(chain);
    if (!c || !s || s == chain) {
        if (s != chain) npl_sampler_free(s);
        return -1;
    }
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        npl_sampler **items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items) {
            npl_sampler_free(s);
            snprintf(c->err, sizeof c->err, "sampler chain: out of memory");
            return -1;
        }
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = s;
    return 0;
}

int npl_sampler_chain_n(const npl_sampler *chain) {
    const chain_ctx *c = as_chain(chain);
    return c ? c->n : -1;
}

npl_sampler *npl_sampler_chain_get(const npl_sampler *chain, int i) {
    const chain_ctx *c = as_chain(chain);
    return (c && i >= 0 && i < c->n) ? c->items[i] : NULL;
}

int32_t npl_sampler_chain_n_vocab(const npl_sampler *chain) {
    const chain_ctx *c = as_chain(chain);
    return c ? c->n_vocab : -1;
}

const npl_token_data_array *npl_sampler_chain_candidates(const npl_sampler *chain) {
    const chain_ctx *c = as_chain(chain);
    return c ? &c->cur : NULL;
}

const char *npl_sampler_last_error(const npl_sampler *chain) {
    const chain_ctx *c = as_chain(chain);
    return c ? c->err : "not a sampler chain";
}

int npl_sampler_sample(npl_sampler *chain, const float *logits, int32_t n_vocab, int32_t *token) {
    chain_ctx *c = as_chain(chain);
    if (!c || !token) return -1;
    if (!logits) {
        snprintf(c->err, sizeof c->err, "sampler chain: logits is NULL");
        return -1;
    }
    if (n_vocab != c->n_vocab) {
        snprintf(c->err, sizeof c->err, "sampler chain: %d logits for a chain built for n_vocab %d",
                 (int)n_vocab, (int)c->n_vocab);
        return -1;
    }
    for (int32_t i = 0; i < n_vocab; i++) {
        c->buf[i].id = i;
        c->buf[i].logit = logits[i];
        c->buf[i].p = 0.0f;
    }
    c->cur.data = c->buf;
    c->cur.size = (size_t)n_vocab;
    c->cur.selected = -1;
    c->cur.sorted = 0;
    chain_apply(c, &c->cur);
    if (c->cur.selected < 0 || (size_t)c->cur.selected >= c->cur.size) {
        snprintf(c->err, sizeof c->err,
                 "sampler chain: no token selected (the chain needs greedy or dist last, "
                 "and at least one finite logit)");
        return -1;
    }
    *token = c->cur.data[c->cur.selected].id;
    chain_accept(c, *token);
    c->err[0] = '\0';
    return 0;
}
