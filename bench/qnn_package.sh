#!/bin/sh
# Issue-16 figures of a qnn-htp package on this machine. On x86 QNN's HTP
# backend is a software emulator: its times say what the emulator costs, not
# what a phone's NPU does; the host time outside QNN's execute is the CPU
# work an app pays per step on a phone too.
# usage: bench/qnn_package.sh [MODEL.gguf] [BUILD_DIR] [WORK_DIR]
#   env: SOC (SM8650), WEIGHTS (w8), CHUNK (8), CTX (64), DECODE (32 steps),
#        REPS (1: the wall and the emulator times are then of the same steps), CHECK (1; 0 = --no-check)
# Prints: compile time per stage and QNN finalize time per graph (from the
# compile summary), package size against the GGUF's weights, emulator time
# per prefill chunk and per decode step (npullm bench --profile: QNN's
# graphExecute alone, mean over every execution), the wall time per chunk /
# step, the host time per decode step outside QNN's execute (wall - the AR-1
# graphs' execute), RssAnon after opening the package, and the CPU path of
# the same GGUF with the same prompt / decode lengths.
set -eu
M=${1:-tests/data/models/rand-gemma2-q8_0.gguf}
B=${2:-build}
W=${3:-/tmp/npullm_qnn_package}
SOC=${SOC:-SM8650}
WEIGHTS=${WEIGHTS:-w8}
CHUNK=${CHUNK:-8}
CTX=${CTX:-64}
DECODE=${DECODE:-32}
REPS=${REPS:-1}
CHECK=${CHECK:-1}
N=$B/npullm
P=$W/pkg
mkdir -p "$W"
NOCHECK=""
[ "$CHECK" = 0 ] && NOCHECK=--no-check
echo "model $M; target qnn-htp $SOC, weights $WEIGHTS, chunk $CHUNK, ctx $CTX; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
$N compile -m "$M" -o "$P" --force --target qnn-htp --soc "$SOC" --weights "$WEIGHTS" --chunk "$CHUNK" --ctx "$CTX" \
    -t 2 $NOCHECK 2> "$W/compile.log"
t1=$(date +%s.%N)
echo "compile (wall $(echo "$t1 - $t0" | bc) s):"
grep -E "^  (subgraphs|ops|requant|files|shared|twice|time)|finalize:|\.bin:" "$W/compile.log" | sed 's/^/  /'
W8=$(stat -c %s "$M")
PK=$(du -sb "$P" | cut -f1)
echo "size: package $PK bytes, GGUF $W8 bytes ($(echo "scale=3; $PK / $W8" | bc) x)"

$N bench -m "$P" -p "$CHUNK" -n "$DECODE" -r "$REPS" -t 2 --profile > "$W/bench.out" 2> "$W/bench.err"
$N bench -m "$M" -p "$CHUNK" -n "$DECODE" -r "$REPS" -t 2 > "$W/cpu.out" 2>&1
awk -v chunk="$CHUNK" -v dec="$DECODE" -v out="$W/bench.out" -v cpu="$W/cpu.out" '
function rate(file, test,    line, f, n) {
    while ((getline line < file) > 0) {
        n = split(line, f, "|")
        if (n > 6 && f[6] ~ ("^ *" test " *$")) { close(file); split(f[7], v, " "); return v[1] }
    }
    close(file); return 0
}
/^qnn-htp profile: graph / {
    g = $4; sub(":", "", g); mean = $8
    if (g ~ ("_ar" chunk "_o1$")) pre += mean
    else if (g ~ "_ar1_o1$") d1 += mean
    printf "  emulator (QNN graphExecute, x86 software emulation): %s %s ms mean over %s executions\n", g, mean, $5
}
END {
    pp = rate(out, "pp" chunk); tg = rate(out, "tg" dec); cpp = rate(cpu, "pp" chunk); ctg = rate(cpu, "tg" dec)
    if (pp > 0) printf "  package: prefill chunk of %d: %.2f ms wall (emulator %.2f ms in its AR-%d graphs)\n", chunk, 1000 * chunk / pp, pre, chunk
    if (tg > 0) printf "  package: decode step: %.2f ms wall, emulator %.2f ms in the AR-1 graphs, host outside QNN execute %.2f ms\n", 1000 / tg, d1, 1000 / tg - d1
    if (cpp > 0 && ctg > 0) printf "  CPU path of the GGUF: prefill chunk of %d %.2f ms, decode step %.2f ms\n", chunk, 1000 * chunk / cpp, 1000 / ctg
}' "$W/bench.err"
grep -E "after open" "$W/bench.out" | awk '{printf "  RssAnon after opening the package: %s MiB (RssFile %s MiB)\n", $3, $4}'
