/* npullm run: one prompt, or an interactive chat when no prompt is given.
 * Ctrl-C stops the current answer, not the program. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"
#include "run_flags.h"

static const char *USAGE =
    "usage: npullm run -m MODEL [-p TEXT | -f FILE] [options]\n"
    "  -m, --model MODEL     a .gguf file, a compiled package, or an MNN-style config.json\n"
    "                        (default: $NPULLM_MODEL, else the chat model from scripts/setup.sh)\n"
    "  -p, --prompt TEXT / -f, --file FILE   the prompt; without one, an interactive chat starts\n"
    "  -n, --n-predict N     max new tokens (default 512; -1: until EOS or the context is full)\n"
    "  -c, --ctx-size N      context length (default and 0: the model's, capped at 4096)\n"
    "  -t, --threads N       threads (default and -1: one per core)\n"
    "  --temp F --top-k N --top-p F --min-p F --repeat-penalty F --repeat-last-n N\n"
    "  --frequency-penalty F --presence-penalty F   sampling (llama.cpp defaults)\n"
    "  -s, --seed N          sampling seed (default and -1: random)\n"
    "  --chat-template NAME  gemma, chatml, llama3, llama2 (default: detected)\n"
    "  --system, -sys, --system-prompt TEXT   system prompt\n"
    "  --raw                 no chat template: complete the text as is\n"
    "  --stop, -r, --reverse-prompt TEXT      stop when this text is generated\n"
    "  --chunk N[,N]         chunk limits for prefill, e.g. 128,1 (padded chunks)\n"
    "  --no-stats            do not print statistics\n"
    "  --profile             a package: print the accelerator's time per graph and op type\n"
    "                        to stderr when the run ends\n"
    "A flag given here wins over the same setting in a config.json.\n";

static npl_engine *active;

static void on_sigint(int sig) {
    (void)sig;
    if (active) npl_engine_cancel(active); /* async-signal-safe: one atomic store */
}

static int print_piece(const char *text, size_t len, void *user) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static void print_stats(npl_engine *e) {
    npl_stats s;
    npl_engine_stats(e, &s);
    fprintf(stderr,
            "\n[prompt %d tok, %.1f tok/s | decode %d tok, %.1f tok/s | ttft %.3f s | context %d]\n",
            s.prompt_tokens, s.prefill_tps, s.decode_tokens, s.decode_tps, s.ttft_seconds, s.n_past);
}

int npl_cmd_run(int argc, char **argv) {
    npl_engine_params p;
    run_args ra;
    int bad = run_flags_resolve(argc, argv, USAGE, &p, &ra);
    if (bad) {
        run_flags_free(&ra);
        return bad < 0 ? 0 : bad;
    }
    const char *prompt = ra.prompt, *file = ra.file;
    int stats = ra.stats;
    char *text = NULL;
    if (file && !(text = cli_read_file("run", file, NULL))) { run_flags_free(&ra); return 1; }
    char err[512];
    /* the config (if any) is merged into p already: open what it names */
    npl_engine *e = npl_engine_open(ra.model_path, &p, err, sizeof(err));
    run_flags_free(&ra);
    if (!e) { fprintf(stderr, "npullm run: %s\n", err); free(text); return 1; }
    if (*npl_engine_notice(e)) fprintf(stderr, "npullm run: note: %s\n", npl_engine_notice(e));
    active = e;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    int rc = 0;
    if (prompt || text) {
        npl_status st = npl_engine_chat(e, text ? text : prompt, print_piece, NULL);
        printf("\n");
        npl_stats s;
        npl_engine_stats(e, &s);
        if (st == NPL_CONTEXT_FULL && ra.until_full && s.decode_tokens > 0) {
            st = NPL_DONE; /* -n -1 asked for exactly this end */
            if (stats) fprintf(stderr, "[context full]");
        }
        if (st != NPL_DONE) {
            fprintf(stderr, "npullm run: %s\n", npl_engine_last_error(e));
            rc = st == NPL_CANCELLED ? 130 : 1;
        }
        if (stats) print_stats(e);
    } else {
        char line[65536];
        fprintf(stderr, "chat: type a message, Ctrl-C stops an answer, Ctrl-D quits\n");
        for (;;) {
            fprintf(stderr, "> ");
            if (!fgets(line, sizeof(line), stdin)) break;
            size_t n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
            if (!n) continue;
            npl_status st = npl_engine_chat(e, line, print_piece, NULL);
            printf("\n");
            if (st == NPL_CANCELLED) fprintf(stderr, "[stopped]\n");
            else if (st != NPL_DONE) fprintf(stderr, "npullm run: %s\n", npl_engine_last_error(e));
            if (st == NPL_CONTEXT_FULL) { fprintf(stderr, "[context full: starting a new conversation]\n"); npl_engine_reset(e); }
            if (stats) print_stats(e);
        }
    }
    active = NULL;
    npl_engine_close(e);
    free(text);
    return rc;
}
