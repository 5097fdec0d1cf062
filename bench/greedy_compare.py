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
rounding differences can flip).
"""
import argparse
import subprocess
import sys

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--npullm", default="build/npullm")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--prompts")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    prompts = PROMPTS if not a.prompts else [l.rstrip("\n") for l in open(a.prompts) if l.strip()]

    import llama_cpp
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=512, n_threads=a.threads, logits_all=True, verbose=False)
    eog = {llm.token_eos()}
    try:
        eog.add(llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)[0])
    except Exception:
        pass
    n_match = 0
    for p in prompts:
        out = subprocess.run([a.npullm, "run", "-m", a.model, "-p", p, "-n", str(a.n), "--temp", "0",
                              "-t", str(a.threads), "--no-stats"], capture_output=True, check=True)
        ours = out.stdout.decode("utf-8", "replace").rstrip("\n")
        ids = llm.tokenize(render_gemma(p).encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        gen, gaps = [], []
        for _ in range(a.n):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
            top2 = np.argsort(-logits)[:2]
            tok = int(top2[0])
            if tok in eog:
                break
            gen.append(tok)
            gaps.append(float(logits[top2[0]] - logits[top2[1]]))
            llm.eval([tok])
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
            print("result   : diverge at char %d, llama.cpp step %d, its top-2 logit gap there %.4f" % (k, step, gaps[step] if step < len(gaps) else float("nan")))
    print("=" * 72)
    print("identical: %d / %d" % (n_match, len(prompts)))


if __name__ == "__main__":
    sys.exit(main())
