/* Hyperparameters from GGUF metadata, validated before any graph is built. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/nn_kernels.h"
#include "models/model.h"

static const struct {
    const char *name;
    npl_arch arch;
} arch_names[] = {
    {"llama", NPL_ARCH_LLAMA}, {"qwen2", NPL_ARCH_QWEN2}, {"qwen3", NPL_ARCH_QWEN3}, {"gemma3", NPL_ARCH_GEMMA3},
    {"gemma2", NPL_ARCH_GEMMA2}, {"granite", NPL_ARCH_GRANITE}, {"smollm3", NPL_ARCH_SMOLLM3},
    {"phi3", NPL_ARCH_PHI3},
    {"mistral3", NPL_ARCH_MISTRAL3},
    {"gemma4", NPL_ARCH_GEMMA4},
};

const char *npl_arch_supported_list(void) { return "llama, qwen2, qwen3, gemma3, gemma2, granite, smollm3, phi3, mistral3, gemma4"; }

int npl_hparams_layer_is_swa(const npl_hparams *hp, int il) {
    if (hp->arch == NPL_ARCH_GEMMA4) return il >= 0 && il < hp->n_layer && il < NPL_MAX_SWA_LAYERS && hp->layer_swa[il];
    return hp->n_swa > 0 && hp->swa_pattern > 0 && (il + 1) % hp->swa_pattern != 0;
}

int npl_hparams_kv_layer(const npl_hparams *hp, int il) {
    if (hp->n_layer_kv <= 0 || il < hp->n_layer_kv) return il;
    return hp->n_layer_kv - (npl_hparams_layer_is_swa(hp, il) ? 2 : 1);
}

typedef struct {
    const npl_gguf *f;
    const char *arch;
    char *err;
    size_t errlen;
    int failed;
} reader;

static void fail(reader *r, const char *key, const char *what) {
    if (r->failed) return;
    snprintf(r->err, r->errlen, "%s: %s: %s", npl_gguf_path(r->f), key, what);
    r->failed = 1;
}

/* Integer `arch.suffix`, required unless def >= 0; must lie in [lo, hi]. */
static int get_int(reader *r, const char *suffix, int64_t def, int64_t lo, int64_t hi) {
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", r->arch, suffix);
    int64_t v;
    int rc = npl_gguf_get_i64(r->f, key, &v);
    if (rc == -1) {
        if (def < 0) fail(r, key, "missing");
        return (int)def;
    }
    if (rc != 0) {
        fail(r, key, "not an integer");
        return 0;
    }
    if (v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof(what), "%lld out of range [%lld, %lld]", (long long)v, (long long)lo, (long long)hi);
        fail(r, key, what);
        return 0;
    }
    return (int)v;
}

static float get_float(reader *r, const char *suffix, float def, int required) {
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", r->arch, suffix);
    float v;
    int rc = npl_gguf_get_f32(r->f, key, &v);
    if (rc == -1) {
        if (required) fail(r, key, "missing");
        return def;
    }
    if (rc != 0 || !isfinite(v)) {
        fail(r, key, rc ? "not a float" : "not finite");
        return def;
    }
    return v;
}

/* rope.scaling.* as llama.cpp reads them for these architectures
 * (llama-model.cpp load_hparams, llama-context.cpp): the type (default
 * "linear"), the factor (or the older rope.scale_linear; 0 = none), the
 * magnitude rope.scaling.attn_factor and yarn's original context length.
 * Types it has but we do not implement are refused, and so are the yarn_*
 * tuning keys llama.cpp ignores for these architectures unless they hold the
 * value it uses anyway: a file that means something else is not run silently. */
static void read_rope_scaling(reader *r, npl_hparams *hp) {
    char key[128];
    snprintf(key, sizeof(key), "%s.rope.scaling.type", r->arch);
    npl_gguf_str t = {"linear", 6};
    int rc = npl_gguf_get_str(r->f, key, &t);
    if (rc == -2 || (rc == 0 && !t.ptr)) {
        fail(r, key, "not a string");
        return;
    }
    static const struct {
        const char *name;
        npl_rope_scaling type;
    } types[] = {{"none", NPL_ROPE_SCALING_NONE}, {"linear", NPL_ROPE_SCALING_LINEAR}, {"yarn", NPL_ROPE_SCALING_YARN}};
    int found = 0;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (t.len == strlen(types[i].name) && !memcmp(t.ptr, types[i].name, t.len)) {
            hp->rope_scaling = types[i].type;
            found = 1;
        }
    if (!found) {
        char what[160];
        snprintf(what, sizeof(what), "'%.*s' is not supported (supported: none, linear, yarn)",
                 (int)(t.len > 32 ? 32 : t.len), t.ptr);
        fail(r, key, what);
        return;
    }
    snprintf(key, sizeof(key), "%s.rope.scaling.factor", r->arch);
    int has_factor = npl_gguf_find_key(r->f, key) >= 0;
    float factor = get_float(r, has_factor ? "rope.scaling.factor" : "rope.scale_linear", 0.0f, 0);
    if (!has_factor) snprintf(key, sizeof(key), "%s.rope.scale_linear", r->arch);
    if (!r->failed && factor < 0) fail(r, key, "must not be negative");
    hp->rope_freq_scale = factor == 0.0f || hp->rope_scaling == NPL_ROPE_SCALING_NONE ? 1.0f : 1.0f / factor;
    float attn_key = get_float(r, "rope.scaling.attn_factor", 1.0f, 0);
    snprintf(key, sizeof(key), "%s.rope.scaling.attn_factor", r->arch);
    if (!r->failed && !(attn_key > 0)) fail(r, key, "must be positive");
    hp->rope_n_ctx_orig = get_int(r, "rope.scaling.original_context_length", hp->n_ctx_train, 0, 1 << 24);
    if (hp->rope_n_ctx_orig == 0) hp->rope_n_ctx_orig = hp->n_ctx_train;
    hp->rope_ext_factor = hp->rope_scaling == NPL_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    hp->rope_beta_fast = 32.0f;
    hp->rope_beta_slow = 1.0f;
    hp->rope_attn_factor = 1.0f;
    /* mistral3 reads yarn's beta_fast / beta_slow and log multiplier (llama.cpp's models/mistral3.cpp) */
    const int yarn_keys = hp->arch == NPL_ARCH_MISTRAL3;
    float log_mul = 0.0f;
    if (yarn_keys) {
        hp->rope_beta_fast = get_float(r, "rope.scaling.yarn_beta_fast", 32.0f, 0);
        hp->rope_beta_slow = get_float(r, "rope.scaling.yarn_beta_slow", 1.0f, 0);
        log_mul = get_float(r, "rope.scaling.yarn_log_multiplier", 0.0f, 0);
    }
    if (hp->rope_ext_factor != 0) {
        /* llama.cpp's yarn magnitude get_mscale(f, 1) (or, with a log
         * multiplier m, get_mscale(f, 1) / get_mscale(f, m)), cancelled by
         * the 1 + 0.1 ln(factor) its rope kernel applies */
        const float f = 1.0f / hp->rope_freq_scale;
        const float ms = f <= 1.0f ? 1.0f : 0.1f * logf(f) + 1.0f;
        const float ms_all = f <= 1.0f ? 1.0f : 0.1f * log_mul * logf(f) + 1.0f;
        hp->rope_attn_factor = (log_mul != 0.0f ? ms / ms_all : ms) * (1.0f / (1.0f + 0.1f * logf(f)));
    }
    hp->rope_attn_factor *= attn_key;
    const struct {
        const char *suffix;
        float used;
    } ignored[] = {{"rope.scaling.yarn_ext_factor", hp->rope_ext_factor},
                   {"rope.scaling.yarn_attn_factor", 1.0f},
                   {"rope.scaling.yarn_beta_fast", hp->rope_beta_fast},
                   {"rope.scaling.yarn_beta_slow", hp->rope_beta_slow},
                   {"rope.scaling.yarn_log_multiplier", 0.0f},
                   {"rope.scaling.alpha", 0.0f}};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]) && !r->failed; i++) {
        if (yarn_keys && i >= 2 && i <= 4) continue; /* beta_fast, beta_slow, log_multiplier: read */
        float v = get_float(r, ignored[i].suffix, ignored[i].used, 0);
        if (!r->failed && v != ignored[i].used) {
            char what[160];
            snprintf(key, sizeof(key), "%s.%s", r->arch, ignored[i].suffix);
            snprintf(what, sizeof(what), "%g is not supported (llama.cpp ignores this key for %s and uses %g)", v,
                     r->arch, ignored[i].used);
            fail(r, key, what);
        }
    }
}

/* gemma4 (llama.cpp's models/gemma4.cpp load_arch_hparams and the shared
 * loader): a sliding-window flag per layer, the window, per-layer embeddings,
 * KV sharing, the sliding layers' own head size / rotary dims / RoPE base,
 * attention scale 1, embeddings times sqrt(n_embd), logits soft-capped (30
 * unless given). The cache rows are sized by the full layers' head size, so
 * the sliding layers' may not be larger (they are not in Gemma 4). */
static void read_gemma4(reader *r, npl_hparams *hp) {
    char key[128];
    snprintf(key, sizeof(key), "%s.attention.sliding_window_pattern", r->arch);
    int64_t ki = npl_gguf_find_key(r->f, key);
    if (ki < 0) { fail(r, key, "missing"); return; }
    if (npl_gguf_kv_type(r->f, ki) != NPL_GGUF_ARRAY || npl_gguf_arr_type(r->f, ki) != NPL_GGUF_BOOL)
        { fail(r, key, "not an array of bools"); return; }
    if (npl_gguf_arr_n(r->f, ki) != (uint64_t)hp->n_layer) {
        char what[96];
        snprintf(what, sizeof(what), "%llu entries for %d layers", (unsigned long long)npl_gguf_arr_n(r->f, ki),
                 hp->n_layer);
        { fail(r, key, what); return; }
    }
    if (hp->n_layer > NPL_MAX_SWA_LAYERS) {
        char what[96];
        snprintf(what, sizeof(what), "%d layers: at most %d are supported", hp->n_layer, NPL_MAX_SWA_LAYERS);
        { fail(r, key, what); return; }
    }
    const unsigned char *flags = npl_gguf_arr_data(r->f, ki);
    for (int il = 0; il < hp->n_layer; il++) hp->layer_swa[il] = flags[il] != 0;
    hp->n_swa = get_int(r, "attention.sliding_window", -1, 1, 1 << 24);
    hp->head_dim_swa = get_int(r, "attention.key_length_swa", hp->head_dim, 2, NPL_ATTN_MAX_HD);
    int vswa = get_int(r, "attention.value_length_swa", hp->head_dim_swa, 2, NPL_ATTN_MAX_HD);
    hp->n_rot_swa = get_int(r, "rope.dimension_count_swa", hp->n_rot, 2, NPL_ATTN_MAX_HD);
    hp->rope_base_swa = get_float(r, "rope.freq_base_swa", 10000.0f, 0);
    hp->n_embd_per_layer = get_int(r, "embedding_length_per_layer_input", -1, 0, 1 << 20);
    int shared = get_int(r, "attention.shared_kv_layers", 0, 0, hp->n_layer - 1);
    hp->final_softcap = get_float(r, "final_logit_softcapping", 30.0f, 0);
    if (r->failed) return;
    snprintf(key, sizeof(key), "%s.attention.value_length_swa", r->arch);
    if (vswa != hp->head_dim_swa) { fail(r, key, "differs from key_length_swa (unsupported)"); return; }
    snprintf(key, sizeof(key), "%s.attention.key_length_swa", r->arch);
    if (hp->head_dim_swa > hp->head_dim) { fail(r, key, "larger than key_length (unsupported)"); return; }
    snprintf(key, sizeof(key), "%s.rope.dimension_count_swa", r->arch);
    if (hp->n_rot_swa > hp->head_dim_swa || (hp->n_rot_swa & 1))
        { fail(r, key, "must be even and at most key_length_swa"); return; }
    snprintf(key, sizeof(key), "%s.final_logit_softcapping", r->arch);
    if (hp->final_softcap < 0) { fail(r, key, "must not be negative"); return; }
    snprintf(key, sizeof(key), "%s.rope.scaling.type", r->arch);
    if (hp->rope_scaling == NPL_ROPE_SCALING_YARN) { fail(r, key, "yarn is not supported for gemma4"); return; }
    hp->n_layer_kv = hp->n_layer - shared;
    snprintf(key, sizeof(key), "%s.attention.shared_kv_layers", r->arch);
    if (shared > 0 && hp->n_layer_kv < 2) { fail(r, key, "leaves fewer than 2 layers with a KV cache"); return; }
    /* a shared layer must read a cache of its own kind (llama.cpp's reuse
     * assumes the last two KV layers are sliding, then full) */
    for (int il = hp->n_layer_kv; il < hp->n_layer; il++) {
        int src = npl_hparams_kv_layer(hp, il);
        if (hp->layer_swa[src] != hp->layer_swa[il]) {
            char what[160];
            snprintf(what, sizeof(what), "layer %d (%s) would reuse the cache of layer %d (%s)", il,
                     hp->layer_swa[il] ? "sliding" : "full", src, hp->layer_swa[src] ? "sliding" : "full");
            { fail(r, key, what); return; }
        }
    }
    hp->attn_scale = 1.0f;
    hp->embd_scale = sqrtf((float)hp->n_embd);
}

int npl_hparams_load(const npl_gguf *f, npl_hparams *hp, char *err, size_t errlen) {
    memset(hp, 0, sizeof(*hp));
    npl_gguf_str a;
    if (npl_gguf_get_str(f, "general.architecture", &a) != 0) {
        snprintf(err, errlen, "%s: general.architecture: missing or not a string", npl_gguf_path(f));
        return -1;
    }
    int found = 0;
    for (size_t i = 0; i < sizeof(arch_names) / sizeof(arch_names[0]); i++)
        if (a.len == strlen(arch_names[i].name) && !memcmp(a.ptr, arch_names[i].name, a.len)) {
            hp->arch = arch_names[i].arch;
            snprintf(hp->arch_name, sizeof(hp->arch_name), "%s", arch_names[i].name);
            found = 1;
        }
    if (!found) {
        snprintf(err, errlen, "%s: general.architecture: '%.*s' is not supported (supported: %s)", npl_gguf_path(f),
                 (int)(a.len > 64 ? 64 : a.len), a.ptr, npl_arch_supported_list());
        return -1;
    }
    reader r = {f, hp->arch_name, err, errlen, 0};
    const int64_t BIG = 1 << 24;
    hp->n_ctx_train = get_int(&r, "context_length", -1, 1, BIG);
    hp->n_embd = get_int(&r, "embedding_length", -1, 1, BIG);
    hp->n_layer = get_int(&r, "block_count", -1, 1, 4096);
    hp->n_ff = get_int(&r, "feed_forward_length", -1, 1, BIG);
    hp->n_head = get_int(&r, "attention.head_count", -1, 1, 4096);
    hp->n_head_kv = get_int(&r, "attention.head_count_kv", hp->n_head, 1, 4096);
    if (r.failed) return -1;
    if (hp->n_head % hp->n_head_kv) {
        char key[128];
        snprintf(key, sizeof(key), "%s.attention.head_count_kv", hp->arch_name);
        char what[96];
        snprintf(what, sizeof(what), "%d heads are not a multiple of %d kv heads", hp->n_head, hp->n_head_kv);
        fail(&r, key, what);
        return -1;
    }
    /* the head size: attention.key_length, else n_embd / n_head; the
     * attention kernels take up to NPL_ATTN_MAX_HD (kernels/nn_kernels.h) */
    int def_hd = hp->n_embd % hp->n_head == 0 ? hp->n_embd / hp->n_head : -1;
    hp->head_dim = get_int(&r, "attention.key_length", def_hd, 2, BIG);
    char key[128];
    snprintf(key, sizeof(key), "%s.attention.key_length", hp->arch_name);
    if (!r.failed && hp->head_dim > NPL_ATTN_MAX_HD) {
        char what[160];
        snprintf(what, sizeof(what), "head size %d%s is larger than %d, the most the attention kernels take",
                 hp->head_dim, npl_gguf_find_key(f, key) < 0 ? " (embedding_length / head_count)" : "",
                 NPL_ATTN_MAX_HD);
        fail(&r, key, what);
    }
    if (!r.failed && hp->head_dim < 2) fail(&r, key, "head size (embedding_length / head_count) is below 2");
    int vlen = get_int(&r, "attention.value_length", hp->head_dim, 2, NPL_ATTN_MAX_HD);
    snprintf(key, sizeof(key), "%s.attention.value_length", hp->arch_name);
    if (!r.failed && vlen != hp->head_dim) fail(&r, key, "differs from key_length (unsupported)");
    hp->n_rot = get_int(&r, "rope.dimension_count", hp->head_dim, 2, hp->head_dim);
    snprintf(key, sizeof(key), "%s.rope.dimension_count", hp->arch_name);
    if (!r.failed && (hp->n_rot & 1)) fail(&r, key, "must be even");
    hp->norm_eps = get_float(&r, "attention.layer_norm_rms_epsilon", 1e-5f, 1);
    hp->rope_base = get_float(&r, "rope.freq_base", 10000.0f, 0);
    read_rope_scaling(&r, hp);
    hp->final_softcap = get_float(&r, "final_logit_softcapping", 0.0f, 0);
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->residual_scale = 1.0f;
    hp->logit_scale = 1.0f;
    /* llama.cpp's LLAMA_ROPE_TYPE_NORM architectures; the others are NEOX */
    hp->rope_neox = !(hp->arch == NPL_ARCH_LLAMA || hp->arch == NPL_ARCH_GRANITE || hp->arch == NPL_ARCH_SMOLLM3 ||
                      hp->arch == NPL_ARCH_MISTRAL3);
    hp->rope_base_swa = hp->rope_base;
    if (hp->arch == NPL_ARCH_GEMMA3) {
        /* as llama.cpp: 5 local layers to 1 global, local RoPE base rope.freq_base_swa (10k) */
        hp->n_swa = get_int(&r, "attention.sliding_window", 0, 0, BIG);
        hp->swa_pattern = 6;
        hp->rope_base_swa = get_float(&r, "rope.freq_base_swa", 10000.0f, 0);
        hp->embd_scale = sqrtf((float)hp->n_embd);
        if (hp->n_layer == 62) hp->attn_scale = 1.0f / sqrtf((float)hp->n_embd / hp->n_head); /* 27B */
    }
    if (hp->arch == NPL_ARCH_GEMMA2) {
        /* llama.cpp's gemma2: 1 local layer to 1 global (window 4096 unless
         * given), one RoPE base unless rope.freq_base_swa, scores and logits
         * soft-capped (defaults 50 and 30), q scaled by 1/sqrt(head size) or,
         * for the 27B (46 layers), 1/sqrt(n_embd / n_head) */
        hp->n_swa = get_int(&r, "attention.sliding_window", 4096, 0, BIG);
        hp->swa_pattern = 2;
        hp->rope_base_swa = get_float(&r, "rope.freq_base_swa", hp->rope_base, 0);
        hp->embd_scale = sqrtf((float)hp->n_embd);
        hp->attn_softcap = get_float(&r, "attn_logit_softcapping", 50.0f, 0);
        hp->final_softcap = get_float(&r, "final_logit_softcapping", 30.0f, 0);
        if (hp->n_layer == 46) hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
        snprintf(key, sizeof(key), "%s.attn_logit_softcapping", hp->arch_name);
        if (!r.failed && !(hp->attn_softcap > 0)) fail(&r, key, "must be positive");
        snprintf(key, sizeof(key), "%s.final_logit_softcapping", hp->arch_name);
        if (!r.failed && !(hp->final_softcap > 0)) fail(&r, key, "must be positive");
    }
    if (hp->arch == NPL_ARCH_GRANITE) {
        /* llama.cpp's granite: logit_scale required; embedding_scale,
         * residual_scale and attention.scale optional, 0 meaning none (the
         * attention scale then 1/sqrt(head size)) */
        hp->logit_scale = get_float(&r, "logit_scale", 1.0f, 1);
        float es = get_float(&r, "embedding_scale", 0.0f, 0), rs = get_float(&r, "residual_scale", 0.0f, 0);
        float as = get_float(&r, "attention.scale", 0.0f, 0);
        if (es != 0.0f) hp->embd_scale = es;
        if (rs != 0.0f) hp->residual_scale = rs;
        if (as != 0.0f) hp->attn_scale = as;
        snprintf(key, sizeof(key), "%s.logit_scale", hp->arch_name);
        if (!r.failed && !(hp->logit_scale != 0.0f)) fail(&r, key, "must not be 0");
    }
    /* phi3: llama.cpp ignores its attention.sliding_window (its SWA is
     * disabled); LongRoPE's factors are chosen by npl_model_build */
    if (hp->arch == NPL_ARCH_SMOLLM3) hp->nope_step = 4;
    if (hp->arch == NPL_ARCH_MISTRAL3) {
        /* Llama 4's attention temperature: q *= 1 + s * ln(floor(pos / F) + 1)
         * with F the original context length; 1 below F (npl_model_build
         * refuses a context reaching F) */
        hp->attn_temp_scale = get_float(&r, "attention.temperature_scale", 0.0f, 0);
        hp->attn_temp_floor = hp->rope_n_ctx_orig;
    } /* as llama.cpp: layers 3, 7, ... have no RoPE */
    if (hp->arch == NPL_ARCH_GEMMA4) read_gemma4(&r, hp);
    snprintf(key, sizeof(key), "%s.attention.layer_norm_rms_epsilon", hp->arch_name);
    if (!(hp->norm_eps > 0)) fail(&r, key, "must be positive");
    snprintf(key, sizeof(key), "%s.rope.freq_base", hp->arch_name);
    if (!(hp->rope_base > 0)) fail(&r, key, "must be positive");
    snprintf(key, sizeof(key), "%s.rope.freq_base_swa", hp->arch_name);
    if (!(hp->rope_base_swa > 0)) fail(&r, key, "must be positive");
    if (r.failed) return -1;
    const npl_gguf_tensor *emb = npl_gguf_find_tensor(f, "token_embd.weight");
    uint32_t nv;
    /* a package whose embedding is stored once, in a context binary (its
     * graph file's external weights), records the vocabulary size */
    if (!emb && npl_gguf_get_u32(f, "npullm.package.n_vocab", &nv) == 0 && nv > 0 && nv <= INT32_MAX) {
        hp->n_vocab = (int)nv;
        return 0;
    }
    if (!emb) {
        snprintf(err, errlen, "%s: tensor token_embd.weight: missing", npl_gguf_path(f));
        return -1;
    }
    if (emb->n_dims != 2 || emb->ne[0] != hp->n_embd || emb->ne[1] > INT32_MAX) {
        snprintf(err, errlen, "%s: tensor token_embd.weight: shape [%lld, %lld] does not match n_embd %d",
                 npl_gguf_path(f), (long long)emb->ne[0], (long long)emb->ne[1], hp->n_embd);
        return -1;
    }
    hp->n_vocab = (int)emb->ne[1];
    return 0;
}
