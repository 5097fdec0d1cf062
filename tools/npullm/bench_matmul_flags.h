/* The flags both bench-matmul variants take (cmd_bench_matmul.c for the CPU
 * and vnpu, cmd_bench_matmul_qnn.c for --accel qnn-htp). */
#ifndef NPL_CLI_BENCH_MATMUL_FLAGS_H
#define NPL_CLI_BENCH_MATMUL_FLAGS_H

typedef struct {
    long long m, k, n, warmup, iters;
} bm_flags;

/* Their entries of a cli_opt table (--accel: each variant checks its value). */
#define BM_FLAG_OPTS                                                                                                  \
    {"--m", NULL, 1}, {"--k", NULL, 1}, {"--n", NULL, 1}, {"--warmup", NULL, 1}, {"--iters", NULL, 1}, {"--accel", NULL, 1}

/* 1 if flag a is --m, --k, --n, --warmup or --iters (v parsed into f), 0 if
 * it is another flag, -1 after a message for a bad value. */
int bm_flag(const char *a, const char *v, bm_flags *f);
/* 0 if the three matrices stay within 2^28 elements, else -1 after a message. */
int bm_check_size(const bm_flags *f);
#endif
