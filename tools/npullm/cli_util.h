/* Small helpers shared by the subcommands: strict number parsing and files. */
#ifndef NPL_CLI_UTIL_H
#define NPL_CLI_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* Parse an integer in [lo, hi]; on failure prints "npullm CMD: FLAG: ..." and returns -1. */
int cli_int(const char *cmd, const char *flag, const char *s, long long lo, long long hi, long long *out);
int cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);

/* One flag a subcommand takes: the name the code compares against, other
 * spellings ('|'-separated, llama.cpp's long names among them; NULL: none),
 * and whether a value follows it. Tables end with {NULL}. */
typedef struct {
    const char *name, *aliases;
    int takes_value;
} cli_opt;
enum { CLI_ERROR = -1, CLI_FLAG = 1, CLI_HELP = 2 };
/* Matches argv[*i] against opts: CLI_FLAG with *name (the table's name) and
 * *val (its value, *i advanced past it; NULL for a switch); CLI_HELP for -h or
 * --help; CLI_ERROR after one line on stderr for an unknown flag (wherever it
 * stands), a missing value or a stray argument. */
int cli_next(const char *cmd, const cli_opt *opts, int argc, char **argv, int *i, const char **name,
             const char **val);
/* "npullm CMD: WHAT is required" on stderr; returns 2 (the usage-error exit). */
int cli_missing(const char *cmd, const char *what);
/* A warning when n_ctx is above the model's trained context. */
void cli_warn_ctx(const char *cmd, const char *flag, int n_ctx, int n_ctx_train);
/* The CPU's model name (/proc/cpuinfo), or "unknown". */
const char *cli_cpu_model(void);
/* s with JSON string escapes (quotes, backslashes, control bytes) in buf. */
const char *cli_json_esc(const char *s, char *buf, size_t n);
/* Whole file into a NUL-terminated malloc'd buffer; NULL + message on failure. */
char *cli_read_file(const char *cmd, const char *path, size_t *len);
double cli_now(void); /* seconds, monotonic */
/* The default model: $NPULLM_MODEL, else the chat model scripts/chat_model.py
 * assembles (Qwen2.5-Coder-0.5B-Instruct), else the Gemma 3 270M file that
 * scripts/install-deps.sh assembles; NULL if none exists. */
const char *cli_default_model(void);
/* Comma-separated list of positive integers, at most cap. Returns count or -1. */
int cli_int_list(const char *cmd, const char *flag, const char *s, int *out, int cap);

#endif
