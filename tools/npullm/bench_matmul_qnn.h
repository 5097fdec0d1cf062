/* npullm bench-matmul --accel qnn-htp (cmd_bench_matmul_qnn.c). */
#ifndef NPL_CLI_BENCH_MATMUL_QNN_H
#define NPL_CLI_BENCH_MATMUL_QNN_H
int npl_cmd_bench_matmul_qnn(int argc, char **argv);
#endif
