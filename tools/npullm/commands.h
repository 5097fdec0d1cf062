/* Subcommands of the npullm CLI; each lives in its own cmd_*.c file. */
#ifndef NPL_COMMANDS_H
#define NPL_COMMANDS_H
int npl_cmd_inspect(int argc, char **argv);
int npl_cmd_inspect_package(const char *dir); /* cmd_inspect_pkg.c */
int npl_cmd_eval_logits(int argc, char **argv);
int npl_cmd_bench(int argc, char **argv);
int npl_cmd_bench_matmul(int argc, char **argv);
int npl_cmd_run(int argc, char **argv);
int npl_cmd_tokenize(int argc, char **argv);
int npl_cmd_perplexity(int argc, char **argv);
int npl_cmd_compile(int argc, char **argv);
int npl_cmd_serve(int argc, char **argv);
#endif
