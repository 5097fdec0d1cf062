#!/usr/bin/env bash
# build_llamacpp.sh - build llama.cpp's command-line tools (the peer engine).
#
# The source is the llama.cpp tree vendored inside the llama-cpp-python sdist
# from PyPI (the only registry reachable here), so the tools match the
# llama-cpp-python version used by bench/verify_llamacpp.py as closely as the
# sdist allows.
#
# Usage:
#   bench/build_llamacpp.sh [--force]
#
# Environment:
#   NPULLM_PEER_DIR        cache root   (default /root/.cache/npullm-peer)
#   LLAMACPP_BUILD_DIR     build dir    (default $NPULLM_PEER_DIR/llama.cpp-build)
#   LLAMACPP_PY_VERSION    llama-cpp-python version to download (default: the
#                          installed one if any, else the newest)
#   JOBS                   parallel jobs (default nproc)
#   LLAMACPP_CMAKE_EXTRA   more cmake arguments, e.g. an AVX2-only build on a
#                          CPU with AVX-512 (what bench/peer --isa 1 compares with):
#                          "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
#                          -DGGML_F16C=ON -DGGML_BMI2=ON" with
#                          LLAMACPP_BUILD_DIR=$NPULLM_PEER_DIR/llama.cpp-build-avx2
#   LLAMACPP_TOOLS         the tools to build (default: all of TOOLS below)
#
# Builds with clang (GCC 12 builds of ggml's AMX kernels can SIGILL on this
# machine), -DGGML_NATIVE=ON -DLLAMA_CURL=OFF, Release.  Idempotent: if the
# binaries already exist it only prints their paths.  On success the last
# lines are "NAME=PATH" for each tool found (llama-bench, llama-perplexity,
# llama-completion, llama-simple, ...), and the same list is written to
# $LLAMACPP_BUILD_DIR/tools.env for other scripts to source.
#
# Takes ~10-20 minutes on 2 cores; run it in the background, e.g.
#   nohup bench/build_llamacpp.sh > /tmp/build_llamacpp.log 2>&1 &
set -euo pipefail

PY=$(dirname "$0")/../scripts/python   # the project's venv (scripts/install-deps.sh)
PEER_DIR=${NPULLM_PEER_DIR:-/root/.cache/npullm-peer}
BUILD_DIR=${LLAMACPP_BUILD_DIR:-$PEER_DIR/llama.cpp-build}
SRC_ROOT=$PEER_DIR/src
JOBS=${JOBS:-$(nproc)}
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

TOOLS=${LLAMACPP_TOOLS:-"llama-bench llama-perplexity llama-cli llama-completion llama-simple llama-tokenize llama-eval-callback llama-run"}

print_tools() {
    local out="$BUILD_DIR/tools.env" found=0
    : > "$out.tmp"
    for t in $TOOLS; do
        if [ -x "$BUILD_DIR/bin/$t" ]; then
            echo "${t//-/_}=$BUILD_DIR/bin/$t" >> "$out.tmp"
            found=1
        fi
    done
    mv "$out.tmp" "$out"
    cat "$out"
    [ $found = 1 ]
}

built=1
for t in $TOOLS; do
    case $t in llama-cli|llama-run|llama-completion|llama-tokenize|llama-eval-callback) continue ;; esac
    [ -x "$BUILD_DIR/bin/$t" ] || built=0
done
if [ $FORCE = 0 ] && [ $built = 1 ]; then
    echo "llama.cpp already built in $BUILD_DIR" >&2
    print_tools
    exit 0
fi

mkdir -p "$SRC_ROOT"

# 1. Fetch the sdist (reuse one already downloaded).
VER=${LLAMACPP_PY_VERSION:-}
if [ -z "$VER" ]; then
    VER=$("$PY" -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))' 2>/dev/null || true)
fi
SDIST=""
if [ -n "$VER" ]; then
    SDIST=$(ls "$SRC_ROOT"/llama_cpp_python-"$VER".tar.gz 2>/dev/null | head -n1 || true)
else
    SDIST=$(ls -t "$SRC_ROOT"/llama_cpp_python-*.tar.gz 2>/dev/null | head -n1 || true)
fi
if [ -z "$SDIST" ]; then
    spec=llama-cpp-python
    [ -n "$VER" ] && spec="llama-cpp-python==$VER"
    echo "downloading sdist $spec" >&2
    "$PY" -m pip download --no-binary :all: --no-deps "$spec" -d "$SRC_ROOT" >&2
    if [ -n "$VER" ]; then
        SDIST=$(ls "$SRC_ROOT"/llama_cpp_python-"$VER".tar.gz | head -n1)
    else
        SDIST=$(ls -t "$SRC_ROOT"/llama_cpp_python-*.tar.gz | head -n1)
    fi
fi
echo "sdist: $SDIST" >&2

# 2. Unpack.
UNPACK_DIR=$SRC_ROOT/$(basename "$SDIST" .tar.gz)
if [ ! -f "$UNPACK_DIR/vendor/llama.cpp/CMakeLists.txt" ]; then
    tar -xzf "$SDIST" -C "$SRC_ROOT"
fi
LLAMA_SRC=$UNPACK_DIR/vendor/llama.cpp
[ -f "$LLAMA_SRC/CMakeLists.txt" ] || { echo "no vendor/llama.cpp in $SDIST" >&2; exit 1; }

# 3. Configure + build.
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
CC=clang CXX=clang++ cmake -S "$LLAMA_SRC" -B "$BUILD_DIR" "${GEN[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=ON \
    -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=OFF \
    -DBUILD_SHARED_LIBS=OFF ${LLAMACPP_CMAKE_EXTRA:-} >&2

# Only ask for targets that this llama.cpp version defines.  (llama-cli is
# only defined with LLAMA_BUILD_SERVER=ON, which needs the web UI build;
# llama-completion is the classic text-completion CLI.)
help=$(cmake --build "$BUILD_DIR" --target help 2>/dev/null || true)
targets=()
for t in $TOOLS; do
    if printf '%s\n' "$help" | grep -qE "(^|[ :])$t(:| |$)"; then
        targets+=("$t")
    fi
done
[ ${#targets[@]} -gt 0 ] || { echo "no known tool targets found" >&2; exit 1; }
echo "building: ${targets[*]}" >&2
cmake --build "$BUILD_DIR" --config Release -j "$JOBS" --target "${targets[@]}" >&2

echo "$SDIST" > "$BUILD_DIR/SOURCE"
print_tools
