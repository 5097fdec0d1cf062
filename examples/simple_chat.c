/* simple_chat: the smallest useful program on the public API.
 *
 *   simple_chat MODEL.gguf ["question"]
 *
 * Opens the model, asks one question through the model's chat template with
 * greedy sampling (temperature 0) and at most 16 new tokens, streams the
 * answer as it is generated, then prints the statistics. Uses only
 * include/npullm.h. Exits 1 if the model cannot be opened or the answer fails. */
#include <stdio.h>

#include "npullm.h"

/* Counts the answer's bytes so main() can tell an empty answer from one. */
typedef struct {
    size_t bytes;
} answer_state;

/* Called with each complete UTF-8 piece of the answer; 0 = keep going. */
static int on_text(const char *text, size_t len, void *user) {
    answer_state *st = user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    st->bytes += len;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL.gguf [\"question\"]\n", argv[0]);
        return 2;
    }
    const char *question = argc > 2 ? argv[2] : "What is the capital of France?";

    npl_engine_params p = npl_engine_default_params();
    p.temperature = 0;      /* greedy: the same answer every run */
    p.max_new_tokens = 16;
    p.n_ctx = 512;          /* plenty for one short turn; keeps the KV cache small */

    char err[512];
    npl_engine *e = npl_engine_open(argv[1], &p, err, sizeof(err));
    if (!e) {
        fprintf(stderr, "simple_chat: %s\n", err);
        return 1;
    }

    printf("Q: %s\nA: ", question);
    answer_state st = {0};
    npl_status rc = npl_engine_chat(e, question, on_text, &st);
    printf("\n");
    if (rc != NPL_DONE) {
        fprintf(stderr, "simple_chat: %s\n", npl_engine_last_error(e));
        npl_engine_close(e);
        return 1;
    }

    npl_stats s;
    if (npl_engine_stats(e, &s) == NPL_OK)
        printf("[stats] prompt %d tokens (%.1f tok/s), answer %d tokens (%.1f tok/s), "
               "first token after %.3f s, %d tokens in context, %zu bytes of text\n",
               s.prompt_tokens, s.prefill_tps, s.decode_tokens, s.decode_tps, s.ttft_seconds, s.n_past, st.bytes);
    npl_engine_close(e);
    return 0;
}
