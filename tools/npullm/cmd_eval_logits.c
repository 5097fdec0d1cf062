/* npullm eval-logits: teacher-forced logits for given token ids, written as
 * raw float32 [n_ids][n_vocab] — what bench/verify_llamacpp.py compares with
 * llama.cpp. Ids are cut into chunks of --ctx, each from an empty cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"

static const char *USAGE =
    "usage: npullm eval-logits -m MODEL --ids IDS_FILE --out LOGITS_FILE [--ctx N] [-t N] [-b N] [--isa 0-3] [--no-repack | --repack-mib N]\n"
    "                           [--arith ours|llamacpp|llamacpp-nofa]\n"
    "  --isa caps the kernel family: 0 generic C, 1 AVX2, 2 AVX-512, 3 AMX\n"
    "  --repack-mib N  at most N MiB of weights repacked where the family reads them faster (default\n"
    "         48); --no-repack (= --repack-mib 0): every weight as the file has it\n"
    "  --arith llamacpp: llama.cpp's RoPE (float theta), GEGLU (f16 table) and flash-attention\n"
    "         rounding (f16 accumulator, key by key; slow), for verification runs\n"
    "  --arith llamacpp-nofa: llama.cpp's RoPE, GEGLU and attention without flash\n"
    "         attention (probabilities rounded to f16 before P.V; slow)\n"
    "  IDS_FILE: whitespace-separated token ids; LOGITS_FILE: float32 [n_ids][n_vocab]\n";

int npl_cmd_eval_logits(int argc, char **argv) {
    const char *model = NULL, *ids_path = NULL, *out_path = NULL, *v;
    long long ctx = 512, threads = 0, batch = 64, isa = -1;
    int arith = 0;
    long long repack = -1; /* MiB of repacked weights; -1: the default */
    static const cli_opt OPTS[] = {
        {"-m", "--model", 1}, {"--ids", NULL, 1}, {"--out", NULL, 1}, {"--ctx", "-c|--ctx-size", 1},
        {"-t", "--threads", 1}, {"-b", "--batch-size|-ub|--ubatch-size", 1}, {"--isa", NULL, 1}, {"--no-repack", NULL, 0}, {"--repack-mib", NULL, 1}, {"--arith", NULL, 1},
        {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int k = cli_next("eval-logits", OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (k != CLI_FLAG) return 2;
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "--ids")) ids_path = v;
        else if (!strcmp(a, "--out")) out_path = v;
        else if (!strcmp(a, "--ctx")) { if (cli_int("eval-logits", a, v, 1, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "-t")) { if (cli_int("eval-logits", a, v, 1, 256, &threads)) return 2; }
        else if (!strcmp(a, "-b")) { if (cli_int("eval-logits", a, v, 1, 4096, &batch)) return 2; }
        else if (!strcmp(a, "--isa")) { if (cli_int("eval-logits", a, v, 0, 3, &isa)) return 2; }
        else if (!strcmp(a, "--no-repack")) repack = 0;
        else if (!strcmp(a, "--repack-mib")) { if (cli_int("eval-logits", a, v, 0, 1 << 20, &repack)) return 2; }
        else if (!strcmp(a, "--arith")) {
            if (!strcmp(v, "ours")) arith = 0;
            else if (!strcmp(v, "llamacpp")) arith = 1;
            else if (!strcmp(v, "llamacpp-nofa")) arith = 2;
            else {
                fprintf(stderr, "npullm eval-logits: --arith: '%s' is not ours, llamacpp or llamacpp-nofa\n", v);
                return 2;
            }
        }
    }
    if (!model) return cli_missing("eval-logits", "-m MODEL");
    if (!ids_path) return cli_missing("eval-logits", "--ids IDS_FILE");
    if (!out_path) return cli_missing("eval-logits", "--out LOGITS_FILE");
    char *text = cli_read_file("eval-logits", ids_path, NULL);
    if (!text) return 1;
    int n = 0, cap = 1024;
    int32_t *ids = malloc((size_t)cap * sizeof(int32_t));
    for (char *tok = strtok(text, " \t\r\n"); tok && ids; tok = strtok(NULL, " \t\r\n")) {
        long long id;
        if (cli_int("eval-logits", ids_path, tok, 0, INT32_MAX, &id)) { free(ids); free(text); return 1; }
        if (n == cap) {
            int32_t *g = realloc(ids, (size_t)cap * 2 * sizeof(int32_t));
            if (!g) { free(ids); ids = NULL; break; }
            ids = g;
            cap *= 2;
        }
        ids[n++] = (int32_t)id;
    }
    free(text);
    if (!ids || !n) { fprintf(stderr, "npullm eval-logits: %s: no token ids\n", ids_path); free(ids); return 1; }
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.n_threads = (int)threads;
    mp.kernel_family = (int)isa;
    mp.repack_mib = repack < 0 ? 0 : repack == 0 ? -1 : (int)repack;
    mp.arithmetic = arith;
    npl_session_params sp = npl_session_default_params();
    sp.n_ctx = (int)ctx;
    npl_model *mdl = npl_model_open(model, &mp, NULL, err, sizeof(err));
    npl_session *sess = mdl ? npl_session_new(mdl, &sp, NULL, err, sizeof(err)) : NULL;
    if (!sess) {
        fprintf(stderr, "npullm eval-logits: %s\n", err);
        npl_model_close(mdl);
        free(ids);
        return 1;
    }
    int n_vocab = npl_model_n_vocab(mdl), rc = 1;
    cli_warn_ctx("eval-logits", "--ctx", (int)ctx, npl_model_n_ctx_train(mdl));
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out_path);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) { fprintf(stderr, "npullm eval-logits: %s: cannot write\n", tmp); goto done; }
    for (int c0 = 0; c0 < n; c0 += (int)ctx) {
        int c1 = c0 + (int)ctx < n ? c0 + (int)ctx : n;
        for (int b0 = c0; b0 < c1; b0 += (int)batch) {
            int nb = b0 + (int)batch < c1 ? (int)batch : c1 - b0;
            const float *lg = npl_session_forward(sess, ids + b0, nb, b0 - c0, nb, NULL);
            if (!lg) { fprintf(stderr, "npullm eval-logits: %s\n", npl_session_last_error(sess)); goto done; }
            if (fwrite(lg, sizeof(float) * (size_t)n_vocab, (size_t)nb, fp) != (size_t)nb) {
                fprintf(stderr, "npullm eval-logits: %s: write failed\n", tmp);
                goto done;
            }
        }
    }
    if (fclose(fp) == 0 && rename(tmp, out_path) == 0) rc = 0;
    else fprintf(stderr, "npullm eval-logits: %s: write failed\n", out_path);
    fp = NULL;
done:
    if (fp) fclose(fp);
    if (rc) remove(tmp);
    npl_session_free(sess);
    npl_model_close(mdl);
    free(ids);
    return rc;
}
