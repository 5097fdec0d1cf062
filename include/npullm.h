/* npullm — run large language models from GGUF files or compiled packages.
 *
 * One opaque handle, npl_engine, holds a loaded model and one conversation
 * (its KV cache, history and sampler). Handles share nothing: two engines
 * may be used from two threads at once. For several conversations on one
 * copy of the weights (a server), use npl_model and npl_session below. Every call returns a status; the
 * handle's last error message says what went wrong (file, field, what).
 * The code is set where the failure happens (a malformed file is
 * NPL_ERR_FILE, a failed allocation NPL_ERR_MEMORY, wherever it was) and
 * reaches the caller unchanged; npl_engine_open2 reports it for open.
 *
 *   npl_engine_params p = npl_engine_default_params();
 *   char err[256];
 *   npl_engine *e = npl_engine_open("model.gguf", &p, err, sizeof(err));
 *   npl_engine_chat(e, "Hello!", on_text, user_data);   // streams UTF-8 text
 *   npl_engine_close(e);
 *
 * Parameter structs only ever grow at the end. */
#ifndef NPULLM_H
#define NPULLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's public functions: libnpullm.so is built with hidden
 * visibility, so only these are exported (a test checks the export list). */
#ifndef NPL_API
#if defined(__GNUC__) || defined(__clang__)
#define NPL_API __attribute__((visibility("default")))
#else
#define NPL_API
#endif
#endif

/* Version of this header: the one source (CMakeLists.txt reads it for
 * project(VERSION)). npl_version() is the library's, which differs only when a
 * program runs against another build of the library. */
#define NPL_VERSION_MAJOR 0
#define NPL_VERSION_MINOR 1
#define NPL_VERSION_PATCH 0
#define NPL_VERSION_STR_(a, b, c) #a "." #b "." #c
#define NPL_VERSION_XSTR_(a, b, c) NPL_VERSION_STR_(a, b, c)
#define NPL_VERSION_STRING NPL_VERSION_XSTR_(NPL_VERSION_MAJOR, NPL_VERSION_MINOR, NPL_VERSION_PATCH)
NPL_API const char *npl_version(void);

typedef enum {
    NPL_OK = 0,
    NPL_DONE = 1,              /* generation ended normally (EOS/EOT, stop string, max tokens) */
    NPL_ERR_ARGUMENT = -1,     /* a bad argument: null, out of range, unknown name */
    NPL_ERR_FILE = -2,         /* a file is missing, unreadable or malformed */
    NPL_ERR_MEMORY = -3,       /* out of memory or over a configured budget */
    NPL_ERR_RUNTIME = -4,      /* a forward pass failed */
    NPL_CONTEXT_FULL = -5,     /* the context has no room for the prompt or the next token */
    NPL_CANCELLED = -6         /* npl_engine_cancel() was called */
} npl_status;

#define NPL_MAX_CHUNK_LIMITS 8

typedef struct {
    int n_ctx;                 /* context length; 0 = the model's, capped at 4096 */
    int n_threads;             /* 0 = one per core */
    int max_new_tokens;        /* per response; default 512 */
    const char *chat_template; /* "gemma", "chatml", "llama3", "llama2"; NULL = detect */
    const char *system_prompt; /* NULL = none */
    int use_template;          /* 1 = wrap prompts in the chat template (default; a model
                                  without tokenizer.chat_template has none unless
                                  chat_template names one) */
    /* sampling, llama.cpp's semantics and defaults */
    float temperature;         /* 0.8; <= 0 means greedy */
    int top_k;                 /* 40; <= 0 = off */
    float top_p;               /* 0.95 */
    float min_p;               /* 0.05 */
    float repeat_penalty;      /* 1.0 = off */
    int repeat_last_n;         /* 64 */
    float frequency_penalty;   /* 0 */
    float presence_penalty;    /* 0 */
    uint32_t seed;             /* 0xFFFFFFFF = from the clock */
    /* chunked prefill: sizes a prefill may run at (e.g. {128, 1}); 0 = any length */
    int n_chunk_limits;
    int chunk_limits[NPL_MAX_CHUNK_LIMITS];
    size_t kv_budget_bytes;    /* refuse a KV cache larger than this; 0 = 4 GiB */
    const char *stop;          /* an extra stop string, or NULL */
    int kernel_family;         /* -1 = best this CPU has; 0 plain C, 1 AVX2, 2 AVX-512, 3 AMX
                                  (aarch64: 1 NEON, 2 dotprod, 3 i8mm; capped at what the CPU has) */
    int arithmetic;            /* this engine's CPU arithmetic: 0 = ours (default); 1 = llama.cpp's RoPE,
                                  GEGLU and flash-attention rounding, 2 = the same without flash
                                  attention (verification runs against llama.cpp; slow) */
    int profile;               /* a package's accelerator step times, printed to stderr when the engine
                                  closes: 0 = off (default), 1 = per graph and op type, 2 = also each
                                  graph's steps, 3 = also the slowest steps */
    int repack_mib;            /* repacked weights, at most this many MiB (npl_model_params.repack_mib):
                                  0 = the default 48, -1 = none */
} npl_engine_params;

typedef struct {
    int prompt_tokens;         /* tokens prefilled for the last response */
    int decode_tokens;         /* tokens generated */
    double prefill_seconds, decode_seconds;
    double prefill_tps, decode_tps;
    double ttft_seconds;       /* time to first token */
    int n_past;                /* tokens in the KV cache */
    int reused_tokens;         /* prompt tokens whose KV rows the cache already held (prefix reuse,
                                  earlier turns): not prefilled. The whole prompt is
                                  prompt_tokens + reused_tokens */
    int finish;                /* why the last response ended: an npl_finish */
} npl_stats;

typedef enum {
    NPL_FINISH_NONE = 0,       /* running, or nothing generated yet */
    NPL_FINISH_EOG = 1,        /* the model ended its turn (EOS, EOT) */
    NPL_FINISH_STOP = 2,       /* a stop string */
    NPL_FINISH_LENGTH = 3,     /* the token limit */
    NPL_FINISH_CONTEXT = 4,    /* the context is full */
    NPL_FINISH_CANCELLED = 5,  /* cancelled, or the callback returned nonzero */
    NPL_FINISH_ERROR = 6       /* a forward pass or sampling failed */
} npl_finish;

typedef struct npl_engine npl_engine;

/* Called with each complete UTF-8 piece of text; return nonzero to stop. */
typedef int (*npl_text_cb)(const char *text, size_t len, void *user);

NPL_API npl_engine_params npl_engine_default_params(void);

/* Opens a GGUF file or an MNN-style config.json (llm_model, thread_num,
 * chunk_limits, sampler_type, ...). NULL on failure, with a message in err. */
NPL_API npl_engine *npl_engine_open(const char *path, const npl_engine_params *params, char *err, size_t errlen);
/* npl_engine_open that also says what went wrong: *status (if status is not
 * NULL) is NPL_OK, or NPL_ERR_ARGUMENT (a bad parameter), NPL_ERR_FILE (the
 * file is missing, unreadable or malformed), NPL_ERR_MEMORY (out of memory,
 * or the KV cache over kv_budget_bytes) or NPL_ERR_RUNTIME. */
NPL_API npl_engine *npl_engine_open2(const char *path, const npl_engine_params *params, npl_status *status, char *err,
                             size_t errlen);
NPL_API void npl_engine_close(npl_engine *e);

/* Appends a user turn (rendered through the chat template unless disabled),
 * prefills only the tokens the KV cache does not hold yet, and generates the
 * answer, streaming it to cb. Returns NPL_DONE, NPL_CONTEXT_FULL,
 * NPL_CANCELLED or an error. */
NPL_API npl_status npl_engine_chat(npl_engine *e, const char *user_text, npl_text_cb cb, void *user);
/* Raw completion of `text` after the current history (no template). */
NPL_API npl_status npl_engine_complete(npl_engine *e, const char *text, npl_text_cb cb, void *user);

/* Step API (ailia style): set a prompt, then take one token's text at a time.
 * npl_engine_next returns NPL_OK with a piece (maybe empty while a UTF-8
 * character is incomplete), or NPL_DONE / an error when generation ends. */
NPL_API npl_status npl_engine_set_prompt(npl_engine *e, const char *user_text);
NPL_API npl_status npl_engine_next(npl_engine *e, const char **text, size_t *len);

/* Forget the last n tokens of history (they are re-computed if needed). */
NPL_API npl_status npl_engine_rollback(npl_engine *e, int n_tokens);
/* Forget the whole conversation; keeps the model loaded. */
NPL_API npl_status npl_engine_reset(npl_engine *e);
/* Ask a running generation to stop; safe from any thread. */
NPL_API void npl_engine_cancel(npl_engine *e);
NPL_API npl_status npl_engine_stats(const npl_engine *e, npl_stats *out);
/* The message and the code of the last call on e that failed (a call that
 * returns an npl_status other than NPL_OK/NPL_DONE, or -1 from the tokenizer
 * calls); NPL_OK and "" while none has. */
NPL_API const char *npl_engine_last_error(const npl_engine *e);
NPL_API npl_status npl_engine_last_status(const npl_engine *e);
/* npl_model_notice of the engine's model: "" or one line to show once. */
NPL_API const char *npl_engine_notice(const npl_engine *e);
/* "ok", "done", "bad argument", "file error", "out of memory", ... */
NPL_API const char *npl_status_name(npl_status st);

/* Tokenizer access. Returns the token count (writes at most cap), or -1
 * with the last error set (NPL_ERR_ARGUMENT or NPL_ERR_MEMORY). */
NPL_API int64_t npl_engine_tokenize(npl_engine *e, const char *text, size_t len, int add_special, int parse_special,
                            int32_t *ids, int64_t cap);
/* Text of one token (bytes written or needed), -1 if id is out of range. */
NPL_API int npl_engine_token_to_piece(npl_engine *e, int32_t id, char *buf, int cap);
NPL_API int npl_engine_n_vocab(const npl_engine *e);

/* Logits of the next token after feeding `ids` at the end of the history
 * (teacher forcing; used by perplexity tools). Valid until the next call. */
NPL_API const float *npl_engine_eval(npl_engine *e, const int32_t *ids, int n, npl_status *status);

/* ---- config.json ----
 * The MNN-style config.json that npl_engine_open reads, for a program that
 * merges it with settings of its own (the CLI: defaults < config < flags). */
typedef struct npl_config npl_config;
/* 1 if path names a .json file (a config rather than a model). */
NPL_API int npl_config_is_json(const char *path);
/* Applies the file's keys over *p. The strings it sets in *p (system_prompt)
 * belong to the returned handle: keep it until p is no longer used. NULL on
 * failure with "PATH: KEY: what" in err and the code in *status. */
NPL_API npl_config *npl_config_load(const char *path, npl_engine_params *p, npl_status *status, char *err,
                                    size_t errlen);
/* The model the config names (llm_model, resolved against its directory). */
NPL_API const char *npl_config_model_path(const npl_config *c);
NPL_API void npl_config_free(npl_config *c);

/* ---- model and session ----
 * An npl_model is what one file holds: hyperparameters, vocabulary, chat
 * template and weights (a GGUF file, or a compiled package's graph and
 * context binaries), immutable once open. The weights are mapped once, by
 * the model: any number of npl_session on it share them. A session holds
 * one conversation: its KV cache, token history, sampler and stats. A
 * session is used by one thread at a time; sessions of one model may be
 * used from several threads at once.
 *
 * Threads: the model owns one thread pool (n_threads, 0 = one per core) and
 * its sessions run their forward passes on it one at a time, in the order
 * they asked (a FIFO lock around each forward: a decode step or a prefill
 * chunk). So N busy sessions never run more than n_threads threads, and they
 * take turns at forward granularity (a few ms per decode step), each at the
 * pool's full speed. Splitting the cores between per-session pools instead
 * would leave a session with a fraction of a core on small machines and idle
 * cores whenever the other sessions wait on their clients.
 *
 *   npl_model *m = npl_model_open("model.gguf", NULL, NULL, err, sizeof err);
 *   npl_session *s = npl_session_new(m, NULL, NULL, err, sizeof err);
 *   npl_chat_message msg[] = {{"system", "Be brief."}, {"user", "Hello!"}};
 *   npl_gen_params gp = npl_gen_default_params();
 *   gp.temperature = 0;   // greedy
 *   npl_session_chat(s, msg, 2, &gp, on_text, user_data);
 *   npl_session_free(s);
 *   npl_model_close(m);
 *
 * npl_engine is the one-handle convenience over a model, one session and a
 * conversation that grows turn by turn. */
typedef struct npl_model npl_model;
typedef struct npl_session npl_session;

typedef struct {
    int vocab_only;            /* 1 = hyperparameters and vocabulary only (no sessions) */
    int n_threads;             /* the model's pool, shared by its sessions; 0 = one per core */
    int kernel_family;         /* -1 = best this CPU has; else a cap (0 plain C .. 3 AMX / i8mm) */
    int arithmetic;            /* CPU arithmetic: 0 = ours (default); 1 = llama.cpp's RoPE, GEGLU and
                                  flash-attention rounding, 2 = the same without flash attention
                                  (verification runs against llama.cpp; slow) */
    const char *chat_template; /* "gemma", "chatml", "llama3", "llama2"; NULL = detected from
                                  tokenizer.chat_template (none there: a base model, prompts are
                                  completed raw) */
    int repack_mib;            /* matmul weights the kernel family reads faster repacked (AVX2: q5_0,
                                  q4_K, q6_K, 8 rows side by side) are copied so at open into anonymous
                                  memory, their file pages dropped: the same results, faster decode;
                                  at most this many MiB of them (q5_0 first): 0 = the default 48 (a
                                  270M model's RssAnon stays within 64 MiB), -1 = none, every weight
                                  read as the file has it */
} npl_model_params;

typedef struct {
    int n_ctx;                 /* KV cache positions; 0 = the model's, capped at 4096 */
    size_t kv_budget_bytes;    /* refuse a KV cache larger than this; 0 = 4 GiB */
    int profile;               /* a package's accelerator step times, printed to stderr when the session
                                  is freed: 0 = off (default), 1-3 = more detail */
    /* chunked prefill: sizes a prefill may run at (e.g. {128, 1}); 0 = blocks of 512 */
    int n_chunk_limits;
    int chunk_limits[NPL_MAX_CHUNK_LIMITS];
} npl_session_params;

NPL_API npl_model_params npl_model_default_params(void);
NPL_API npl_session_params npl_session_default_params(void);

/* Opens a GGUF file, a package (its directory or PKG/model.gguf) or an
 * MNN-style config.json (its llm_model). NULL on failure with one line in
 * err and the code in *status (either may be NULL). */
NPL_API npl_model *npl_model_open(const char *path, const npl_model_params *params, npl_status *status,
                                  char *err, size_t errlen);
/* After every session on m is freed. */
NPL_API void npl_model_close(npl_model *m);
NPL_API const char *npl_model_arch(const npl_model *m);   /* general.architecture, e.g. "gemma3" */
NPL_API int npl_model_n_vocab(const npl_model *m);
NPL_API int npl_model_n_ctx_train(const npl_model *m);    /* the context it was trained with */
NPL_API int npl_model_n_threads(const npl_model *m);      /* threads of its pool (0 if vocab_only) */
/* The chat template the model's sessions render messages with: "gemma",
 * "chatml", "llama3", "llama2", or "" for none (a base model: raw completion). */
NPL_API const char *npl_model_chat_template(const npl_model *m);
/* "" or one line an app should show its user once, e.g. that the model's
 * tokenizer.chat_template is not one npullm renders and which family it uses
 * instead. Valid while m is open. */
NPL_API const char *npl_model_notice(const npl_model *m);

/* A session on m (which must outlive it). NULL on failure with err/status. */
NPL_API npl_session *npl_session_new(npl_model *m, const npl_session_params *params, npl_status *status,
                                     char *err, size_t errlen);
NPL_API void npl_session_free(npl_session *s);
NPL_API int npl_session_n_ctx(const npl_session *s);
NPL_API int npl_session_n_threads(const npl_session *s); /* the model's pool's threads */
NPL_API const char *npl_session_kernel_family(const npl_session *s); /* "avx2", ... or "accel" */

/* ---- generation on a session ----
 * Parameters per request, llama.cpp's semantics and defaults (see
 * npl_engine_params). The strings in stop[] are copied by the call that
 * takes the params. */
#define NPL_MAX_STOP 8
typedef struct {
    int max_tokens;            /* tokens generated at most; default 512; -1 = until the model ends
                                  its turn or the context is full; 0 = prefill only */
    float temperature;         /* 0.8; <= 0 means greedy */
    int top_k;                 /* 40; <= 0 = off */
    float top_p;               /* 0.95 */
    float min_p;               /* 0.05 */
    float repeat_penalty;      /* 1.0 = off */
    int repeat_last_n;         /* 64 */
    float frequency_penalty;   /* 0 */
    float presence_penalty;    /* 0 */
    uint32_t seed;             /* 0xFFFFFFFF = from the clock */
    int n_stop;                /* stop strings, 0..NPL_MAX_STOP: the text up to the first one is
                                  the answer (the stop string itself is never streamed) */
    const char *stop[NPL_MAX_STOP];
} npl_gen_params;

/* One message: role "system", "user" or "assistant"; content UTF-8. */
typedef struct {
    const char *role;
    const char *content;
} npl_chat_message;

NPL_API npl_gen_params npl_gen_default_params(void);

/* Set the prompt of the next response; generation then runs with
 * npl_session_next (one piece at a time) or npl_session_generate.
 * The prompt is the whole context of the response: the session compares its
 * tokens with the ones its KV cache holds and prefills only the tail after
 * the common prefix (npl_stats.reused_tokens counts the rest), so a request
 * that repeats an earlier conversation, or starts with the same system
 * prompt, prefills only what is new.
 *   set_messages: msgs rendered through the model's chat template with the
 *     assistant's turn opened (message text never becomes control tokens);
 *     a model without a template completes the contents one after another
 *     as raw text (a "system" message is then refused: NPL_ERR_ARGUMENT).
 *   set_text: raw completion of text (BOS as the vocabulary adds it;
 *     special-token text parsed as tokens, as llama.cpp's raw prompts).
 *   set_tokens: token ids as they are.
 * gp NULL keeps the parameters (and the sampler's state) of the previous
 * request; otherwise the sampler is made anew from gp and has seen the whole
 * prompt. Returns NPL_OK, NPL_CONTEXT_FULL (the prompt does not fit),
 * NPL_CANCELLED or an error. */
NPL_API npl_status npl_session_set_messages(npl_session *s, const npl_chat_message *msgs, size_t n_msgs,
                                            const npl_gen_params *gp);
NPL_API npl_status npl_session_set_text(npl_session *s, const char *text, const npl_gen_params *gp);
NPL_API npl_status npl_session_set_tokens(npl_session *s, const int32_t *ids, int n, const npl_gen_params *gp);
/* NPL_OK with the next piece of text (maybe empty while a UTF-8 character
 * is incomplete), or NPL_DONE / an error when the response has ended
 * (npl_stats.finish says why). */
NPL_API npl_status npl_session_next(npl_session *s, const char **text, size_t *len);
/* npl_session_next until the end, streaming to cb (nonzero from cb stops:
 * NPL_CANCELLED). Returns NPL_DONE, NPL_CONTEXT_FULL, NPL_CANCELLED or an error. */
NPL_API npl_status npl_session_generate(npl_session *s, npl_text_cb cb, void *user);
/* set_messages / set_text, then generate. */
NPL_API npl_status npl_session_chat(npl_session *s, const npl_chat_message *msgs, size_t n_msgs,
                                    const npl_gen_params *gp, npl_text_cb cb, void *user);
NPL_API npl_status npl_session_complete(npl_session *s, const char *text, const npl_gen_params *gp,
                                        npl_text_cb cb, void *user);
/* Ask the running prefill or generation to stop (NPL_CANCELLED); safe from
 * any thread. The next set_* call clears it. */
NPL_API void npl_session_cancel(npl_session *s);
/* Forget the history (the KV rows are no longer reused). */
NPL_API npl_status npl_session_reset(npl_session *s);
NPL_API npl_status npl_session_stats(const npl_session *s, npl_stats *out);
/* The whole answer of the last response so far (the stop string cut off),
 * NUL-terminated; valid until the next set_* call. */
NPL_API const char *npl_session_answer(const npl_session *s, size_t *len);
/* Token ids whose K/V rows the cache holds, in order: the count (at most cap
 * written; ids may be NULL with cap 0). */
NPL_API int npl_session_tokens(const npl_session *s, int32_t *ids, int cap);
/* Next-token logits [n_vocab] after the last prefill or decode step, NULL if
 * there are none; valid until the next call on s. */
NPL_API const float *npl_session_logits(const npl_session *s);
/* The message and the code of the last call on s that failed. */
NPL_API const char *npl_session_last_error(const npl_session *s);
NPL_API npl_status npl_session_last_status(const npl_session *s);

/* ---- saving a session (prompt cache) ----
 * save writes the history's tokens and their K/V rows to path (a GGUF file,
 * written to PATH.tmp and renamed), with a digest of the model (its
 * metadata and tensor table) and the session's context size. load refuses a
 * file made for another model or another context size, and a truncated or
 * corrupted one (a checksum over tokens and rows), with one line and the
 * session untouched; after a load the session continues as the saved one
 * did: the next set_* reuses the loaded rows like its own. Packages
 * (accelerator state) are refused. NPL_OK or an error. */
NPL_API npl_status npl_session_save(npl_session *s, const char *path);
NPL_API npl_status npl_session_load(npl_session *s, const char *path);

/* Runs n tokens at positions pos0..pos0+n-1 (their K/V rows replace what the
 * cache held there) and returns the logits of the last n_out of them,
 * [n_out][n_vocab], valid until the next call on s. NULL on failure, with
 * the code in *status (may be NULL) and the message in npl_session_last_error.
 * A low-level call: the session forgets its history (nothing is reused). */
NPL_API const float *npl_session_forward(npl_session *s, const int32_t *tokens, int n, int pos0, int n_out,
                                         npl_status *status);

/* ---- this build and this CPU ---- */
/* Kernel families compiled in: 0 .. n-1 (x86: plain C, AVX2, AVX-512, AMX). */
NPL_API int npl_kernel_families_built(void);
/* "generic", "avx2", "avx512", "amx"; "?" out of range. */
NPL_API const char *npl_kernel_family_name(int family);
/* The best family this CPU runs. */
NPL_API int npl_kernel_family_best(void);

#ifdef __cplusplus
}
#endif
#endif
