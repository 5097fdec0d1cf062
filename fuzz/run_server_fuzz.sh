#!/bin/sh
# usage: fuzz/run_server_fuzz.sh [RUNS]   (default 1000000)
#
# Reproduces the server fuzz runs of issue 18: fuzz_server_json then fuzz_server_http,
# one at a time (-jobs=1 equivalent: one libFuzzer process), RUNS executions each, under
# ASan+UBSan. Prints libFuzzer's final stats (stat::number_of_executed_units,
# stat::average_exec_per_sec) per target; exits nonzero on the first finding
# (crash-* under build-fuzz/).
set -eu
runs=${1:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
for t in server_json server_http; do
    nice -n 19 "$here/run" "$t" 3600 -runs="$runs" -timeout=30
done
