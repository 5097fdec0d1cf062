/* npullm run: one prompt, or an interactive chat when no prompt is given.
 * Ctrl-C stops the current answer, not the program. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"

static const char *USAGE =
    "usage: npullm run -m MODEL [-p TEXT | -f FILE] [options]\n"
    "  -m MODEL              a .gguf file, a compiled package, or an MNN-style config.json\n"
    "                        (default: $NPULLM_MODEL, else the Gemma 3 270M from scripts/setup.sh)\n"
    "  -p TEXT / -f FILE     the prompt; without one, an interactive chat starts\n"
    "  -n N                  max new tokens (default 512)\n"
    "  -c N                  context length (default: the model's, capped at 4096)\n"
    "  -t N                  threads (default: one per core)\n"
    "  --temp F --top-k N --top-p F --min-p F --repeat-penalty F --repeat-last-n N\n"
    "  --frequency-penalty F --presence-penalty F --seed N   sampling (llama.cpp defaults)\n"
    "  --chat-template NAME  gemma, chatml, llama3, llama2 (default: detected)\n"
    "  --system TEXT         system prompt\n"
    "  --raw                 no chat template: complete the text as is\n"
    "  --stop TEXT           stop when this text is generated\n"
    "  --chunk N[,N]         chunk limits for prefill, e.g. 128,1 (padded chunks)\n"
    "  --no-stats            do not print statistics\n";

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

/* Parses the flags shared by run-like commands into p; returns index of an
 * unknown flag (>0), 0 when done, -1 on a bad value. */
int cli_engine_flags(const char *cmd, int argc, char **argv, npl_engine_params *p, const char **model,
                     const char **prompt, const char **file, int *raw, int *stats) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long long iv;
        double fv;
        if (!strcmp(a, "--raw")) { *raw = 1; continue; }
        if (!strcmp(a, "--no-stats")) { *stats = 0; continue; }
        if (!(v = cli_value(cmd, argc, argv, &i))) return -1;
        if (!strcmp(a, "-m")) *model = v;
        else if (!strcmp(a, "-p")) *prompt = v;
        else if (!strcmp(a, "-f")) *file = v;
        else if (!strcmp(a, "-n")) { if (cli_int(cmd, a, v, 0, 1 << 24, &iv)) return -1; p->max_new_tokens = (int)iv; }
        else if (!strcmp(a, "-c")) { if (cli_int(cmd, a, v, 1, 1 << 24, &iv)) return -1; p->n_ctx = (int)iv; }
        else if (!strcmp(a, "-t")) { if (cli_int(cmd, a, v, 1, 256, &iv)) return -1; p->n_threads = (int)iv; }
        else if (!strcmp(a, "--temp")) { if (cli_float(cmd, a, v, 0, 100, &fv)) return -1; p->temperature = (float)fv; }
        else if (!strcmp(a, "--top-k")) { if (cli_int(cmd, a, v, 0, 1 << 24, &iv)) return -1; p->top_k = (int)iv; }
        else if (!strcmp(a, "--top-p")) { if (cli_float(cmd, a, v, 0, 1, &fv)) return -1; p->top_p = (float)fv; }
        else if (!strcmp(a, "--min-p")) { if (cli_float(cmd, a, v, 0, 1, &fv)) return -1; p->min_p = (float)fv; }
        else if (!strcmp(a, "--repeat-penalty")) { if (cli_float(cmd, a, v, 0.01, 100, &fv)) return -1; p->repeat_penalty = (float)fv; }
        else if (!strcmp(a, "--repeat-last-n")) { if (cli_int(cmd, a, v, -1, 1 << 24, &iv)) return -1; p->repeat_last_n = (int)iv; }
        else if (!strcmp(a, "--frequency-penalty")) { if (cli_float(cmd, a, v, -10, 10, &fv)) return -1; p->frequency_penalty = (float)fv; }
        else if (!strcmp(a, "--presence-penalty")) { if (cli_float(cmd, a, v, -10, 10, &fv)) return -1; p->presence_penalty = (float)fv; }
        else if (!strcmp(a, "--seed")) { if (cli_int(cmd, a, v, 0, 0xFFFFFFFFll, &iv)) return -1; p->seed = (uint32_t)iv; }
        else if (!strcmp(a, "--chat-template")) p->chat_template = v;
        else if (!strcmp(a, "--system")) p->system_prompt = v;
        else if (!strcmp(a, "--stop")) p->stop = v;
        else if (!strcmp(a, "--chunk")) {
            int n = cli_int_list(cmd, a, v, p->chunk_limits, NPL_MAX_CHUNK_LIMITS);
            if (n < 0) return -1;
            p->n_chunk_limits = n;
        } else return i - 1;
    }
    return 0;
}

int npl_cmd_run(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(USAGE, stdout); return 0; }
    npl_engine_params p = npl_engine_default_params();
    const char *model = NULL, *prompt = NULL, *file = NULL;
    int raw = 0, stats = 1;
    int bad = cli_engine_flags("run", argc, argv, &p, &model, &prompt, &file, &raw, &stats);
    if (bad) {
        if (bad > 0) fprintf(stderr, "npullm run: unknown flag %s\n%s", argv[bad], USAGE);
        return 2;
    }
    if (!model && !(model = cli_default_model())) {
        fprintf(stderr, "npullm run: no -m MODEL and no default model (run scripts/setup.sh or set NPULLM_MODEL)\n");
        return 2;
    }
    char *text = NULL;
    if (file && !(text = cli_read_file("run", file, NULL))) return 1;
    if (raw) p.use_template = 0;
    char err[512];
    npl_engine *e = npl_engine_open(model, &p, err, sizeof(err));
    if (!e) { fprintf(stderr, "npullm run: %s\n", err); free(text); return 1; }
    active = e;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    int rc = 0;
    if (prompt || text) {
        npl_status st = npl_engine_chat(e, text ? text : prompt, print_piece, NULL);
        printf("\n");
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
