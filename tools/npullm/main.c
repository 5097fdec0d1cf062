/* npullm: command-line entry point; dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

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
    {"eval-logits", npl_cmd_eval_logits, "teacher-forced logits of token ids, for comparison with llama.cpp"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: npullm COMMAND [options]   (npullm COMMAND --help for details)\n\ncommands:\n");
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
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "npullm: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
