#!/usr/bin/env bash
# aarch64: the whole project cross built with Debian's gcc-aarch64-linux-gnu
# (cmake/aarch64-linux-gnu.cmake, warnings are errors), then the op, kernel,
# tokenizer and an end-to-end test (the random models of test_model_reference
# against llama.cpp's recorded logits) run under qemu-user. With -cpu max every
# kernel family runs (the tests loop over generic, neon, dotprod, i8mm as they
# do over x86's; test_gemm checks the i8mm GEMM bit for bit against the
# dotprod vec_dot, and this script that it ran for all five types); test_vec_dot
# and test_gemm then run on CPUs without i8mm (cortex-a76) and without dotprod
# (cortex-a72) to check that detection picks the family they have.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
build=$(realpath -m "${NPL_AARCH64_BUILD:-build-aarch64}")
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$jobs"
tests='^(test_dtype|test_vec_dot|test_iq4|test_gemm|test_gemv|test_nn_kernels|test_ops|test_tokenizer|test_model_reference|test_wpack)$'
NPL_TEST_SKIP_REAL_MODEL=1 ctest --test-dir "$build" --output-on-failure -j"$jobs" -R "$tests"
for want in "max i8mm" "cortex-a76 dotprod" "cortex-a72 neon"; do
    set -- $want
    out=$(cd tests && qemu-aarch64 -cpu "$1" "$build/tests/test_vec_dot") || { echo "$out" >&2; exit 1; }
    echo "$out" | grep -qx "best isa: $2" || { echo "test_aarch64: -cpu $1: expected best isa $2, got: $(echo "$out" | head -n 1)" >&2; exit 1; }
    gemm=$(cd tests && qemu-aarch64 -cpu "$1" "$build/tests/test_gemm") || { echo "$gemm" >&2; exit 1; }
    n=$(echo "$gemm" | grep -c '^i8mm ' || true)
    want_n=0; [ "$2" = i8mm ] && want_n=5
    [ "$n" = "$want_n" ] || { echo "test_aarch64: -cpu $1: the i8mm GEMM ran for $n types, expected $want_n" >&2; exit 1; }
    echo "test_aarch64: -cpu $1: $(echo "$out" | head -n 1), $(echo "$out" | tail -n 1); i8mm GEMM types: $n"
done
