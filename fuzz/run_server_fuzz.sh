#!/bin/sh
# usage: fuzz/run_server_fuzz.sh [RUNS] [TARGET...]   (default 1000000; server_json server_http)
#
# Reproduces the server fuzz runs of issue 18: fuzz_server_json then fuzz_server_http,
# one at a time (one libFuzzer process), RUNS executions each, under ASan+UBSan, each
# niced (NPL_FUZZ_NICE, default 19: the machine is shared). Per target it prints
# libFuzzer's final stats (stat::number_of_executed_units, stat::average_exec_per_sec)
# and one summary line: executions, exec/s, wall and CPU seconds, the CPU's name.
# Exits nonzero on the first finding (crash-*, leak-*, timeout-* or oom-* under
# build-fuzz/) or when a target stops short of RUNS.
set -eu
runs=${1:-1000000}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- server_json server_http
here=$(cd "$(dirname "$0")" && pwd)
build=${NPL_FUZZ_BUILD:-$here/../build-fuzz}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mkdir -p "$build"
for t in "$@"; do
    log="$build/run_$t.log"
    t0=$(date +%s)
    c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    rc=0
    nice -n "${NPL_FUZZ_NICE:-19}" "$here/run" "$t" 86400 -runs="$runs" -timeout=30 >"$log" 2>&1 || rc=$?
    # the fuzzer is our waited-for child: its CPU time is in our cutime/cstime (ticks)
    c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    wall=$(( $(date +%s) - t0 ))
    grep '^stat::' "$log" || true
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "fuzz_$t: ${n:-?} executions, ${eps:-?} exec/s, ${wall} s wall, $(( (c1 - c0) / $(getconf CLK_TCK) )) s CPU" \
         "(nice ${NPL_FUZZ_NICE:-19}, $cpu, load $(cut -d' ' -f1-3 /proc/loadavg)), exit $rc; log $log"
    if [ "$rc" != 0 ] || [ "${n:-0}" -lt "$runs" ]; then
        grep -E 'ERROR|SUMMARY|Test unit written|fuzz_server' "$log" | head -20 >&2 || true
        echo "fuzz_$t: a finding or a short run (see $log)" >&2
        exit 1
    fi
done
