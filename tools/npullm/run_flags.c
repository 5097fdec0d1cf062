/* npullm run: flags, config.json precedence and the checks (see run_flags.h). */
#include "run_flags.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "npullm_gguf.h"

/* llama.cpp's names (common/arg.cpp) are aliases of ours. */
static const cli_opt OPTS[] = {
    {"-m", "--model", 1},
    {"-p", "--prompt", 1},
    {"-f", "--file", 1},
    {"-n", "--n-predict|--predict", 1},
    {"-c", "--ctx-size", 1},
    {"-t", "--threads", 1},
    {"--temp", NULL, 1},
    {"--top-k", NULL, 1},
    {"--top-p", NULL, 1},
    {"--min-p", NULL, 1},
    {"--repeat-penalty", NULL, 1},
    {"--repeat-last-n", NULL, 1},
    {"--frequency-penalty", NULL, 1},
    {"--presence-penalty", NULL, 1},
    {"--seed", "-s", 1},
    {"--chat-template", NULL, 1},
    {"--system", "-sys|--system-prompt", 1},
    {"--stop", "-r|--reverse-prompt", 1},
    {"--chunk", NULL, 1},
    {"--raw", NULL, 0},
    {"--no-stats", NULL, 0},
    {"--profile", NULL, 0},
    {NULL, NULL, 0},
};

/* One flag onto p (or ra); -1 after a message for a bad value. */
static int apply(const char *a, const char *v, npl_engine_params *p, run_args *ra) {
    const char *cmd = "run";
    long long iv;
    double fv;
    if (!strcmp(a, "--raw")) ra->raw = 1;
    else if (!strcmp(a, "--no-stats")) ra->stats = 0;
    else if (!strcmp(a, "--profile")) p->profile = 1;
    else if (!strcmp(a, "-m")) ra->model = v;
    else if (!strcmp(a, "-p")) ra->prompt = v;
    else if (!strcmp(a, "-f")) ra->file = v;
    else if (!strcmp(a, "-n")) {
        /* llama.cpp: -1 = no limit, -2 = until the context is full; here both
         * end at EOS or a full context */
        if (cli_int(cmd, a, v, -2, 1 << 24, &iv)) return -1;
        ra->until_full = iv < 0;
        p->max_new_tokens = iv < 0 ? INT_MAX : (int)iv;
    } else if (!strcmp(a, "-c")) {
        /* 0 = the model's (capped at 4096), as the library's n_ctx */
        if (cli_int(cmd, a, v, 0, 1 << 24, &iv)) return -1;
        p->n_ctx = (int)iv;
        ra->has_ctx = 1;
    } else if (!strcmp(a, "-t")) {
        /* llama.cpp's -1 (and 0) = one per core */
        if (cli_int(cmd, a, v, -1, 256, &iv)) return -1;
        p->n_threads = iv < 0 ? 0 : (int)iv;
    } else if (!strcmp(a, "--temp")) { if (cli_float(cmd, a, v, 0, 100, &fv)) return -1; p->temperature = (float)fv; }
    else if (!strcmp(a, "--top-k")) { if (cli_int(cmd, a, v, 0, 1 << 24, &iv)) return -1; p->top_k = (int)iv; }
    else if (!strcmp(a, "--top-p")) { if (cli_float(cmd, a, v, 0, 1, &fv)) return -1; p->top_p = (float)fv; }
    else if (!strcmp(a, "--min-p")) { if (cli_float(cmd, a, v, 0, 1, &fv)) return -1; p->min_p = (float)fv; }
    else if (!strcmp(a, "--repeat-penalty")) { if (cli_float(cmd, a, v, 0.01, 100, &fv)) return -1; p->repeat_penalty = (float)fv; }
    else if (!strcmp(a, "--repeat-last-n")) { if (cli_int(cmd, a, v, -1, 1 << 24, &iv)) return -1; p->repeat_last_n = (int)iv; }
    else if (!strcmp(a, "--frequency-penalty")) { if (cli_float(cmd, a, v, -10, 10, &fv)) return -1; p->frequency_penalty = (float)fv; }
    else if (!strcmp(a, "--presence-penalty")) { if (cli_float(cmd, a, v, -10, 10, &fv)) return -1; p->presence_penalty = (float)fv; }
    else if (!strcmp(a, "--seed")) {
        /* llama.cpp: -1 = random (the library's 0xFFFFFFFF: from the clock) */
        if (cli_int(cmd, a, v, -1, 0xFFFFFFFFll, &iv)) return -1;
        p->seed = iv < 0 ? 0xFFFFFFFFu : (uint32_t)iv;
    } else if (!strcmp(a, "--chat-template")) { p->chat_template = v; ra->has_template = 1; }
    else if (!strcmp(a, "--system")) { p->system_prompt = v; ra->has_system = 1; }
    else if (!strcmp(a, "--stop")) p->stop = v;
    else if (!strcmp(a, "--chunk")) {
        int n = cli_int_list(cmd, a, v, p->chunk_limits, NPL_MAX_CHUNK_LIMITS);
        if (n < 0) return -1;
        p->n_chunk_limits = n;
        ra->has_chunk = 1;
    }
    return 0;
}

static void sort_ints(int *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

static void list_str(const int *v, int n, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? "," : "", v[i]);
}

/* A package's shapes are fixed when it is compiled: -c and --chunk must say
 * what it was compiled with. Any model: a context above the trained one is
 * named in a warning. */
static int check_model(const npl_engine_params *p, const run_args *ra, const char *ctx_from) {
    char err[512];
    npl_gguf_file *g = npl_gguf_file_open(ra->model_path, NULL, err, sizeof err);
    if (!g) return 0; /* the engine reports it when it opens the file */
    int rc = 0;
    int64_t pkg_ctx = 0, limits[NPL_MAX_CHUNK_LIMITS];
    if (npl_gguf_file_get_int(g, "npullm.package.n_ctx", &pkg_ctx) == NPL_OK && pkg_ctx > 0) {
        if (ra->has_ctx && p->n_ctx != 0 && p->n_ctx != pkg_ctx) {
            fprintf(stderr, "npullm run: -c %d: %s was compiled for a context of %lld, which fixes its KV cache; "
                    "leave -c out or compile again with --ctx %d\n", p->n_ctx, ra->model, (long long)pkg_ctx, p->n_ctx);
            rc = 2;
        }
        int64_t nl = npl_gguf_file_get_int_array(g, "npullm.package.chunk_limits", limits, NPL_MAX_CHUNK_LIMITS);
        if (!rc && ra->has_chunk && nl >= 1 && nl <= NPL_MAX_CHUNK_LIMITS) {
            int comp[NPL_MAX_CHUNK_LIMITS], want[NPL_MAX_CHUNK_LIMITS], n = (int)nl;
            for (int i = 0; i < n; i++) comp[i] = (int)limits[i];
            memcpy(want, p->chunk_limits, sizeof want);
            char c[96], w[96];
            list_str(want, p->n_chunk_limits, w, sizeof w); /* as given */
            sort_ints(comp, n);
            sort_ints(want, p->n_chunk_limits);
            int same = n == p->n_chunk_limits;
            for (int i = 0; same && i < n; i++) same = comp[i] == want[i];
            if (!same) {
                int desc[NPL_MAX_CHUNK_LIMITS];
                for (int i = 0; i < n; i++) desc[i] = comp[n - 1 - i];
                list_str(desc, n, c, sizeof c);
                fprintf(stderr, "npullm run: --chunk %s: %s was compiled for chunks %s; leave --chunk out or "
                        "compile again with --chunk N\n", w, ra->model, c);
                rc = 2;
            }
        }
    }
    /* the trained context, ARCH.context_length (as llama.cpp names it) */
    char arch[64], key[96];
    int64_t n_ctx_train;
    if (!rc && p->n_ctx > 0 && npl_gguf_file_get_str(g, "general.architecture", arch, sizeof arch) > 0 &&
        snprintf(key, sizeof key, "%s.context_length", arch) < (int)sizeof key &&
        npl_gguf_file_get_int(g, key, &n_ctx_train) == NPL_OK && n_ctx_train > 0 && n_ctx_train <= 1 << 30)
        cli_warn_ctx("run", ctx_from, p->n_ctx, (int)n_ctx_train);
    npl_gguf_file_close(g);
    return rc;
}

/* The config a -m names: a .json file, or a package directory's config.json. */
static const char *config_of(const char *model, char *buf, size_t len) {
    struct stat sb;
    if (stat(model, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(buf, len, "%s/config.json", model);
        return buf;
    }
    return npl_config_is_json(model) ? model : NULL;
}

int run_flags_resolve(int argc, char **argv, const char *usage, npl_engine_params *p, run_args *ra) {
    memset(ra, 0, sizeof *ra);
    ra->stats = 1;
    *p = npl_engine_default_params();
    /* pass 1: every flag known and its value valid, before any file is read */
    const char **names = calloc((size_t)argc + 1, sizeof *names), **vals = calloc((size_t)argc + 1, sizeof *vals);
    if (!names || !vals) {
        free(names), free(vals);
        fprintf(stderr, "npullm run: out of memory\n");
        return 1;
    }
    int n = 0, rc = 0;
    npl_engine_params scratch = *p;
    for (int i = 1; i < argc && !rc; i++) {
        int k = cli_next("run", OPTS, argc, argv, &i, &names[n], &vals[n]);
        if (k == CLI_HELP) {
            fputs(usage, stdout);
            rc = -1;
        } else if (k != CLI_FLAG || apply(names[n], vals[n], &scratch, ra)) rc = 2;
        else n++;
    }
    if (rc) goto done;
    if (ra->prompt && ra->file) {
        fprintf(stderr, "npullm run: -p and -f both give the prompt; use one\n");
        rc = 2;
        goto done;
    }
    if (ra->raw && (ra->has_system || ra->has_template)) {
        fprintf(stderr, "npullm run: %s has no effect with --raw (no chat template); use one or the other\n",
                ra->has_system ? "--system" : "--chat-template");
        rc = 2;
        goto done;
    }
    if (!ra->model && !(ra->model = cli_default_model())) {
        fprintf(stderr, "npullm run: no -m MODEL and no default model (run scripts/setup.sh or set NPULLM_MODEL)\n");
        rc = 2;
        goto done;
    }
    /* defaults < config.json < command line */
    char cfgbuf[4200], err[512];
    const char *cfg = config_of(ra->model, cfgbuf, sizeof cfgbuf);
    snprintf(ra->model_path, sizeof ra->model_path, "%s", ra->model);
    if (cfg) {
        if (!(ra->config = npl_config_load(cfg, p, NULL, err, sizeof err))) {
            fprintf(stderr, "npullm run: %s\n", err);
            rc = 1;
            goto done;
        }
        snprintf(ra->model_path, sizeof ra->model_path, "%s", npl_config_model_path(ra->config));
    }
    const int cfg_template = p->use_template;
    const char *cfg_system = p->system_prompt;
    for (int i = 0; i < n; i++) apply(names[i], vals[i], p, ra); /* valid: checked in pass 1 */
    if (ra->raw) {
        p->use_template = 0;
        if (cfg_system && p->system_prompt == cfg_system) {
            fprintf(stderr, "npullm run: warning: %s: system_prompt is not used with --raw\n", cfg);
            p->system_prompt = NULL;
        }
    } else if (!cfg_template && (ra->has_system || ra->has_template)) {
        fprintf(stderr, "npullm run: %s needs the chat template, which %s turns off (use_template: false)\n",
                ra->has_system ? "--system" : "--chat-template", cfg);
        rc = 2;
        goto done;
    }
    char from[4300];
    snprintf(from, sizeof from, "%s%s", ra->has_ctx || !cfg ? "-c" : cfg, ra->has_ctx || !cfg ? "" : ": max_context_length");
    rc = check_model(p, ra, from);
done:
    free(names);
    free(vals);
    return rc;
}

void run_flags_free(run_args *ra) {
    npl_config_free(ra->config);
    ra->config = NULL;
}
