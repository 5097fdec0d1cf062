/* npullm perplexity: llama.cpp's method — the text is cut into chunks of ctx
 * tokens (first token of each replaced by BOS when the vocabulary adds one),
 * each evaluated from an empty cache, and the second half of each chunk is
 * scored. --dump writes per scored position the argmax id and the
 * log-probability of the true token. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"
#include "npullm_tokenizer.h"

static const char *USAGE =
    "usage: npullm perplexity -m MODEL -f TEXT [--ctx N] [-t N] [-b N] [--chunks N] [--dump FILE]\n";

int npl_cmd_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *dump = NULL, *v;
    long long ctx = 512, threads = 0, batch = 64, max_chunks = 0;
    static const cli_opt OPTS[] = {
        {"-m", "--model", 1}, {"-f", "--file", 1}, {"--dump", NULL, 1}, {"--ctx", "-c|--ctx-size", 1},
        {"-t", "--threads", 1}, {"-b", "--batch-size|-ub|--ubatch-size", 1}, {"--chunks", NULL, 1}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int k = cli_next("perplexity", OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (k != CLI_FLAG) return 2;
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "-f")) file = v;
        else if (!strcmp(a, "--dump")) dump = v;
        else if (!strcmp(a, "--ctx")) { if (cli_int("perplexity", a, v, 4, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "-t")) { if (cli_int("perplexity", a, v, 1, 256, &threads)) return 2; }
        else if (!strcmp(a, "-b")) { if (cli_int("perplexity", a, v, 1, 4096, &batch)) return 2; }
        else if (!strcmp(a, "--chunks")) { if (cli_int("perplexity", a, v, 1, 1 << 20, &max_chunks)) return 2; }
    }
    if (!model) return cli_missing("perplexity", "-m MODEL");
    if (!file) return cli_missing("perplexity", "-f TEXT");
    size_t len;
    char *text = cli_read_file("perplexity", file, &len);
    if (!text) return 1;
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = (int)threads;
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = (int)ctx;
    npl_model *mdl = npl_model_open(model, &mp, NULL, err, sizeof(err));
    npl_session *sess = mdl ? npl_session_new(mdl, &sp, NULL, err, sizeof(err)) : NULL;
    int rc = 1;
    int32_t *ids = NULL;
    FILE *df = NULL;
    if (!sess) { fprintf(stderr, "npullm perplexity: %s\n", err); goto done; }
    if (!npl_model_has_vocab(mdl)) {
        fprintf(stderr, "npullm perplexity: %s: tokenizer.ggml.model: missing (no vocabulary to tokenize -f with)\n", model);
        goto done;
    }
    cli_warn_ctx("perplexity", "--ctx", (int)ctx, npl_model_n_ctx_train(mdl));
    int add_bos = npl_model_add_bos(mdl);
    int64_t n = npl_model_tokenize(mdl, text, len, add_bos, 0, NULL, 0);
    ids = n > 0 ? malloc(sizeof(int32_t) * (size_t)n) : NULL;
    if (!ids || npl_model_tokenize(mdl, text, len, add_bos, 0, ids, n) != n) { fprintf(stderr, "npullm perplexity: tokenization failed\n"); goto done; }
    int64_t n_chunks = n / ctx;
    if (max_chunks && n_chunks > max_chunks) n_chunks = max_chunks;
    if (n_chunks < 1) { fprintf(stderr, "npullm perplexity: %s: %lld tokens, need at least --ctx %lld\n", file, (long long)n, ctx); goto done; }
    if (dump && !(df = fopen(dump, "w"))) { fprintf(stderr, "npullm perplexity: %s: cannot write\n", dump); goto done; }
    int n_vocab = npl_model_n_vocab(mdl), first = (int)ctx / 2;
    double nll = 0;
    int64_t scored = 0;
    int32_t *chunk = malloc(sizeof(int32_t) * (size_t)ctx);
    if (!chunk) goto done;
    fprintf(stderr, "perplexity: %lld tokens, %lld chunks of %lld\n", (long long)n, (long long)n_chunks, ctx);
    for (int64_t c = 0; c < n_chunks; c++) {
        memcpy(chunk, ids + c * ctx, sizeof(int32_t) * (size_t)ctx);
        if (add_bos) chunk[0] = npl_model_token_bos(mdl);
        for (int b0 = 0; b0 < ctx - 1; b0 += (int)batch) {
            int nb = b0 + (int)batch < ctx - 1 ? (int)batch : (int)ctx - 1 - b0;
            const float *lg = npl_session_forward(sess, chunk + b0, nb, b0, nb, NULL);
            if (!lg) { fprintf(stderr, "npullm perplexity: %s\n", npl_session_last_error(sess)); free(chunk); goto done; }
            for (int j = 0; j < nb; j++) {
                int pos = b0 + j;
                if (pos < first) continue;
                const float *row = lg + (size_t)j * n_vocab;
                int32_t truth = ids[c * ctx + pos + 1];
                double mx = row[0], sum = 0;
                int arg = 0;
                for (int k = 1; k < n_vocab; k++) if (row[k] > mx) mx = row[k], arg = k;
                for (int k = 0; k < n_vocab; k++) sum += exp((double)row[k] - mx);
                double lp = (double)row[truth] - mx - log(sum);
                nll -= lp;
                scored++;
                if (df) fprintf(df, "%d %.6f\n", arg, lp);
            }
        }
        fprintf(stderr, "[%lld] %.4f\n", (long long)c + 1, exp(nll / (double)scored));
    }
    free(chunk);
    printf("perplexity: %.4f over %lld scored tokens (ctx %lld, %lld chunks)\n", exp(nll / (double)scored),
           (long long)scored, ctx, (long long)n_chunks);
    rc = 0;
done:
    if (df && fclose(df) != 0) rc = 1;
    free(ids);
    npl_session_free(sess);
    npl_model_close(mdl);
    free(text);
    return rc;
}
