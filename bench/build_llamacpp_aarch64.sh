#!/usr/bin/env bash
# build_llamacpp_aarch64.sh - llama.cpp's llama-bench cross built for aarch64
# (the peer of bench/arm_proxy.sh), from the same llama-cpp-python sdist as
# bench/build_llamacpp.sh (run that first: it fetches and unpacks it), with
# Debian's g++-aarch64-linux-gnu (scripts/install-deps.sh). ggml's ARM kernels
# are compiled for armv8.6-a + dotprod + i8mm (+fp16), what qemu's -cpu max
# has, as npullm picks its best family there at run time.
#
# Usage: bench/build_llamacpp_aarch64.sh     (~15 minutes on 2 cores)
# Prints LLAMA_BENCH_AARCH64=PATH on success.
set -euo pipefail
PEER_DIR=${NPULLM_PEER_DIR:-/root/.cache/npullm-peer}
BUILD_DIR=${LLAMACPP_AARCH64_BUILD_DIR:-$PEER_DIR/llama.cpp-build-aarch64}
JOBS=${JOBS:-$(nproc)}
src=$(ls -d "$PEER_DIR"/src/llama_cpp_python-*/vendor/llama.cpp 2>/dev/null | sort -V | tail -n 1 || true)
[ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || {
    echo "build_llamacpp_aarch64: no llama.cpp source in $PEER_DIR/src (run bench/build_llamacpp.sh first)" >&2; exit 1; }
command -v aarch64-linux-gnu-g++ >/dev/null || {
    echo "build_llamacpp_aarch64: aarch64-linux-gnu-g++ missing (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }
if [ ! -x "$BUILD_DIR/bin/llama-bench" ]; then
    cmake -S "$src" -B "$BUILD_DIR" \
        -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
        -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.6-a+dotprod+i8mm+fp16 \
        -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF >&2
    cmake --build "$BUILD_DIR" -j "$JOBS" --target llama-bench >&2
fi
echo "$src" > "$BUILD_DIR/SOURCE"
echo "LLAMA_BENCH_AARCH64=$BUILD_DIR/bin/llama-bench"
