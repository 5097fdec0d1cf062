#!/usr/bin/env bash
# The test suite: a Release build and an ASan+UBSan build, each running every
# ctest test (unit, op, malformed-input and end-to-end tests on the real model),
# then the aarch64 cross build with its tests under qemu (scripts/test_aarch64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNPL_SANITIZE=ON -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE slow
# aarch64: cross build and the kernel / op / tokenizer / end-to-end tests under qemu-user
bash scripts/test_aarch64.sh
