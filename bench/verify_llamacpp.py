#!/usr/bin/env python3
"""verify_llamacpp.py - compare npullm's logits with llama.cpp's (the peer).

Usage:
  bench/verify_llamacpp.py MODEL.gguf [--npullm PATH_TO_CLI]
      [--text FILE]      text to evaluate (default /usr/share/common-licenses/GPL-3)
      [--tokens N]       use the first N tokens (default 1024; 0 = all)
      [--ctx N]          chunk / context size (default 512)
      [--threads N]      threads for both engines (default 2)
      [--min-agree P]    fail if top-1 agreement < P percent (default 99
                         without --fa-floor; with it, top-1 is judged
                         against the floor, see --max-floor-ratio)
      [--max-kl K]       fail if mean KL(llama || npullm) > K nats (default 0.01)
      [--npullm-logits FILE]       use an existing npullm logits file instead
                                   of running --npullm
      [--save-llama-logits FILE]   also write llama.cpp's logits in the same
                                   format (for self-tests / offline diffing)
      [--workdir DIR] [--keep]     where the ids/logits files go (default: a
                                   temp dir, removed unless --keep)
      [--arith ours|llamacpp|llamacpp-nofa]  npullm eval-logits' --arith: its
                                   RoPE and attention rounding, or llama.cpp's
                                   with / without flash attention
      [--flash-attn]               run llama.cpp with flash attention (default
                                   off; llama-perplexity's default "auto" turns
                                   it on, which changes its PPL slightly:
                                   Gemma-3 270M Q4_K_M, GPL-3, ctx 512, 2
                                   chunks: 13.8433 off (= this script) vs
                                   13.9290 on)
      [--fa-floor]                 also run llama.cpp with the other flash
                                   attention setting on the same chunks and
                                   report its KL / top-1 / ppl against the
                                   main llama.cpp run: llama.cpp's own noise
                                   floor, next to npullm's KL
      [--max-floor-ratio R]        with --fa-floor: fail if npullm's mean KL
                                   > R x the floor's, or npullm's top-1
                                   disagreement rate > R x the floor's
                                   (default: report only).  llama.cpp itself
                                   disagrees with its FA-flipped run on 2-4 %
                                   of the rows of a real model, so a fixed
                                   99 % top-1 bar would fail llama.cpp too
      [--max-ppl-diff PCT]         fail if npullm's ppl differs from
                                   llama.cpp's by more than PCT percent
                                   (default: report only)

What it does:
 1. Tokenizes the text with llama.cpp (llama-cpp-python, add_bos as the model
    says), so tokenizer differences never count; keeps the first N ids.
 2. Splits the ids into chunks of --ctx tokens and, like llama-perplexity, puts
    BOS at the start of every chunk when the vocab adds BOS.  The resulting ids
    are written (whitespace separated) to ids.txt.
 3. Runs  npullm eval-logits -m MODEL --ids ids.txt --out npullm.f32 --ctx C -t T
    which must write raw little-endian float32 [n_ids][n_vocab]; row i =
    logits after consuming ids[chunk_start..i], each chunk evaluated from an
    empty KV cache.
 4. Runs llama.cpp teacher-forced over each chunk from an empty cache
    (Llama(model, logits_all=True, n_ctx=C, n_threads=T); eval; scores) and
    compares chunk by chunk against npullm's file through np.memmap, so only
    one chunk of llama.cpp logits is in memory (fine for Gemma's 262144-entry
    vocabulary).
 5. Prints n tokens, top-1 agreement %, mean and max KL(llama || npullm) of the
    next-token distributions, max and mean |logit difference|, and each
    engine's perplexity by llama-perplexity's method (for every full chunk,
    score the predictions of tokens ctx/2+1 .. ctx-1 from logits rows
    ctx/2 .. ctx-2; partial trailing chunks are compared but not scored).

Without --npullm / --npullm-logits only the llama.cpp half runs (perplexity,
entropy, timing) and the exit code is 0.  With a peer side the exit code is 1
if agreement < --min-agree or KL > --max-kl, 2 on usage/run errors.

Self-test of the comparison code (llama.cpp against itself -> 100%, KL 0):
  bench/verify_llamacpp.py M.gguf --save-llama-logits /tmp/l.f32
  bench/verify_llamacpp.py M.gguf --npullm-logits /tmp/l.f32

With --fa-floor a second llama.cpp context (flash attention flipped) evaluates
every chunk too; "floor KL mean" = mean KL(llama.cpp || llama.cpp other FA)
over the same rows, and "KL / floor" = npullm's KL mean over it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np


def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    y = x - m
    return y - np.log(np.exp(y).sum(axis=1, keepdims=True))


def make_ids(llm, text, n_tokens, ctx):
    ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    if n_tokens > 0:
        if len(ids) < n_tokens:
            print("note: text has only %d tokens (< --tokens %d)" % (len(ids), n_tokens))
        ids = ids[:n_tokens]
    ids = list(ids)
    bos = llm.token_bos()
    add_bos = bool(llm._model.add_bos_token()) if hasattr(llm._model, "add_bos_token") \
        else (len(ids) > 0 and ids[0] == bos)
    if add_bos and bos >= 0:
        for s in range(0, len(ids), ctx):
            ids[s] = bos  # as llama-perplexity does for every chunk
    return ids, add_bos


class Stats:
    """Streaming accumulators for the comparison."""

    def __init__(self):
        self.n = 0
        self.agree = 0
        self.kl_sum = 0.0
        self.kl_max = 0.0
        self.kl_argmax = -1
        self.absdiff_max = 0.0
        self.absdiff_sum = 0.0
        self.absdiff_count = 0
        self.nll_llama = 0.0
        self.nll_peer = 0.0
        self.n_scored = 0
        self.ent_sum = 0.0
        self.near_tie_disagree = 0
        self.gaps = []  # llama.cpp's top-2 logit gap per row

    def add_rows(self, row0, a, b, targets, scored):
        """a = llama.cpp logits, b = peer logits ([rows][n_vocab] float32);
        targets[r] = next token id (or -1); scored[r] = counts for ppl."""
        a64 = a.astype(np.float64)
        top2 = np.partition(a64, -2, axis=1)[:, -2:]
        self.gaps.extend((top2[:, 1] - top2[:, 0]).tolist())
        la = log_softmax(a64)
        pa = np.exp(la)
        self.ent_sum += float(-(pa * la).sum())
        if b is not None:
            b64 = b.astype(np.float64)
            lb = log_softmax(b64)
            kl = (pa * (la - lb)).sum(axis=1)
            kl = np.maximum(kl, 0.0)
            ta = a.argmax(axis=1)
            tb = b.argmax(axis=1)
            same = ta == tb
            self.agree += int(same.sum())
            if not same.all():
                # disagreements where llama.cpp's own top-2 margin is tiny
                rows = np.nonzero(~same)[0]
                for r in rows:
                    if a64[r, ta[r]] - a64[r, tb[r]] < 1e-3 * max(1.0, abs(a64[r, ta[r]])):
                        self.near_tie_disagree += 1
            self.kl_sum += float(kl.sum())
            k = int(kl.argmax())
            if kl[k] > self.kl_max:
                self.kl_max = float(kl[k])
                self.kl_argmax = row0 + k
            d = np.abs(a64 - b64)
            self.absdiff_max = max(self.absdiff_max, float(d.max()))
            self.absdiff_sum += float(d.sum())
            self.absdiff_count += d.size
            if not np.isfinite(b).all():
                self.absdiff_max = float("inf")
        self.n += a.shape[0]
        sel = np.nonzero(scored)[0]
        if len(sel):
            t = targets[sel]
            self.nll_llama -= float(la[sel, t].sum())
            if b is not None:
                self.nll_peer -= float(lb[sel, t].sum())
            self.n_scored += len(sel)


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
    ap = argparse.ArgumentParser(description="compare npullm logits with llama.cpp")
    ap.add_argument("model")
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", "-t", type=int, default=2)
    ap.add_argument("--npullm", help="path to the npullm CLI")
    ap.add_argument("--npullm-logits", help="precomputed npullm logits file")
    ap.add_argument("--arith", choices=["ours", "llamacpp", "llamacpp-nofa"], default="ours",
                    help="npullm's RoPE and attention arithmetic: ours (default), llama.cpp's with flash "
                         "attention (pair with --flash-attn) or without it (llamacpp-nofa)")
    ap.add_argument("--save-llama-logits")
    ap.add_argument("--min-agree", type=float, default=None,
                    help="fail below this top-1 agreement percent (default 99 without --fa-floor, "
                         "none with it: the floor ratio judges top-1 then)")
    ap.add_argument("--max-ppl-diff", type=float, default=0.0,
                    help="fail if |ppl npullm / ppl llama.cpp - 1| exceeds this percent (default: report only)")
    ap.add_argument("--max-kl", type=float, default=0.01)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--flash-attn", action="store_true")
    ap.add_argument("--no-extra-bufts", action="store_true",
                    help="load without llama.cpp's extra buffer types (AMX, repacked weights): its AMX "
                         "matmul crashes on some small random models (tests/data/llamacpp/record_reference.py)")
    ap.add_argument("--fa-floor", action="store_true",
                    help="also measure llama.cpp against itself with flash attention flipped (its noise floor)")
    ap.add_argument("--max-floor-ratio", type=float, default=0.0,
                    help="with --fa-floor: fail if npullm's mean KL exceeds this multiple of the floor's")
    ap.add_argument("--batch-rows", type=int, default=0,
                    help="rows compared at a time (default: ~64 MB of float64)")
    a = ap.parse_args()

    if a.min_agree is None:
        a.min_agree = 0.0 if a.fa_floor else 99.0
    if a.ctx < 4:
        sys.exit("--ctx too small")
    try:
        from llama_cpp import Llama
    except ImportError:
        print("llama-cpp-python is not installed (scripts/python -m pip install llama-cpp-python installs it into .venv)", file=sys.stderr)
        return 2

    with open(a.text, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()

    if a.no_extra_bufts:
        no_extra_bufts()
    llm = Llama(model_path=a.model, n_ctx=a.ctx, n_batch=a.ctx, n_ubatch=min(a.ctx, 512),
                logits_all=True, n_threads=a.threads, n_threads_batch=a.threads,
                flash_attn=a.flash_attn, verbose=False,
                yarn_beta_fast=-1.0, yarn_beta_slow=-1.0)  # the model's values, as llama.cpp's tools
    n_vocab = llm.n_vocab()
    # the same model with flash attention flipped: llama.cpp's own noise floor
    llm2 = None
    if a.fa_floor:
        llm2 = Llama(model_path=a.model, n_ctx=a.ctx, n_batch=a.ctx, n_ubatch=min(a.ctx, 512),
                     logits_all=True, n_threads=a.threads, n_threads_batch=a.threads,
                     flash_attn=not a.flash_attn, verbose=False,
                     yarn_beta_fast=-1.0, yarn_beta_slow=-1.0)
    ids, add_bos = make_ids(llm, text, a.tokens, a.ctx)
    n = len(ids)
    if n < 2:
        print("not enough tokens", file=sys.stderr)
        return 2
    n_full = n // a.ctx
    print("model          %s" % a.model)
    print("text           %s (%d bytes)" % (a.text, len(text.encode())))
    print("n_vocab        %d" % n_vocab)
    print("n tokens       %d  (ctx %d: %d full chunk(s)%s; BOS per chunk: %s)"
          % (n, a.ctx, n_full, ", 1 partial" if n % a.ctx else "", add_bos))

    workdir = a.workdir or tempfile.mkdtemp(prefix="npullm-verify-")
    os.makedirs(workdir, exist_ok=True)
    ids_path = os.path.join(workdir, "ids.txt")
    with open(ids_path, "w") as f:
        for s in range(0, n, a.ctx):
            f.write(" ".join(str(t) for t in ids[s:s + a.ctx]) + "\n")

    rc = 0
    try:
        # ---- peer side ------------------------------------------------------
        peer = None
        peer_time = None
        peer_path = a.npullm_logits
        if a.npullm and not peer_path:
            peer_path = os.path.join(workdir, "npullm.f32")
            cmd = [a.npullm, "eval-logits", "-m", a.model, "--ids", ids_path,
                   "--out", peer_path, "--ctx", str(a.ctx), "-t", str(a.threads), "--arith", a.arith]
            print("running        %s" % " ".join(cmd))
            t0 = time.time()
            p = subprocess.run(cmd)
            peer_time = time.time() - t0
            if p.returncode != 0:
                print("npullm failed with exit code %d" % p.returncode, file=sys.stderr)
                return 2
        if peer_path:
            size = os.path.getsize(peer_path)
            want = n * n_vocab * 4
            if size != want:
                print("npullm logits file %s has %d bytes, expected %d = %d x %d x 4"
                      % (peer_path, size, want, n, n_vocab), file=sys.stderr)
                return 2
            peer = np.memmap(peer_path, dtype="<f4", mode="r", shape=(n, n_vocab))

        save = None
        if a.save_llama_logits:
            save = np.memmap(a.save_llama_logits, dtype="<f4", mode="w+", shape=(n, n_vocab))

        # ---- llama.cpp side, chunk by chunk ----------------------------------
        st = Stats()
        fl = Stats() if llm2 is not None else None
        rows_per_batch = a.batch_rows or max(1, (64 << 20) // (8 * n_vocab))
        first = a.ctx // 2
        llama_time = 0.0
        for s in range(0, n, a.ctx):
            chunk = ids[s:s + a.ctx]
            full = len(chunk) == a.ctx
            t0 = time.time()
            llm.reset()
            llm.eval(chunk)
            llama_time += time.time() - t0
            logits = np.asarray(llm.scores[:len(chunk)], dtype=np.float32)
            if not np.isfinite(logits).all():
                print("warning: llama.cpp produced non-finite logits in chunk at %d" % s)
            if save is not None:
                save[s:s + len(chunk)] = logits
            targets = np.full(len(chunk), -1, dtype=np.int64)
            targets[:-1] = chunk[1:]
            scored = np.zeros(len(chunk), dtype=bool)
            if full:
                scored[first:a.ctx - 1] = True
            for r0 in range(0, len(chunk), rows_per_batch):
                r1 = min(len(chunk), r0 + rows_per_batch)
                b = np.asarray(peer[s + r0:s + r1]) if peer is not None else None
                st.add_rows(s + r0, logits[r0:r1], b, targets[r0:r1], scored[r0:r1])
            if fl is not None:
                llm2.reset()
                llm2.eval(chunk)
                other = np.asarray(llm2.scores[:len(chunk)], dtype=np.float32)
                for r0 in range(0, len(chunk), rows_per_batch):
                    r1 = min(len(chunk), r0 + rows_per_batch)
                    fl.add_rows(s + r0, logits[r0:r1], other[r0:r1], targets[r0:r1], scored[r0:r1])
        if save is not None:
            save.flush()
            del save
            print("saved llama.cpp logits to %s" % a.save_llama_logits)

        # ---- report ------------------------------------------------------------
        print("llama.cpp      %.2f s (%.1f tok/s)" % (llama_time, n / max(llama_time, 1e-9)))
        if peer_time is not None:
            print("npullm         %.2f s (%.1f tok/s, incl. load)" % (peer_time, n / max(peer_time, 1e-9)))
        print("entropy        %.4f nats (mean over llama.cpp's next-token distributions)"
              % (st.ent_sum / st.n))
        if st.n_scored:
            print("ppl llama.cpp  %.4f  (%d scored tokens, second half of each %d-token chunk)"
                  % (np.exp(st.nll_llama / st.n_scored), st.n_scored, a.ctx))
        else:
            print("ppl            n/a (no full %d-token chunk)" % a.ctx)
        if peer is None:
            print("(no npullm side: pass --npullm or --npullm-logits to compare)")
            return 0
        ppl_diff = None
        if st.n_scored:
            ppl_diff = 100.0 * (np.exp((st.nll_peer - st.nll_llama) / st.n_scored) - 1)
            print("ppl npullm     %.4f  (%+.3f %% vs llama.cpp)" % (np.exp(st.nll_peer / st.n_scored), ppl_diff))
        agree = 100.0 * st.agree / st.n
        kl = st.kl_sum / st.n
        print("top-1 agree    %.3f %%  (%d / %d; %d disagreements at near-ties)"
              % (agree, st.agree, st.n, st.near_tie_disagree))
        print("KL mean        %.6g nats  (max %.6g at row %d)" % (kl, st.kl_max, st.kl_argmax))
        print("|dlogit| max   %.6g  (mean %.6g)" % (st.absdiff_max, st.absdiff_sum / max(1, st.absdiff_count)))
        # how tie-prone the text is for this model: a disagreement needs a
        # top-2 gap smaller than the logit noise between the engines
        g = np.array(st.gaps)
        print("top-2 gap      median %.3f; %.1f %% of rows under 0.2, %.1f %% under 0.05 (llama.cpp's logits)"
              % (np.median(g), 100.0 * (g < 0.2).mean(), 100.0 * (g < 0.05).mean()))
        ok = agree >= a.min_agree and kl <= a.max_kl and np.isfinite(st.absdiff_max)
        if a.max_ppl_diff > 0 and not (ppl_diff is not None and abs(ppl_diff) <= a.max_ppl_diff):
            ok = False
        if fl is not None:
            fkl = fl.kl_sum / fl.n
            other = "on" if not a.flash_attn else "off"
            print("floor          llama.cpp flash attention %s vs %s, same chunks:"
                  % ("on" if a.flash_attn else "off", other))
            print("floor top-1    %.3f %%  (%d / %d)" % (100.0 * fl.agree / fl.n, fl.agree, fl.n))
            print("floor KL mean  %.6g nats  (max %.6g at row %d)" % (fkl, fl.kl_max, fl.kl_argmax))
            print("floor |dlogit| max %.6g  (mean %.6g)"
                  % (fl.absdiff_max, fl.absdiff_sum / max(1, fl.absdiff_count)))
            if fl.n_scored:
                print("floor ppl      %.4f  (llama.cpp flash attention %s)"
                      % (np.exp(fl.nll_peer / fl.n_scored), other))
                print("ppl diff       npullm %+.3f %%, llama.cpp FA %s %+.3f %% (vs llama.cpp FA %s)"
                      % (100.0 * (np.exp((st.nll_peer - st.nll_llama) / st.n_scored) - 1), other,
                         100.0 * (np.exp((fl.nll_peer - fl.nll_llama) / fl.n_scored) - 1),
                         "on" if a.flash_attn else "off"))
            ratio = kl / fkl if fkl > 0 else float("inf")
            print("KL / floor     %.3g  (npullm's KL mean / llama.cpp's FA on-vs-off KL mean)" % ratio)
            # top-1 against the floor: disagreement rates, not a fixed bar
            dis, fdis = st.n - st.agree, fl.n - fl.agree
            dratio = dis / fdis if fdis > 0 else (0.0 if dis == 0 else float("inf"))
            print("disagree/floor %.3g  (npullm's top-1 disagreements %d / llama.cpp FA-flipped's %d)"
                  % (dratio, dis, fdis))
            if a.max_floor_ratio > 0 and not (ratio <= a.max_floor_ratio and dratio <= a.max_floor_ratio):
                ok = False
        print("RESULT         %s (min agree %.2f %%, max KL %.4g%s%s)"
              % ("PASS" if ok else "FAIL", a.min_agree, a.max_kl,
                 ", max KL and disagreements / floor %.3g" % a.max_floor_ratio
                 if fl is not None and a.max_floor_ratio > 0 else "",
                 ", max |ppl diff| %.3g %%" % a.max_ppl_diff if a.max_ppl_diff > 0 else ""))
        rc = 0 if ok else 1
    finally:
        if not a.workdir and not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif a.keep or a.workdir:
            print("files in       %s" % workdir)
    return rc


if __name__ == "__main__":
    sys.exit(main())
