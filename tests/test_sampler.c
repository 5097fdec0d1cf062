/* Sampler chain: each filter on constructed logits with exact expectations
 * (llama.cpp semantics, src/llama-sampling.cpp), the default chain, seeds,
 * and the empirical distribution of dist against softmax. */
#include "check.h"
#include "llm/sampler.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64

/* A candidates array over caller storage, ids 0..n-1, unsorted. */
static npl_token_data_array make_cur(npl_token_data *buf, const float *logits, size_t n) {
    for (size_t i = 0; i < n; i++) {
        buf[i].id = (int32_t)i;
        buf[i].logit = logits[i];
        buf[i].p = 0.0f;
    }
    npl_token_data_array cur = { buf, n, -1, 0 };
    return cur;
}

/* Applies one freshly built sampler and frees it. */
static void apply1(npl_sampler *s, npl_token_data_array *cur) {
    CHECK(s != NULL);
    npl_sampler_apply(s, cur);
    npl_sampler_free(s);
}

static int ids_are(const npl_token_data_array *cur, const int32_t *ids, size_t n) {
    if (cur->size != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (cur->data[i].id != ids[i]) return 0;
    return 1;
}

/* ---------------------------------------------------------------- top-k */
static void test_top_k(void) {
    npl_token_data buf[MAXN];
    const float l[5] = { 1.0f, 5.0f, 3.0f, 5.0f, 2.0f };
    npl_token_data_array cur;

    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_k(2), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3 }, 2));   /* tie at the top: both */
    CHECK(cur.sorted);

    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_k(3), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3, 2 }, 3));

    /* tie straddling the cut keeps the lower ids */
    const float t[6] = { 4.0f, 1.0f, 4.0f, 4.0f, 0.0f, 4.0f };
    cur = make_cur(buf, t, 6);
    apply1(npl_sampler_init_top_k(2), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 2 }, 2));

    /* k = 0 and k < 0: no-op, order and sorted flag untouched */
    for (int k = -1; k <= 0; k++) {
        cur = make_cur(buf, l, 5);
        apply1(npl_sampler_init_top_k(k), &cur);
        CHECK(ids_are(&cur, (const int32_t[]){ 0, 1, 2, 3, 4 }, 5));
        CHECK(!cur.sorted);
    }

    /* k > n keeps everything, sorted */
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_k(100), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3, 2, 4, 0 }, 5));
    CHECK(cur.sorted);

    /* k = n exactly, then k = 1 */
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_k(5), &cur);
    CHECK_EQ_INT(cur.size, 5);
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_k(1), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1 }, 1));

    /* large unsorted array goes through the heap path */
    enum { N = 5000 };
    npl_token_data *big = malloc(N * sizeof *big);
    float *bl = malloc(N * sizeof *bl);
    for (int i = 0; i < N; i++) bl[i] = (float)((i * 7919) % N);   /* a permutation of 0..N-1 */
    cur = make_cur(big, bl, N);
    apply1(npl_sampler_init_top_k(40), &cur);
    CHECK_EQ_INT(cur.size, 40);
    int ok = 1;
    for (int i = 0; i < 40; i++) ok &= cur.data[i].logit == (float)(N - 1 - i);
    CHECK(ok);

    /* k = n on many ties and a few NaNs: a full sort, ties by id, NaN last */
    for (int i = 0; i < N; i++) bl[i] = (float)((i * 7919) % 13) - 6.0f;
    bl[17] = bl[4000] = NAN;
    cur = make_cur(big, bl, N);
    apply1(npl_sampler_init_top_k(N), &cur);
    CHECK_EQ_INT(cur.size, N);
    ok = 1;
    for (int i = 1; i < N - 2; i++) {
        const npl_token_data *a = &cur.data[i - 1], *b = &cur.data[i];
        ok &= a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
    }
    ok &= cur.data[N - 2].id == 17 && cur.data[N - 1].id == 4000;
    CHECK(ok);

    /* large k (quickselect path) on the same ties: the kept 2000 are sorted
     * and every one of them sorts before every dropped candidate */
    cur = make_cur(big, bl, N);
    apply1(npl_sampler_init_top_k(2000), &cur);
    CHECK_EQ_INT(cur.size, 2000);
    ok = 1;
    for (int i = 1; i < 2000; i++) {
        const npl_token_data *a = &cur.data[i - 1], *b = &cur.data[i];
        ok &= a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
    }
    const npl_token_data *lastk = &cur.data[1999];
    for (int i = 2000; i < N; i++) {
        const npl_token_data *b = &cur.data[i];
        ok &= isnan(b->logit) || lastk->logit > b->logit || (lastk->logit == b->logit && lastk->id < b->id);
    }
    CHECK(ok);
    free(big);
    free(bl);
}

/* ---------------------------------------------------------------- top-p */
static void test_top_p(void) {
    npl_token_data buf[MAXN];
    npl_token_data_array cur;
    /* four equal logits: p = 0.25 each, exact in float */
    const float eq[4] = { 2.0f, 2.0f, 2.0f, 2.0f };

    cur = make_cur(buf, eq, 4);
    apply1(npl_sampler_init_top_p(0.5f, 0), &cur);   /* 0.25, 0.50 >= 0.5 */
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1 }, 2));
    CHECK_NEAR(cur.data[0].p, 0.25, 0);
    CHECK(cur.sorted);

    cur = make_cur(buf, eq, 4);
    apply1(npl_sampler_init_top_p(0.51f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1, 2 }, 3));

    /* p = 1 and above: no-op (not even a softmax) */
    cur = make_cur(buf, eq, 4);
    apply1(npl_sampler_init_top_p(1.0f, 0), &cur);
    CHECK_EQ_INT(cur.size, 4);
    CHECK(!cur.sorted);
    CHECK(cur.data[0].p == 0.0f);

    /* p = 0 keeps the first token; min_keep raises that */
    const float l[5] = { 0.0f, 3.0f, 1.0f, 2.0f, -1.0f };
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_p(0.0f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1 }, 1));
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_p(0.0f, 3), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3, 2 }, 3));

    /* softmax of {3,2,1,0,-1}: 0.6364, 0.2341, 0.0861, 0.0317, 0.0117 */
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_p(0.8f, 0), &cur);   /* 0.636 < 0.8 <= 0.870 */
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3 }, 2));
    CHECK_NEAR(cur.data[0].p, exp(3.0) / (exp(3) + exp(2) + exp(1) + exp(0) + exp(-1)), 1e-6);
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_p(0.95f, 0), &cur);  /* 0.957 >= 0.95 */
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 3, 2 }, 3));
    cur = make_cur(buf, l, 5);
    apply1(npl_sampler_init_top_p(0.999f, 0), &cur); /* needs all five */
    CHECK_EQ_INT(cur.size, 5);

    /* large unsorted array whose mass needs more than the first 256: the
     * adaptive path must widen to a full sort */
    enum { N = 3000 };
    npl_token_data *big = malloc(N * sizeof *big);
    float *bl = malloc(N * sizeof *bl);
    for (int i = 0; i < N; i++) bl[i] = (float)((i * 7919) % N) * 1e-4f;
    cur = make_cur(big, bl, N);
    apply1(npl_sampler_init_top_p(0.9f, 0), &cur);
    int sorted_ok = 1;
    double mass = 0.0, mass_but_last = 0.0;
    for (size_t i = 0; i < cur.size; i++) {
        if (i) sorted_ok &= cur.data[i - 1].logit > cur.data[i].logit;
        mass_but_last = mass;
        mass += cur.data[i].p;
    }
    CHECK(cur.size > 256 && cur.size < N);
    CHECK(sorted_ok);
    CHECK(cur.data[0].logit == (float)(N - 1) * 1e-4f);
    CHECK(mass >= 0.9 - 1e-4);
    CHECK(mass_but_last < 0.9 + 1e-4);
    free(big);
    free(bl);
}

/* ---------------------------------------------------------------- min-p */
static void test_min_p(void) {
    npl_token_data buf[MAXN];
    npl_token_data_array cur;
    /* probabilities relative to the max: 0.5, 1, 0.04, 0.1 */
    const float l[4] = { logf(0.5f), 0.0f, logf(0.04f), logf(0.1f) };

    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_min_p(0.05f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1, 3 }, 3));   /* unsorted path keeps order */
    CHECK(!cur.sorted);

    /* exactly at the threshold (logit == max + log p) is kept */
    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_min_p(0.1f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1, 3 }, 3));
    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_min_p(0.11f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1 }, 2));

    /* min_p = 0: no-op */
    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_min_p(0.0f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 0, 1, 2, 3 }, 4));

    /* min_p = 1 keeps every maximum (ties) */
    const float t[5] = { 1.0f, 3.0f, 3.0f, 2.9f, 3.0f };
    cur = make_cur(buf, t, 5);
    apply1(npl_sampler_init_min_p(1.0f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 2, 4 }, 3));

    /* min_keep larger than what passes: sorted fallback keeps min_keep */
    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_min_p(0.9f, 2), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 0 }, 2));
    CHECK(cur.sorted);

    /* sorted input (after top-k) uses the prefix rule */
    cur = make_cur(buf, l, 4);
    apply1(npl_sampler_init_top_k(4), &cur);
    apply1(npl_sampler_init_min_p(0.05f, 0), &cur);
    CHECK(ids_are(&cur, (const int32_t[]){ 1, 0, 3 }, 3));
}

/* ----------------------------------------------------- temperature, greedy */
static void test_temp_greedy(void) {
    npl_token_data buf[MAXN];
    npl_token_data_array cur;
    const float l[3] = { 1.0f, -2.0f, 0.5f };

    cur = make_cur(buf, l, 3);
    apply1(npl_sampler_init_temp(0.5f), &cur);
    CHECK(cur.data[0].logit == 2.0f && cur.data[1].logit == -4.0f && cur.data[2].logit == 1.0f);
    cur = make_cur(buf, l, 3);
    apply1(npl_sampler_init_temp(2.0f), &cur);
    CHECK(cur.data[0].logit == 0.5f && cur.data[1].logit == -1.0f && cur.data[2].logit == 0.25f);

    /* temp <= 0 keeps the first maximum only */
    const float t[4] = { 3.0f, 1.0f, 3.0f, -1.0f };
    cur = make_cur(buf, t, 4);
    apply1(npl_sampler_init_temp(0.0f), &cur);
    CHECK(cur.data[0].logit == 3.0f);
    CHECK(isinf(cur.data[1].logit) && isinf(cur.data[2].logit) && isinf(cur.data[3].logit));

    const float g[5] = { -1.0f, 7.0f, 2.0f, 7.0f, 6.9f };
    cur = make_cur(buf, g, 5);
    apply1(npl_sampler_init_greedy(), &cur);
    CHECK_EQ_INT(cur.selected, 1);   /* first of the tied maxima */
    CHECK_EQ_INT(cur.size, 5);

    /* greedy chain from params (temp 0): argmax of raw logits */
    npl_sampler_params p = npl_sampler_default_params();
    p.temp = 0.0f;
    char err[256] = "";
    npl_sampler *c = npl_sampler_chain_from_params(&p, 5, err, sizeof err);
    CHECK(c != NULL);
    CHECK_EQ_INT(npl_sampler_chain_n(c), 2);
    CHECK(strcmp(npl_sampler_name(npl_sampler_chain_get(c, 0)), "penalties") == 0);
    CHECK(strcmp(npl_sampler_name(npl_sampler_chain_get(c, 1)), "greedy") == 0);
    int32_t tok = -1;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(npl_sampler_sample(c, g, 5, &tok), 0);
        CHECK_EQ_INT(tok, 1);
    }
    npl_sampler_free(c);
}

/* ------------------------------------------------------------ penalties */
static void test_penalties(void) {
    npl_token_data buf[MAXN];
    npl_token_data_array cur;
    const float l[6] = { 1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 5.0f };

    npl_sampler *s = npl_sampler_init_penalties(6, 3, 2.0f, 0.5f, 0.25f);
    CHECK(s != NULL);
    const int32_t seen[] = { 1, 4, 2, 2, 3, 99, -5 };   /* window of 3: 2, 2, 3; ids out of range ignored */
    npl_sampler_accept(s, 1);
    npl_sampler_accept(s, 4);
    npl_sampler_accept(s, 2);
    npl_sampler_accept(s, 2);
    npl_sampler_accept(s, 3);
    npl_sampler_accept(s, seen[5]);
    npl_sampler_accept(s, seen[6]);
    cur = make_cur(buf, l, 6);
    cur.sorted = 1;
    npl_sampler_apply(s, &cur);
    CHECK(cur.data[0].logit == 1.0f);       /* never seen */
    CHECK(cur.data[1].logit == 2.0f);       /* evicted */
    CHECK(cur.data[4].logit == 0.0f);       /* evicted */
    CHECK(cur.data[2].logit == 3.0f / 2.0f - (2 * 0.5f + 0.25f));   /* count 2, logit > 0: divide */
    CHECK(cur.data[3].logit == -1.0f * 2.0f - (1 * 0.5f + 0.25f));  /* count 1, logit <= 0: multiply */
    CHECK(cur.data[5].logit == 5.0f);
    CHECK(!cur.sorted);

    /* logit exactly 0 of a seen token: multiplied (stays 0), then shifted */
    npl_sampler_reset(s);
    npl_sampler_accept(s, 4);
    cur = make_cur(buf, l, 6);
    npl_sampler_apply(s, &cur);
    CHECK(cur.data[4].logit == 0.0f - 0.75f);
    CHECK(cur.data[2].logit == 3.0f);       /* reset forgot token 2 */
    npl_sampler_free(s);

    /* last_n = -1: whole history; repeat only */
    s = npl_sampler_init_penalties(6, -1, 1.5f, 0.0f, 0.0f);
    for (int i = 0; i < 100; i++) npl_sampler_accept(s, 5);
    npl_sampler_accept(s, 3);
    cur = make_cur(buf, l, 6);
    npl_sampler_apply(s, &cur);
    CHECK(cur.data[5].logit == 5.0f / 1.5f);
    CHECK(cur.data[3].logit == -1.5f);
    npl_sampler_free(s);

    /* last_n = 0 and neutral values: no-op */
    s = npl_sampler_init_penalties(6, 0, 2.0f, 1.0f, 1.0f);
    npl_sampler_accept(s, 2);
    cur = make_cur(buf, l, 6);
    npl_sampler_apply(s, &cur);
    CHECK(cur.data[2].logit == 3.0f);
    npl_sampler_free(s);
    s = npl_sampler_init_penalties(6, 64, 1.0f, 0.0f, 0.0f);
    npl_sampler_accept(s, 2);
    cur = make_cur(buf, l, 6);
    npl_sampler_apply(s, &cur);
    CHECK(cur.data[2].logit == 3.0f);
    npl_sampler_free(s);

    /* in a chain, sampled tokens are accepted: greedy + strong presence
     * penalty must alternate between the two best tokens */
    npl_sampler *c = npl_sampler_chain_init(3);
    CHECK_EQ_INT(npl_sampler_chain_add(c, npl_sampler_init_penalties(3, 1, 1.0f, 0.0f, 10.0f)), 0);
    CHECK_EQ_INT(npl_sampler_chain_add(c, npl_sampler_init_greedy()), 0);
    const float g[3] = { 2.0f, 1.0f, 0.0f };
    int32_t tok = -1, seq[4];
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(npl_sampler_sample(c, g, 3, &tok), 0);
        seq[i] = tok;
    }
    CHECK(seq[0] == 0 && seq[1] == 1 && seq[2] == 0 && seq[3] == 1);
    npl_sampler_free(c);
}

/* ---------------------------------------------------------------- seeds */
static void draw_seq(uint32_t seed, int32_t *out, int n) {
    enum { V = 50 };
    float l[V];
    for (int i = 0; i < V; i++) l[i] = 0.1f * (float)(i % 17);
    npl_sampler_params p = npl_sampler_default_params();
    p.seed = seed;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.temp = 1.0f;
    npl_sampler *c = npl_sampler_chain_from_params(&p, V, NULL, 0);
    CHECK(c != NULL);
    for (int i = 0; i < n; i++) CHECK_EQ_INT(npl_sampler_sample(c, l, V, &out[i]), 0);
    /* reset re-seeds: the same sequence again */
    npl_sampler_reset(c);
    int same = 1;
    for (int i = 0; i < n; i++) {
        int32_t t;
        npl_sampler_sample(c, l, V, &t);
        same &= t == out[i];
    }
    CHECK(same);
    npl_sampler_free(c);
}

static void test_seeds(void) {
    enum { N = 200 };
    int32_t a[N], b[N], d[N];
    draw_seq(1234, a, N);
    draw_seq(1234, b, N);
    draw_seq(1235, d, N);
    CHECK(memcmp(a, b, sizeof a) == 0);
    int diff = 0;
    for (int i = 0; i < N; i++) diff += a[i] != d[i];
    CHECK(diff > N / 2);
}

/* --------------------------------------------------------- distribution */
/* Draws many samples and compares the frequencies to `want` within 5
 * standard deviations of a binomial count. */
static void check_freq(npl_sampler *c, const float *l, int n, const double *want, int draws) {
    long cnt[MAXN] = { 0 };
    for (int i = 0; i < draws; i++) {
        int32_t t = -1;
        if (npl_sampler_sample(c, l, n, &t) != 0 || t < 0 || t >= n) {
            CHECK(0);
            return;
        }
        cnt[t]++;
    }
    for (int i = 0; i < n; i++) {
        double sd = sqrt(want[i] * (1.0 - want[i]) / draws);
        CHECK_NEAR((double)cnt[i] / draws, want[i], 5.0 * sd + 1e-12);
    }
}

static void test_distribution(void) {
    enum { V = 6, DRAWS = 200000 };
    const float l[V] = { 0.0f, 1.0f, 2.0f, -1.0f, 0.5f, 1.7f };
    double want[V], z = 0.0;

    /* dist alone: softmax of the logits */
    for (int i = 0; i < V; i++) z += exp(l[i]);
    for (int i = 0; i < V; i++) want[i] = exp(l[i]) / z;
    npl_sampler *c = npl_sampler_chain_init(V);
    CHECK_EQ_INT(npl_sampler_chain_add(c, npl_sampler_init_dist(7)), 0);
    check_freq(c, l, V, want, DRAWS);
    /* the probabilities dist leaves behind are the softmax too */
    const npl_token_data_array *cur = npl_sampler_chain_candidates(c);
    CHECK_EQ_INT(cur->size, V);
    for (size_t i = 0; i < cur->size; i++) CHECK_NEAR(cur->data[i].p, want[cur->data[i].id], 1e-6);
    npl_sampler_free(c);

    /* top-k 3 then temperature 0.5: softmax(l/0.5) over ids 2, 5, 1 */
    c = npl_sampler_chain_init(V);
    npl_sampler_chain_add(c, npl_sampler_init_top_k(3));
    npl_sampler_chain_add(c, npl_sampler_init_temp(0.5f));
    npl_sampler_chain_add(c, npl_sampler_init_dist(99));
    z = 0.0;
    for (int i = 0; i < V; i++) want[i] = 0.0;
    const int keep[3] = { 2, 5, 1 };
    for (int k = 0; k < 3; k++) z += exp(l[keep[k]] / 0.5);
    for (int k = 0; k < 3; k++) want[keep[k]] = exp(l[keep[k]] / 0.5) / z;
    check_freq(c, l, V, want, DRAWS);
    npl_sampler_free(c);

    /* the default chain (penalties, top_k 40, top_p .95, min_p .05, temp .8,
     * dist). softmax(l) = .397 .294 .146 .089 .054 .020 for ids 2 5 1 4 0 3:
     * top-p keeps five (cum .980), min-p keeps those five (id 0 is at
     * e^-2 = .135 of the max), then temperature 0.8 */
    npl_sampler_params p = npl_sampler_default_params();
    p.seed = 5;
    char err[256] = "";
    c = npl_sampler_chain_from_params(&p, V, err, sizeof err);
    CHECK(c != NULL);
    CHECK_EQ_INT(npl_sampler_chain_n(c), 6);
    const char *names[6] = { "penalties", "top-k", "top-p", "min-p", "temp", "dist" };
    for (int i = 0; i < 6; i++) CHECK(strcmp(npl_sampler_name(npl_sampler_chain_get(c, i)), names[i]) == 0);
    /* expected set computed from the rules in double: top-p over softmax(l) */
    double sp[V], zz = 0.0;
    for (int i = 0; i < V; i++) zz += exp(l[i]);
    for (int i = 0; i < V; i++) sp[i] = exp(l[i]) / zz;
    const int order[V] = { 2, 5, 1, 4, 0, 3 };
    int kept = 0;
    double cum = 0.0;
    while (kept < V) {
        cum += sp[order[kept++]];
        if (cum >= 0.95) break;
    }
    /* then min-p 0.05 relative to the max logit 2.0 */
    int kept2 = 0;
    for (int k = 0; k < kept; k++)
        if (l[order[k]] >= 2.0f + logf(0.05f)) kept2++;
    for (int i = 0; i < V; i++) want[i] = 0.0;
    z = 0.0;
    for (int k = 0; k < kept2; k++) z += exp(l[order[k]] / 0.8);
    for (int k = 0; k < kept2; k++) want[order[k]] = exp(l[order[k]] / 0.8) / z;
    CHECK_EQ_INT(kept2, 5);
    check_freq(c, l, V, want, DRAWS);
    npl_sampler_free(c);
}

/* --------------------------------------------------------------- errors */
static void test_errors(void) {
    char err[256] = "";
    npl_sampler_params p = npl_sampler_default_params();
    p.temp = NAN;
    CHECK(npl_sampler_chain_from_params(&p, 10, err, sizeof err) == NULL);
    CHECK(strstr(err, "temp") != NULL);
    p = npl_sampler_default_params();
    CHECK(npl_sampler_chain_from_params(&p, 0, err, sizeof err) == NULL);
    CHECK(strstr(err, "n_vocab") != NULL);
    p.repeat_last_n = -2;
    CHECK(npl_sampler_chain_from_params(&p, 10, err, sizeof err) == NULL);
    CHECK(strstr(err, "repeat_last_n") != NULL);
    p = npl_sampler_default_params();
    p.n_stages = 1;
    p.stages[0] = (npl_sampler_stage)42;
    CHECK(npl_sampler_chain_from_params(&p, 10, err, sizeof err) == NULL);
    CHECK(strstr(err, "stages[0]") != NULL);

    const float l[4] = { 0.0f, 1.0f, 2.0f, 3.0f };
    npl_sampler *c = npl_sampler_chain_init(4);
    int32_t tok = -7;
    CHECK_EQ_INT(npl_sampler_sample(c, l, 4, &tok), -1);   /* no selector */
    CHECK(strstr(npl_sampler_last_error(c), "no token selected") != NULL);
    CHECK_EQ_INT(tok, -7);
    npl_sampler_chain_add(c, npl_sampler_init_dist(1));
    CHECK_EQ_INT(npl_sampler_sample(c, l, 3, &tok), -1);   /* wrong vocab size */
    CHECK(strstr(npl_sampler_last_error(c), "n_vocab 4") != NULL);
    const float ninf[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    CHECK_EQ_INT(npl_sampler_sample(c, ninf, 4, &tok), -1);
    CHECK_EQ_INT(npl_sampler_sample(c, l, 4, &tok), 0);
    CHECK(npl_sampler_last_error(c)[0] == '\0');
    CHECK_EQ_INT(npl_sampler_chain_add(NULL, npl_sampler_init_greedy()), -1);   /* freed, no leak */
    CHECK_EQ_INT(npl_sampler_chain_n(npl_sampler_chain_get(c, 0)), -1);
    CHECK(strcmp(npl_sampler_last_error(npl_sampler_chain_get(c, 0)), "not a sampler chain") == 0);
    npl_sampler_free(c);
    npl_sampler_free(NULL);
}

/* ------------------------------------------------------------ MNN config */
static int mnn(const char *json, npl_sampler_params *p, char *err, size_t errlen) {
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL);
    int rc = npl_sampler_params_from_mnn(p, j, err, errlen);
    cJSON_Delete(j);
    return rc;
}

static int stages_are(const npl_sampler_params *p, const npl_sampler_stage *st, int n) {
    if (p->n_stages != n) return 0;
    for (int i = 0; i < n; i++)
        if (p->stages[i] != st[i]) return 0;
    return 1;
}

static void test_mnn(void) {
    char err[256];
    npl_sampler_params p, d = npl_sampler_default_params();

    /* no sampler_type: present keys override, stages stay */
    p = d;
    CHECK_EQ_INT(mnn("{\"temperature\": 0.3, \"topK\": 7, \"unrelated\": [1]}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.temp, 0.3, 1e-7);
    CHECK_EQ_INT(p.top_k, 7);
    CHECK_NEAR(p.top_p, 0.95, 1e-7);
    CHECK_EQ_INT(p.n_stages, d.n_stages);

    /* greedy */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"greedy\", \"temperature\": 0.7}", &p, err, sizeof err), 0);
    CHECK(p.temp <= 0.0f);
    CHECK_EQ_INT(p.n_stages, 0);

    /* temperature with MNN's default 1.0 */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"temperature\"}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.temp, 1.0, 0);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_TEMP }, 1));

    /* topK; top_k (snake case) wins over topK when >= 0 */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"topK\", \"top_k\": 5, \"topK\": 50, \"temperature\": 0.5}",
                     &p, err, sizeof err), 0);
    CHECK_EQ_INT(p.top_k, 5);
    CHECK_NEAR(p.temp, 0.5, 0);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_TOP_K, NPL_SAMPLER_STAGE_TEMP }, 2));

    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"topP\"}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.top_p, 0.9, 1e-7);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_TOP_P, NPL_SAMPLER_STAGE_TEMP }, 2));

    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"minP\", \"minP\": 0.2}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.min_p, 0.2, 1e-7);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_MIN_P, NPL_SAMPLER_STAGE_TEMP }, 2));

    /* penalty: whole history, greedy selection by default */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"penalty\", \"penalty\": 1.1, \"n_gram\": 8}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.repeat_penalty, 1.1, 1e-6);
    CHECK_EQ_INT(p.repeat_last_n, -1);
    CHECK(p.temp <= 0.0f);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_PENALTIES }, 1));
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"penalty\", \"penalty\": 0.5, \"penalty_sampler\": \"temperature\","
                     " \"temperature\": 0.9}", &p, err, sizeof err), 0);
    CHECK_NEAR(p.repeat_penalty, 1.0, 0);   /* MNN: penalty <= 1 is off */
    CHECK_NEAR(p.temp, 0.9, 1e-7);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_PENALTIES, NPL_SAMPLER_STAGE_TEMP }, 2));

    /* mixed with MNN's default list: topK, tfs, typical, topP, min_p, temperature */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"mixed\"}", &p, err, sizeof err), 0);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_TOP_K, NPL_SAMPLER_STAGE_TOP_P,
                                                      NPL_SAMPLER_STAGE_MIN_P, NPL_SAMPLER_STAGE_TEMP }, 4));
    CHECK_EQ_INT(p.top_k, 40);
    CHECK_NEAR(p.top_p, 0.9, 1e-7);
    CHECK_NEAR(p.min_p, 0.1, 1e-7);
    CHECK_NEAR(p.temp, 1.0, 0);

    /* mixed ending in greedy; order preserved; temperature added when absent */
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"mixed\", \"mixed_samplers\": [\"penalty\", \"topK\", \"greedy\"],"
                     " \"penalty\": 1.2}", &p, err, sizeof err), 0);
    CHECK(p.temp <= 0.0f);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_PENALTIES, NPL_SAMPLER_STAGE_TOP_K }, 2));
    p = d;
    CHECK_EQ_INT(mnn("{\"sampler_type\": \"mixed\", \"mixed_samplers\": [\"topP\", \"topK\"]}", &p, err, sizeof err), 0);
    CHECK(stages_are(&p, (const npl_sampler_stage[]){ NPL_SAMPLER_STAGE_TOP_P, NPL_SAMPLER_STAGE_TOP_K,
                                                      NPL_SAMPLER_STAGE_TEMP }, 3));
    /* the mapped params build a working chain */
    npl_sampler *c = npl_sampler_chain_from_params(&p, 16, err, sizeof err);
    CHECK(c != NULL);
    CHECK_EQ_INT(npl_sampler_chain_n(c), 4);
    npl_sampler_free(c);

    /* errors name the key, leave params untouched */
    const struct { const char *json, *needle; } bad[] = {
        { "{\"topK\": \"40\"}", "topK: expected a number, got a string" },
        { "{\"topK\": 4.5}", "topK: expected an integer" },
        { "{\"temperature\": true}", "temperature: expected a number, got a boolean" },
        { "{\"sampler_type\": 3}", "sampler_type: expected a string, got a number" },
        { "{\"sampler_type\": \"beam\"}", "sampler_type: unknown 'beam'" },
        { "{\"sampler_type\": \"mixed\", \"mixed_samplers\": \"topK\"}", "mixed_samplers: expected an array" },
        { "{\"sampler_type\": \"mixed\", \"mixed_samplers\": [\"topK\", 2]}", "mixed_samplers[1]: expected a string" },
        { "{\"sampler_type\": \"mixed\", \"mixed_samplers\": [\"nucleus\"]}", "mixed_samplers[0]: unknown sampler" },
        { "{\"sampler_type\": \"mixed\", \"tfsZ\": 0.95}", "tfsZ = 0.95 is not supported" },
        { "{\"sampler_type\": \"penalty\", \"penalty_sampler\": \"beam\"}", "penalty_sampler: unknown" },
        { "{\"ngram_factor\": 2.0}", "ngram_factor" },
        { "{\"n_gram\": 0}", "n_gram" },
        { "[1, 2]", "expected a JSON object" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = d;
        err[0] = '\0';
        CHECK_EQ_INT(mnn(bad[i].json, &p, err, sizeof err), -1);
        if (!strstr(err, bad[i].needle)) {
            fprintf(stderr, "  case %zu: message '%s' lacks '%s'\n", i, err, bad[i].needle);
            CHECK(0);
        }
        CHECK(memcmp(&p, &d, sizeof p) == 0);
    }

    /* user strings in messages: control and non-ASCII bytes escaped, long
     * ones shortened, so every message is one line */
    const struct { const char *json, *needle; } esc[] = {
        { "{\"sampler_type\": \"penalty\\n\"}", "sampler_type: unknown 'penalty\\x0a' (expected" },
        { "{\"sampler_type\": \"a\\r\\nb\\u001b[2J\\t\\\\\"}", "unknown 'a\\x0d\\x0ab\\x1b[2J\\x09\\x5c'" },
        { "{\"sampler_type\": \"caf\\u00e9\"}", "unknown 'caf\\xc3\\xa9'" },
        { "{\"sampler_type\": \"penalty\", \"penalty_sampler\": \"greedy\\n\\n\"}",
          "penalty_sampler: unknown 'greedy\\x0a\\x0a'" },
        { "{\"sampler_type\": \"mixed\", \"mixed_samplers\": [\"topK\", \"\\ntopP\"]}",
          "mixed_samplers[1]: unknown sampler '\\x0atopP'" },
        { "{\"sampler_type\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
          "unknown 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (expected" },
    };
    for (size_t i = 0; i < sizeof esc / sizeof esc[0]; i++) {
        p = d;
        err[0] = '\0';
        CHECK_EQ_INT(mnn(esc[i].json, &p, err, sizeof err), -1);
        if (!strstr(err, esc[i].needle)) {
            fprintf(stderr, "  escape case %zu: message '%s' lacks '%s'\n", i, err, esc[i].needle);
            CHECK(0);
        }
        for (const char *c = err; *c; c++) CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
        CHECK(memcmp(&p, &d, sizeof p) == 0);
    }
}

/* ------------------------------------------------ full vocab, repeated use */
static void test_large_vocab(void) {
    enum { V = 262144 };
    float *l = malloc(V * sizeof *l);
    uint32_t x = 12345;
    for (int i = 0; i < V; i++) {
        x = x * 1664525u + 1013904223u;
        l[i] = (float)(x >> 8) / (float)(1u << 24) * 20.0f - 10.0f;
    }
    npl_sampler_params p = npl_sampler_default_params();
    p.seed = 3;
    p.repeat_penalty = 1.3f;
    char err[256] = "";
    npl_sampler *c = npl_sampler_chain_from_params(&p, V, err, sizeof err);
    CHECK(c != NULL);
    int ok = 1;
    for (int i = 0; i < 20; i++) {
        int32_t t = -1;
        ok &= npl_sampler_sample(c, l, V, &t) == 0 && t >= 0 && t < V;
        /* among the 40 largest penalized logits; each of the i tokens
         * penalized so far can have dropped below it */
        int above = 0;
        for (int j = 0; j < V && ok; j++) above += l[j] > l[t];
        ok &= above < 40 + i;
    }
    CHECK(ok);
    /* top_k off: top-p over the whole unsorted vocabulary */
    npl_sampler_free(c);
    p.top_k = 0;
    c = npl_sampler_chain_from_params(&p, V, err, sizeof err);
    int32_t t = -1;
    CHECK_EQ_INT(npl_sampler_sample(c, l, V, &t), 0);
    CHECK(t >= 0 && t < V);
    /* logits uniform in [-10, 10]: top-p .95 needs the ~15% above 7, far
     * past the first widening, and min-p (max - 3) keeps about as many */
    const npl_token_data_array *cur = npl_sampler_chain_candidates(c);
    CHECK(cur->size > 4096 && cur->size < V / 4);
    ok = cur->sorted;
    for (size_t i = 1; i < cur->size; i++) ok &= cur->data[i - 1].logit >= cur->data[i].logit;
    CHECK(ok);
    npl_sampler_free(c);
    free(l);
}

int main(void) {
    test_top_k();
    test_top_p();
    test_min_p();
    test_temp_greedy();
    test_penalties();
    test_seeds();
    test_distribution();
    test_errors();
    test_mnn();
    test_large_vocab();
    TEST_MAIN_END();
}
