/* npullm serve: an OpenAI-compatible HTTP server (see serve.h). The model is
 * opened once here; every slot is a session on it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"
#include "serve.h"

static const char *USAGE =
    "usage: npullm serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX] [options]\n"
    "  -m, --model MODEL     a .gguf file (default: as npullm run)\n"
    "  --host HOST           address to listen on (default 127.0.0.1, loopback only)\n"
    "  --port N              port (default 8080; 0 = any free port, printed at start)\n"
    "  -np, --parallel N     requests served at once, one session each on the one copy of\n"
    "                        the weights (default 1)\n"
    "  --queue N             requests that may wait for a session (default 16); more get 503\n"
    "  -c, --ctx-size N      context per session (default and 0: the model's, capped at 4096)\n"
    "  -t, --threads N       threads of the model's pool, which the sessions take turns on\n"
    "                        (default: one per core)\n"
    "  --api-key KEY         require 'Authorization: Bearer KEY' (all endpoints but /health)\n"
    "  -a, --alias NAME      the model id /v1/models lists (default: the file name)\n"
    "  -n, --n-predict N     max_tokens of a chat request that gives none (default -1: until EOS\n"
    "                        or the context is full; /v1/completions defaults to 16, as OpenAI)\n"
    "  --temp F --top-k N --top-p F --min-p F   sampling defaults of requests that give none\n"
    "  --chat-template NAME  gemma, chatml, llama3, llama2 (default: detected)\n"
    "  --max-body BYTES      largest request body (default 1048576); more is 413\n"
    "  --timeout S           idle connection timeout, and the time a request may take to\n"
    "                        arrive (default 30)\n"
    "  --max-connections N   open connections at most (default 64)\n"
    "  -v, --verbose         one line per request on stderr\n"
    "Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health.\n";

static const cli_opt OPTS[] = {
    {"-m", "--model", 1},        {"--host", NULL, 1},     {"--port", NULL, 1},
    {"--parallel", "-np", 1},    {"--queue", NULL, 1},    {"-c", "--ctx-size", 1},
    {"-t", "--threads", 1},      {"--api-key", NULL, 1},  {"-a", "--alias", 1},
    {"-n", "--n-predict", 1},    {"--temp", NULL, 1},     {"--top-k", NULL, 1},
    {"--top-p", NULL, 1},        {"--min-p", NULL, 1},    {"--chat-template", NULL, 1},
    {"--max-body", NULL, 1},     {"--timeout", NULL, 1},  {"--max-connections", NULL, 1},
    {"-v", "--verbose", 0},      {NULL, NULL, 0},
};

static int is_loopback(const char *h) {
    return !strcmp(h, "127.0.0.1") || !strncmp(h, "127.", 4) || !strcmp(h, "::1") || !strcmp(h, "localhost");
}

/* The context when -c is 0: the model's, capped at 4096 (as the library does). */
static int resolve_ctx(const npl_model *m, int n_ctx) {
    if (n_ctx > 0) return n_ctx;
    int t = npl_model_n_ctx_train(m);
    return t > 0 && t < 4096 ? t : 4096;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

int npl_cmd_serve(int argc, char **argv) {
    const char *cmd = "serve";
    srv_config c;
    memset(&c, 0, sizeof c);
    c.host = "127.0.0.1";
    c.port = 8080;
    c.n_parallel = 1;
    c.max_queue = 16;
    c.max_body = 1 << 20;
    c.timeout_s = 30;
    c.max_connections = 64;
    npl_engine_params p = npl_engine_default_params(); /* the sampling defaults */
    npl_model_params mp = npl_model_default_params();
    npl_session_params sp = npl_session_default_params();
    c.defaults.smp = (srv_sampling){.temperature = p.temperature, .top_p = p.top_p, .min_p = p.min_p, .top_k = p.top_k,
                                    .presence_penalty = p.presence_penalty, .frequency_penalty = p.frequency_penalty};
    c.defaults.max_tokens = -1;
    const char *model = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a, *v;
        int k = cli_next(cmd, OPTS, argc, argv, &i, &a, &v);
        if (k == CLI_HELP) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (k == CLI_ERROR) return 2;
        long long iv;
        double fv;
        int bad = 0;
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "--host")) c.host = v;
        else if (!strcmp(a, "--api-key")) c.api_key = v;
        else if (!strcmp(a, "-a")) c.model_id = v;
        else if (!strcmp(a, "--chat-template")) mp.chat_template = v;
        else if (!strcmp(a, "-v")) c.verbose = 1;
        else if (!strcmp(a, "--port")) bad = cli_int(cmd, a, v, 0, 65535, &iv), c.port = (int)iv;
        else if (!strcmp(a, "--parallel")) bad = cli_int(cmd, a, v, 1, 64, &iv), c.n_parallel = (int)iv;
        else if (!strcmp(a, "--queue")) bad = cli_int(cmd, a, v, 0, 4096, &iv), c.max_queue = (int)iv;
        else if (!strcmp(a, "-c")) bad = cli_int(cmd, a, v, 0, 1 << 20, &iv), sp.n_ctx = (int)iv;
        else if (!strcmp(a, "-t")) bad = cli_int(cmd, a, v, -1, 256, &iv), threads = iv < 0 ? 0 : (int)iv;
        else if (!strcmp(a, "-n")) bad = cli_int(cmd, a, v, -1, 1 << 20, &iv), c.defaults.max_tokens = (int)iv;
        else if (!strcmp(a, "--temp")) bad = cli_float(cmd, a, v, 0, 2, &fv), c.defaults.smp.temperature = (float)fv;
        else if (!strcmp(a, "--top-k")) bad = cli_int(cmd, a, v, 0, 1 << 24, &iv), c.defaults.smp.top_k = (int)iv;
        else if (!strcmp(a, "--top-p")) bad = cli_float(cmd, a, v, 0, 1, &fv), c.defaults.smp.top_p = (float)fv;
        else if (!strcmp(a, "--min-p")) bad = cli_float(cmd, a, v, 0, 1, &fv), c.defaults.smp.min_p = (float)fv;
        else if (!strcmp(a, "--max-body")) bad = cli_int(cmd, a, v, 1024, 1ll << 30, &iv), c.max_body = (size_t)iv;
        else if (!strcmp(a, "--timeout")) bad = cli_int(cmd, a, v, 1, 3600, &iv), c.timeout_s = (unsigned)iv;
        else if (!strcmp(a, "--max-connections")) bad = cli_int(cmd, a, v, 1, 4096, &iv), c.max_connections = (int)iv;
        if (bad) return 2;
    }
    if (c.defaults.max_tokens == 0) c.defaults.max_tokens = -1;
    if (!model && !(model = cli_default_model()))
        return cli_missing(cmd, "-m MODEL (no default model: run scripts/setup.sh)");
    if (!c.model_id) c.model_id = base_name(model);
    mp.n_threads = threads;
    char err[512];
    npl_model *m = npl_model_open(model, &mp, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "npullm serve: %s\n", err);
        return 1;
    }
    const char *note = npl_model_notice(m);
    if (note && *note) fprintf(stderr, "npullm serve: note: %s\n", note);
    sp.n_ctx = resolve_ctx(m, sp.n_ctx);
    c.defaults.n_ctx = sp.n_ctx;
    if (c.defaults.max_tokens > sp.n_ctx) {
        fprintf(stderr, "npullm serve: -n %d: more than the context of %d\n", c.defaults.max_tokens, sp.n_ctx);
        npl_model_close(m);
        return 2;
    }
    c.slot.model = m;
    c.slot.sp = sp;
    if (!is_loopback(c.host) && !c.api_key)
        fprintf(stderr, "npullm serve: warning: listening on %s without --api-key: anyone who reaches it may use it\n",
                c.host);

    /* SIGINT/SIGTERM are taken by sigwait below: blocked in every thread */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv_server *s = srv_start(&c, err, sizeof err);
    if (!s) {
        fprintf(stderr, "npullm serve: %s\n", err);
        npl_model_close(m);
        return 1;
    }
    const int nt = npl_model_n_threads(m);
    fprintf(stderr,
            "npullm serve: listening on http://%s:%d (model %s, %d session%s, context %d, one pool of %d thread%s)\n",
            c.host, srv_port(s), c.model_id, c.n_parallel, c.n_parallel > 1 ? "s" : "", sp.n_ctx, nt, nt > 1 ? "s" : "");
    fflush(stderr);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "npullm serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_stop(s);
    npl_model_close(m);
    return 0;
}
