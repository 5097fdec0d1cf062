#!/usr/bin/env python3
"""llamacpp_selfcheck.py - how well llama.cpp agrees with itself.

Usage:
  bench/llamacpp_selfcheck.py MODEL.gguf [--text FILE] [--tokens N] [--threads N] [--flash-attn]

Runs llama.cpp (llama-cpp-python) teacher-forced over the first N tokens of a
text twice: once in one batch of N, once one token at a time (n_batch = 1),
and prints top-1 agreement, mean/max KL and max |logit difference| between the
two runs. This is the noise floor of a quantized model: numbers that
verify_llamacpp.py reports for npullm vs llama.cpp should be read against it.
"""
import argparse
import os
import sys

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def no_extra_bufts():
    """Make llama-cpp-python's Llama() load with use_extra_bufts off."""
    import llama_cpp.llama_cpp as lc
    orig = lc.llama_model_default_params

    def params():
        p = orig()
        p.use_extra_bufts = False
        return p
    lc.llama_model_default_params = params


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-extra-bufts", action="store_true",
                    help="load without llama.cpp's extra buffer types (see verify_llamacpp.py)")
    ap.add_argument("--flash-attn", action="store_true",
                    help="flash attention on (llama.cpp's CLI default -fa auto turns it on for the CPU)")
    a = ap.parse_args()
    import llama_cpp
    if a.no_extra_bufts:
        no_extra_bufts()
    text = open(a.text, "rb").read()
    runs = []
    for batch in (a.tokens, 1):
        llm = llama_cpp.Llama(model_path=a.model, n_ctx=a.tokens, n_batch=batch, n_ubatch=batch,
                              logits_all=True, n_threads=a.threads,
                              flash_attn=a.flash_attn, verbose=False)
        ids = llm.tokenize(text, add_bos=True)[: a.tokens]
        llm.eval(ids)
        runs.append(np.array(llm.scores[: len(ids)], dtype=np.float64))
        del llm
    x, y = runs
    lx, ly = log_softmax(x), log_softmax(y)
    kl = (np.exp(lx) * (lx - ly)).sum(-1)
    print("llama.cpp batch %d vs batch 1 over %d tokens:" % (a.tokens, len(x)))
    print("top-1 agree  %.2f %%" % (100.0 * (x.argmax(-1) == y.argmax(-1)).mean()))
    print("KL mean      %.5f nats (max %.4f)" % (kl.mean(), kl.max()))
    print("|dlogit| max %.3f" % np.abs(x - y).max())


if __name__ == "__main__":
    main()
