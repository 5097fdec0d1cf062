#!/usr/bin/env python3
"""fixture_conditioning.py - is a random GGUF well conditioned enough for a top-1 bar?

Usage:
  bench/fixture_conditioning.py MODEL.gguf [...] [--tokens N] [--npullm build/npullm]

Runs llama.cpp (llama-cpp-python, extra buffer types off) teacher-forced over
the first N tokens of GPL-3 and prints, per model:
  * how often its argmax is the input token itself ("copy") and how many
    positions have a top-2 logit gap under 0.3;
  * llama.cpp against itself: batch N vs 1 with flash attention off and on,
    flash attention off vs on, and against the same file with the lowest
    mantissa bit of a random half of every f32 *norm.weight element flipped
    (a ~6e-8 relative change, the size of a summation-order difference), in
    both attention modes.
With --npullm also npullm eval-logits in its three --arith modes against
llama.cpp (ours and llamacpp-nofa vs FA off, llamacpp vs FA on), with the
first position where the logits part by more than 1e-3: a divergence present
from position 0 is an arithmetic difference, one that appears later after
~1e-6 agreement is a rounding flip that the fixture amplifies.

With int8 activations two runs that differ anywhere at float level end up
with independently rounded activations within two quantized matmuls, so a
fixture whose next tokens are decided by near-ties disagrees with itself;
issue 17's fixtures want every self-comparison >= 99.5 %.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llamacpp_selfcheck import log_softmax, no_extra_bufts  # noqa: E402


def llama_logits(model, ids, fa, batch, threads):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model, n_ctx=max(len(ids), 64), n_batch=batch, n_ubatch=batch,
                          logits_all=True, n_threads=threads, flash_attn=fa, verbose=False)
    llm.eval(ids)
    out = np.array(llm.scores[: len(ids)], dtype=np.float64)
    del llm
    return out


def npullm_logits(npullm, model, ids, arith, threads, d):
    ip, op = os.path.join(d, "ids.txt"), os.path.join(d, "npullm.f32")
    with open(ip, "w") as f:
        f.write(" ".join(map(str, ids)))
    subprocess.run([npullm, "eval-logits", "-m", model, "--ids", ip, "--out", op, "--ctx", str(len(ids)),
                    "-t", str(threads), "--arith", arith], check=True, capture_output=True)
    return np.fromfile(op, dtype=np.float32).reshape(len(ids), -1).astype(np.float64)


def ulp_twin(model, path, seed=0):
    """model with the lowest mantissa bit of half the f32 norm weights flipped"""
    import gguf
    shutil.copy(model, path)
    r = gguf.GGUFReader(path, "r+")
    rng = np.random.default_rng(seed)
    for t in r.tensors:
        if t.name.endswith("norm.weight") and t.tensor_type == gguf.GGMLQuantizationType.F32:
            v = t.data.view(np.uint32)
            v ^= (rng.random(v.shape) < 0.5).astype(np.uint32)
    del r


def agree(a, b):
    return 100.0 * (a.argmax(-1) == b.argmax(-1)).mean()


def describe(a, b):
    la, lb = log_softmax(a), log_softmax(b)
    d = np.abs(a - b).max(-1)
    onset = np.nonzero(d > 1e-3)[0]
    return "top-1 %.2f %%, KL %.2e, max |dlogit| %.3g, position 0 %.2g, first > 1e-3 at %s" % (
        agree(a, b), (np.exp(la) * (la - lb)).sum(-1).mean(), d.max(), d[0], onset[0] if len(onset) else "-")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--npullm", help="also compare npullm eval-logits (path to the CLI)")
    a = ap.parse_args()
    no_extra_bufts()
    import llama_cpp
    text = open(a.text, "rb").read()
    for m in a.models:
        llm = llama_cpp.Llama(model_path=m, n_ctx=64, vocab_only=True, verbose=False)
        ids = llm.tokenize(text, add_bos=True)[: a.tokens]
        del llm
        n = len(ids)
        r = {(fa, b): llama_logits(m, ids, fa, b, a.threads) for fa in (False, True) for b in (n, 1)}
        x = r[(False, n)]
        s = np.sort(x, -1)
        print("%s, %d tokens: argmax = input token %.1f %%, top-2 gap < 0.3 on %.1f %%"
              % (os.path.basename(m), n, 100 * (x.argmax(-1) == np.array(ids)).mean(),
                 100 * (s[:, -1] - s[:, -2] < 0.3).mean()))
        with tempfile.TemporaryDirectory() as d:
            twin = os.path.join(d, "ulp.gguf")
            ulp_twin(m, twin)
            rows = [("FA off, batch %d vs 1" % n, r[(False, n)], r[(False, 1)]),
                    ("FA on, batch %d vs 1" % n, r[(True, n)], r[(True, 1)]),
                    ("FA off vs on", r[(False, n)], r[(True, n)]),
                    ("FA off vs 1-ulp norm weights", r[(False, n)], llama_logits(twin, ids, False, n, a.threads)),
                    ("FA on vs 1-ulp norm weights", r[(True, n)], llama_logits(twin, ids, True, n, a.threads))]
            for name, p, q in rows:
                print("  llama.cpp %-30s top-1 %.2f %%" % (name, agree(p, q)))
            if a.npullm:
                for arith, fa in (("ours", False), ("llamacpp-nofa", False), ("llamacpp", True)):
                    y = npullm_logits(a.npullm, m, ids, arith, a.threads, d)
                    print("  npullm --arith %-13s vs FA %s: %s" % (arith, "on " if fa else "off", describe(r[(fa, n)], y)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
