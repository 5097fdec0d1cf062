/* Small helpers shared by the subcommands: strict number parsing and files. */
#ifndef NPL_CLI_UTIL_H
#define NPL_CLI_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* Parse an integer in [lo, hi]; on failure prints "npullm CMD: FLAG: ..." and returns -1. */
int cli_int(const char *cmd, const char *flag, const char *s, long long lo, long long hi, long long *out);
int cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);
/* Value of a flag that needs one: argv[*i + 1], advancing *i; NULL + message if missing. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* Whole file into a NUL-terminated malloc'd buffer; NULL + message on failure. */
char *cli_read_file(const char *cmd, const char *path, size_t *len);
double cli_now(void); /* seconds, monotonic */
/* The default model: $NPULLM_MODEL, else the Gemma 3 270M file that
 * scripts/install-deps.sh assembles; NULL if neither exists. */
const char *cli_default_model(void);
/* Comma-separated list of positive integers, at most cap. Returns count or -1. */
int cli_int_list(const char *cmd, const char *flag, const char *s, int *out, int cap);

#endif
