/* npullm tokenize: token ids (and pieces) of a text, like llama-tokenize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm_tokenizer.h"

static const char *USAGE =
    "usage: npullm tokenize -m MODEL [-p TEXT | -f FILE] [--ids] [--no-parse-special] [--no-bos]\n"
    "  prints one line per token: id and piece; --ids prints only [id, id, ...]\n";

int npl_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *v;
    int ids_only = 0, parse_special = 1, add_special = 1;
    static const cli_opt OPTS[] = {
        {"-m", "--model", 1}, {"-p", "--prompt", 1}, {"-f", "--file", 1}, {"--ids", NULL, 0},
        {"--no-parse-special", NULL, 0}, {"--no-bos", NULL, 0}, {NULL, NULL, 0}};
    for (int i = 1; i < argc; i++) {
        const char *a;
        int k = cli_next("tokenize", OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) { fputs(USAGE, stdout); return 0; }
        if (k != CLI_FLAG) return 2;
        if (!strcmp(a, "--ids")) ids_only = 1;
        else if (!strcmp(a, "--no-parse-special")) parse_special = 0;
        else if (!strcmp(a, "--no-bos")) add_special = 0;
        else if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "-p")) prompt = v;
        else if (!strcmp(a, "-f")) file = v;
    }
    if (!model) return cli_missing("tokenize", "-m MODEL");
    if (prompt && file) { fprintf(stderr, "npullm tokenize: -p and -f both give the text; use one\n"); return 2; }
    if (!prompt && !file) return cli_missing("tokenize", "-p TEXT or -f FILE");
    size_t len = prompt ? strlen(prompt) : 0;
    char *text = NULL;
    if (file && !(text = cli_read_file("tokenize", file, &len))) return 1;
    char err[512];
    npl_model_params mp = npl_model_default_params();
    mp.vocab_only = 1; /* the vocabulary is all it needs */
    npl_model *mdl = npl_model_open(model, &mp, NULL, err, sizeof(err));
    int rc = 1;
    if (!mdl) { fprintf(stderr, "npullm tokenize: %s\n", err); goto done; }
    const char *src = text ? text : prompt;
    int64_t n = npl_model_tokenize(mdl, src, len, add_special, parse_special, NULL, 0);
    int32_t *ids = n >= 0 ? malloc(sizeof(int32_t) * (size_t)(n + 1)) : NULL;
    if (!ids || npl_model_tokenize(mdl, src, len, add_special, parse_special, ids, n) != n) {
        fprintf(stderr, "npullm tokenize: tokenization failed\n");
        free(ids);
        goto done;
    }
    if (ids_only) {
        printf("[");
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
        printf("]\n");
    } else {
        for (int64_t i = 0; i < n; i++) {
            char small[512], *piece = small;
            int pl = npl_model_token_to_piece(mdl, ids[i], small, sizeof(small), 1);
            if (pl > (int)sizeof(small) && (piece = malloc((size_t)pl))) /* token texts may be of any length */
                pl = npl_model_token_to_piece(mdl, ids[i], piece, pl, 1);
            if (!piece) {
                fprintf(stderr, "npullm tokenize: out of memory\n");
                free(ids);
                goto done;
            }
            printf("%6d -> '%.*s'\n", ids[i], pl > 0 ? pl : 0, piece);
            if (piece != small) free(piece);
        }
    }
    free(ids);
    rc = 0;
done:
    npl_model_close(mdl);
    free(text);
    return rc;
}
