/* npullm: command-line entry point; dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "npullm.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} npl_command;

static const npl_command commands[] = {
    {"run", npl_cmd_run, "generate from a prompt, or chat interactively"},
    {"tokenize", npl_cmd_tokenize, "print the token ids (and pieces) of a text"},
    {"perplexity", npl_cmd_perplexity, "perplexity of a text file (llama.cpp's method)"},
    {"inspect", npl_cmd_inspect, "print a GGUF file's metadata and tensor table"},
    {"bench", npl_cmd_bench, "prefill and decode throughput (llama-bench style) and memory"},
    {"bench-matmul", npl_cmd_bench_matmul, "one MatMul on the vnpu accelerator per precision, static vs app-write weights"},
    {"compile", npl_cmd_compile, "compile a GGUF model into an accelerator package (AR-N + AR-1 graphs)"},
    {"serve", npl_cmd_serve, "an OpenAI-compatible HTTP server (chat, completions, models, health)"},
    {"eval-logits", npl_cmd_eval_logits, "teacher-forced logits of token ids, for comparison with llama.cpp"},
};

/* The version, the kernel families this build has and what this CPU runs. */
static int version(void) {
    printf("npullm %s (library %s)\n", NPL_VERSION_STRING, npl_version());
    const int n_built = npl_kernel_families_built();
    printf("kernel families built:");
    for (int i = 0; i < n_built; i++) printf("%s %d %s", i ? "," : "", i, npl_kernel_family_name(i));
    const int best = npl_kernel_family_best();
    printf("\ncpu: %s (runs family %d %s)\n", cli_cpu_model(), best, npl_kernel_family_name(best));
    return 0;
}

static void usage(FILE *out) {
    fprintf(out, "usage: npullm COMMAND [options]   (npullm COMMAND --help for details)\n"
                 "       npullm --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) return version();
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "npullm: unknown command '%s' (npullm --help lists the commands)\n", argv[1]);
    return 2;
}
