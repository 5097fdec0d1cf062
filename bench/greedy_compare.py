#!/usr/bin/env python3
"""greedy_compare.py - greedy generations of npullm and llama.cpp side by side.

Usage:
  bench/greedy_compare.py MODEL.gguf [--npullm build/npullm] [-n 64] [--prompts FILE]

For each prompt (10 built-in ones, or one per line of --prompts) the prompt is
rendered through the model's chat template by npullm itself (`npullm run`,
greedy, -n N) and the same rendered text is fed to llama.cpp (llama-cpp-python),
which decodes greedily token by token. The script prints both outputs, whether
they match, and where they diverge: the step, both tokens, and llama.cpp's gap
between its top-2 logits at that step (a small gap means a near-tie that
rounding differences can flip). At that step it also runs npullm teacher-forced
on llama.cpp's tokens (`npullm eval-logits`) and prints npullm's margin
between the same two tokens, so a flip is visible as two nearly equal logits.

With --self, llama.cpp is also run against itself: the prompt evaluated in one
batch (as above) versus one token at a time (n_batch 1), which differ only in
rounding order. Its divergences are the noise floor any engine faces.
"""
import argparse
import os
import subprocess
import sys
import tempfile

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np

PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Translate 'good morning' into Spanish.",
    "What is 12 times 12?",
    "Name a famous painter.",
    "Give me a tip for learning to code.",
    "Why is the sky blue?",
    "Describe a cat in five words.",
]

# The Gemma template as npullm renders it (src/llm/chat_template.c, gemma).
def render_gemma(user):
    return "<start_of_turn>user\n" + user + "<end_of_turn>\n<start_of_turn>model\n"


def greedy(llm, ids, n, eog):
    """llama.cpp greedy decoding: tokens, top-2 gaps and the logits row of each step."""
    llm.reset()
    llm.eval(ids)
    gen, gaps, tops, rows = [], [], [], []
    for _ in range(n):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        rows.append(logits.astype(np.float32))
        top2 = np.argsort(-logits)[:2]
        tok = int(top2[0])
        if tok in eog:
            break
        gen.append(tok)
        gaps.append(float(logits[top2[0]] - logits[top2[1]]))
        tops.append((int(top2[0]), int(top2[1])))
        llm.eval([tok])
    return gen, gaps, rows


def npullm_logits(a, seq):
    """npullm's next-token logits after the token sequence seq (teacher-forced)."""
    with tempfile.TemporaryDirectory() as d:
        ids_path, out_path = os.path.join(d, "ids.txt"), os.path.join(d, "logits.bin")
        with open(ids_path, "w") as f:
            f.write(" ".join(map(str, seq)))
        subprocess.run([a.npullm, "eval-logits", "-m", a.model, "--ids", ids_path, "--out", out_path,
                        "-t", str(a.threads), "--ctx", "512"], capture_output=True, check=True)
        lg = np.fromfile(out_path, dtype=np.float32)
        return lg[-(lg.size // len(seq)):].astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--npullm", default="build/npullm")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--prompts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--self", action="store_true", help="also llama.cpp batch-1 prefill vs batched")
    a = ap.parse_args()
    prompts = PROMPTS if not a.prompts else [l.rstrip("\n") for l in open(a.prompts) if l.strip()]

    import llama_cpp
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=512, n_threads=a.threads, logits_all=True, verbose=False)
    llm1 = llama_cpp.Llama(model_path=a.model, n_ctx=512, n_batch=1, n_threads=a.threads, logits_all=True,
                           verbose=False) if a.self else None
    eog = {llm.token_eos()}
    try:
        eog.add(llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)[0])
    except Exception:
        pass
    n_match = n_self = 0
    for p in prompts:
        out = subprocess.run([a.npullm, "run", "-m", a.model, "-p", p, "-n", str(a.n), "--temp", "0",
                              "-t", str(a.threads), "--no-stats"], capture_output=True, check=True)
        ours = out.stdout.decode("utf-8", "replace").rstrip("\n")
        ids = llm.tokenize(render_gemma(p).encode(), add_bos=True, special=True)
        gen, gaps, rows = greedy(llm, ids, a.n, eog)
        theirs = llm.detokenize(gen).decode("utf-8", "replace")
        same = ours == theirs
        n_match += same
        print("=" * 72)
        print("prompt   :", p)
        print("npullm   :", repr(ours))
        print("llama.cpp:", repr(theirs))
        if same:
            print("result   : identical")
        else:
            # the first llama.cpp step whose text runs past the common prefix
            k = 0
            while k < min(len(ours), len(theirs)) and ours[k] == theirs[k]:
                k += 1
            step, acc = 0, ""
            for step, t in enumerate(gen):
                acc = llm.detokenize(gen[: step + 1]).decode("utf-8", "replace")
                if len(acc) > k:
                    break
            print("result   : diverge at char %d, llama.cpp step %d, its top-2 logit gap there %.4f" % (
                k, step, gaps[step] if step < len(gaps) else float("nan")))
            if step < len(rows):
                # both engines on llama.cpp's tokens up to this step: which token each prefers
                ref, ours_lg = rows[step].astype(np.float64), npullm_logits(a, ids + gen[:step])
                t_l, t_n = int(np.argmax(ref)), int(np.argmax(ours_lg))
                if t_l == t_n:
                    print("           teacher-forced, npullm also picks %d here (its margin %.4f): the "
                          "divergence comes from an earlier step" % (t_n, ours_lg[t_n] - np.sort(ours_lg)[-2]))
                else:
                    print("           teacher-forced: llama.cpp prefers %d over %d by %.4f, npullm prefers %d "
                          "over %d by %.4f" % (t_l, t_n, ref[t_l] - ref[t_n], t_n, t_l, ours_lg[t_n] - ours_lg[t_l]))
        if llm1 is not None:
            gen1, _, _ = greedy(llm1, ids, a.n, eog)
            same1 = gen1 == gen
            n_self += same1
            if same1:
                print("llama.cpp batch-1 prefill: identical to its batched prefill")
            else:
                d = next(i for i in range(min(len(gen), len(gen1)) + 1)
                         if i >= min(len(gen), len(gen1)) or gen[i] != gen1[i])
                print("llama.cpp batch-1 prefill: diverges from its batched prefill at step %d (gap there %.4f): %r" % (
                    d, gaps[d] if d < len(gaps) else float("nan"), llm1.detokenize(gen1).decode("utf-8", "replace")))
    print("=" * 72)
    print("identical: %d / %d" % (n_match, len(prompts)))
    if llm1 is not None:
        print("llama.cpp batch-1 vs batched prefill identical: %d / %d" % (n_self, len(prompts)))


if __name__ == "__main__":
    sys.exit(main())
