/* Token samplers: a chain of small objects with one interface, the chain
 * itself a sampler (same semantics as llama.cpp's llama-sampling).
 *
 * A sampler transforms a candidates array in place (apply), may learn from
 * the token finally chosen (accept), can forget what it learned (reset) and
 * owns its context (free). Filters shrink `size`, reorder `data` and keep the
 * `sorted` flag honest; selectors (greedy, dist) set `selected`.
 *
 * The chain owns one candidates buffer sized for n_vocab at construction, so
 * npl_sampler_sample() allocates nothing per token.
 *
 * Ties: llama.cpp breaks ties in sort order arbitrarily (std::partial_sort);
 * here every sort orders by logit descending, then token id ascending, so
 * top-k with ties at the cut keeps the lower token ids. NaN logits sort last.
 *
 * Return convention: functions returning int give 0 on success and -1 on
 * failure; the message is in npl_sampler_last_error() of the chain (or in
 * the caller's err buffer for constructors).
 *
 * sampler.c: the samplers and the chain; sampler_params.c: the params,
 * the default chain and the MNN config mapping. */
#ifndef NPL_LLM_SAMPLER_H
#define NPL_LLM_SAMPLER_H
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* ---- candidates ---- */
typedef struct {
    int32_t id;     /* token id */
    float logit;
    float p;        /* probability, valid only after a sampler computed it */
} npl_token_data;

typedef struct {
    npl_token_data *data;
    size_t size;
    int64_t selected;   /* index into data, -1 until a selector ran */
    int sorted;         /* data[0..size) is ordered by logit descending */
} npl_token_data_array;

/* ---- the sampler interface ---- */
typedef struct npl_sampler npl_sampler;

/* Only apply is required. ctx is the pointer given to npl_sampler_init. */
typedef struct {
    const char *name;
    void (*apply)(void *ctx, npl_token_data_array *cur);
    void (*accept)(void *ctx, int32_t token);
    void (*reset)(void *ctx);
    void (*free)(void *ctx);
} npl_sampler_i;

/* Wrap a context into a sampler. iface must outlive the sampler. On
 * allocation failure calls iface->free(ctx) and returns NULL. */
npl_sampler *npl_sampler_init(const npl_sampler_i *iface, void *ctx);
const char *npl_sampler_name(const npl_sampler *s);
void npl_sampler_apply(npl_sampler *s, npl_token_data_array *cur);
void npl_sampler_accept(npl_sampler *s, int32_t token);
void npl_sampler_reset(npl_sampler *s);
void npl_sampler_free(npl_sampler *s);   /* NULL is a no-op */

/* ---- built-in samplers (NULL on allocation failure) ---- */
/* Selects the highest logit (first one on ties). */
npl_sampler *npl_sampler_init_greedy(void);
/* Softmax over the candidates, then draws one with a xoshiro256** stream
 * seeded from `seed` through splitmix64. NPL_SAMPLER_DEFAULT_SEED picks a
 * seed from the clock at init and at every reset. */
#define NPL_SAMPLER_DEFAULT_SEED 0xFFFFFFFFu
npl_sampler *npl_sampler_init_dist(uint32_t seed);
/* logit /= t; t <= 0 keeps only the maximum (others become -inf). */
npl_sampler *npl_sampler_init_temp(float t);
/* Keeps the k highest; k <= 0 is a no-op, k > size keeps all (sorted). */
npl_sampler *npl_sampler_init_top_k(int32_t k);
/* Keeps the smallest sorted prefix whose probability mass reaches p (and at
 * least min_keep); p >= 1 is a no-op. Computes p of every candidate. */
npl_sampler *npl_sampler_init_top_p(float p, size_t min_keep);
/* Keeps candidates with prob >= p * max prob, i.e. logit >= max + log(p)
 * (at least min_keep); p <= 0 is a no-op. */
npl_sampler *npl_sampler_init_min_p(float p, size_t min_keep);
/* Over the last `last_n` accepted tokens (-1: all since reset, 0: off), a
 * token seen `count` times gets: logit <= 0 ? logit *= repeat : logit /=
 * repeat; then logit -= count*freq + (count > 0)*present. Token ids outside
 * [0, n_vocab) are ignored by accept. Counts live in an n_vocab array. */
npl_sampler *npl_sampler_init_penalties(int32_t n_vocab, int32_t last_n,
                                        float repeat, float freq, float present);

/* ---- chain ---- */
/* An empty chain owning a candidates buffer for n_vocab tokens. */
npl_sampler *npl_sampler_chain_init(int32_t n_vocab);
/* Appends s; the chain takes ownership. On failure (not a chain, NULL s, no
 * memory) s is freed and -1 returned. */
int npl_sampler_chain_add(npl_sampler *chain, npl_sampler *s);
int npl_sampler_chain_n(const npl_sampler *chain);   /* -1 if not a chain */
npl_sampler *npl_sampler_chain_get(const npl_sampler *chain, int i);
int32_t npl_sampler_chain_n_vocab(const npl_sampler *chain);
/* Copies logits[0..n_vocab) into the chain's buffer, applies every sampler,
 * accepts the selected token into every sampler and stores it in *token.
 * Fails if n_vocab differs from the chain's, or no sampler selected. */
int npl_sampler_sample(npl_sampler *chain, const float *logits, int32_t n_vocab, int32_t *token);
/* The candidates left by the last npl_sampler_sample (size 0 before). */
const npl_token_data_array *npl_sampler_chain_candidates(const npl_sampler *chain);
/* Last error message of a chain ("" if none; "not a chain" otherwise). */
const char *npl_sampler_last_error(const npl_sampler *chain);

/* ---- parameters with llama.cpp's defaults (common_params_sampling) ---- */
typedef enum {
    NPL_SAMPLER_STAGE_PENALTIES = 0,
    NPL_SAMPLER_STAGE_TOP_K,
    NPL_SAMPLER_STAGE_TOP_P,
    NPL_SAMPLER_STAGE_MIN_P,
    NPL_SAMPLER_STAGE_TEMP,
    NPL_SAMPLER_STAGE_COUNT
} npl_sampler_stage;

#define NPL_SAMPLER_MAX_STAGES 8

typedef struct {
    uint32_t seed;            /* NPL_SAMPLER_DEFAULT_SEED: from the clock */
    float temp;               /* 0.80; <= 0 means greedy */
    int32_t top_k;            /* 40; <= 0 disables */
    float top_p;              /* 0.95; >= 1 disables */
    float min_p;              /* 0.05; <= 0 disables */
    int32_t min_keep;         /* 0 */
    float repeat_penalty;     /* 1.0 disables */
    int32_t repeat_last_n;    /* 64; 0 disables, -1 whole history */
    float freq_penalty;       /* 0.0 */
    float presence_penalty;   /* 0.0 */
    /* Filter order before the final selector: penalties, top_k, top_p,
     * min_p, temp (llama.cpp's default order without dry/typ/xtc). */
    int32_t n_stages;
    npl_sampler_stage stages[NPL_SAMPLER_MAX_STAGES];
} npl_sampler_params;

npl_sampler_params npl_sampler_default_params(void);

/* Builds the chain: the stages in order, then dist(seed). With temp <= 0
 * only the penalties stage is kept (the filters cannot change the argmax)
 * and the selector is greedy. NULL with a message in err on bad params or
 * no memory. */
npl_sampler *npl_sampler_chain_from_params(const npl_sampler_params *p, int32_t n_vocab,
                                           char *err, size_t errlen);

/* Maps MNN llm_config keys onto *p:
 *   sampler_type: "greedy" | "temperature" | "topK" | "topP" | "minP" |
 *                 "penalty" | "mixed" (with "mixed_samplers": [names]);
 *   temperature, topK/top_k, topP/top_p, minP/min_p, penalty, n_gram,
 *   ngram_factor, penalty_sampler ("greedy" | "temperature"), tfsZ/tfs_z,
 *   typical.
 * With sampler_type present the stages become exactly those MNN runs, and
 * absent values take MNN's defaults (temperature 1.0, topK 40, topP 0.9,
 * minP 0.1, penalty 0 = off). Without sampler_type only the present keys
 * override *p. MNN's penalty divides/multiplies over the whole history, so
 * it maps to repeat_penalty with repeat_last_n = -1 (penalty <= 1 is off).
 * Unsupported MNN features that would change results (tfsZ < 1, typical < 1,
 * ngram_factor > 1) and wrong types are errors: returns -1 with a message
 * naming the key in err, leaving *p unchanged. Unknown keys are ignored. */
int npl_sampler_params_from_mnn(npl_sampler_params *p, const struct cJSON *cfg,
                                char *err, size_t errlen);
#endif
