/* npullm run's flags and how they meet a config.json: library defaults, then
 * the config's values, then every flag given on the command line, so an
 * explicit flag always wins. Values that cannot take effect are refused
 * (or, where the run still makes sense, named in a warning). */
#ifndef NPL_RUN_FLAGS_H
#define NPL_RUN_FLAGS_H
#include "npullm.h"

typedef struct {
    const char *model, *prompt, *file;
    int raw, stats;
    int until_full;      /* -n -1: generate until EOS or the context is full */
    /* set when the flag was given (the config's value is then overridden) */
    int has_ctx, has_chunk, has_system, has_template;
    char model_path[4096]; /* what the engine opens: the GGUF or package graph */
    npl_config *config;    /* the config -m names (owns the strings it set in the params) */
} run_args;

/* Parses argv, loads the config (when -m names one or a package) and merges
 * as above into *p, then runs the checks. Returns 0, 1 for -h (usage
 * printed), or 2/1 after one line on stderr (usage error / bad file). */
int run_flags_resolve(int argc, char **argv, const char *usage, npl_engine_params *p, run_args *ra);
void run_flags_free(run_args *ra);

#endif
