#!/usr/bin/env python3
"""q8_reference.py - a float64 emulation of the int8 CPU pipeline of a llama GGUF.

Usage:
  bench/q8_reference.py MODEL.gguf IDS_FILE [--f32-act] [--q-f16] [--npullm build/npullm]

Runs a llama-architecture GGUF (e.g. tests/data/models/rand-llama-q8_0.gguf)
over the token ids in IDS_FILE the way both npullm and llama.cpp do on the
CPU, but in float64 wherever they would only differ by summation order:
activations quantized to Q8_0 blocks before every matmul (scale amax/127 kept
as f16, round half away from zero), K/V rounded to f16, attention in float64
(q rounded to f16 with --q-f16, as llama.cpp's key-by-key path does).
It prints per-layer tensor sums and the last row's logits in the format of
llama-eval-callback (first 3 / last 3 values, sum), so they can be compared
with `llama-eval-callback -m MODEL -p TEXT -n 1` and, with --npullm, with
`npullm eval-logits` on the same ids. --f32-act skips the activation
quantization, to show how much it moves the result.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("ids")
    ap.add_argument("--f32-act", action="store_true", help="no Q8_0 activation quantization")
    ap.add_argument("--q-f16", action="store_true", help="round q through f16 before attention")
    ap.add_argument("--npullm", help="also print npullm eval-logits' last row")
    a = ap.parse_args()

    import gguf
    from gguf.quants import dequantize

    r = gguf.GGUFReader(a.model)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    if arch != "llama":
        raise SystemExit("q8_reference.py: %s: architecture %s, only llama is emulated" % (a.model, arch))

    def hp(key):
        return r.fields["llama." + key].parts[-1][0].item()

    n_layer, n_head, n_kv = hp("block_count"), hp("attention.head_count"), hp("attention.head_count_kv")
    d_model, eps, base = hp("embedding_length"), hp("attention.layer_norm_rms_epsilon"), hp("rope.freq_base")
    hd = d_model // n_head
    T = {t.name: t for t in r.tensors}

    def W(name):
        t = T[name]
        return dequantize(t.data, t.tensor_type).astype(np.float32).reshape([int(x) for x in reversed(t.shape)])

    def q8(v):
        shape = v.shape
        v = v.reshape(-1, 32).astype(np.float32)
        d = (np.abs(v).max(1, keepdims=True) / 127).astype(np.float32)
        inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
        x = v * inv
        q = np.sign(x) * np.floor(np.abs(x) + 0.5)
        return (q * d.astype(np.float16).astype(np.float64)).reshape(shape)

    def mm(w, x):
        xx = x.astype(np.float64) if a.f32_act else np.stack([q8(row) for row in x])
        return (xx @ w.T.astype(np.float64)).astype(np.float32)

    def rms(x, w):
        x = x.astype(np.float32)
        s = (x.astype(np.float64) ** 2).mean(1, keepdims=True)
        return (x / np.sqrt(s + eps)).astype(np.float32) * w

    def rope(v):  # normal (pairs 2i, 2i+1) rotation at positions 0..n-1
        v = v.astype(np.float64).copy()
        pos = np.arange(v.shape[0])[:, None]
        th = pos * base ** (-2.0 * np.arange(hd // 2) / hd)[None, :]
        c, s = np.cos(th)[:, None, :], np.sin(th)[:, None, :]
        x0, x1 = v[:, :, 0::2].copy(), v[:, :, 1::2].copy()
        v[:, :, 0::2], v[:, :, 1::2] = x0 * c - x1 * s, x0 * s + x1 * c
        return v.astype(np.float32)

    def show(name, t):
        print("%-14s last row %s ... %s  sum = %.6f" % (name, np.round(t[-1, :3], 4), np.round(t[-1, -3:], 4),
                                                        t.astype(np.float64).sum()))

    toks = [int(v) for v in open(a.ids).read().split()]
    n = len(toks)
    x = W("token_embd.weight")[toks]
    for L in range(n_layer):
        h = rms(x, W("blk.%d.attn_norm.weight" % L))
        q = rope(mm(W("blk.%d.attn_q.weight" % L), h).reshape(n, n_head, hd))
        k = rope(mm(W("blk.%d.attn_k.weight" % L), h).reshape(n, n_kv, hd))
        v = mm(W("blk.%d.attn_v.weight" % L), h).reshape(n, n_kv, hd)
        kf, vf = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
        qf = q.astype(np.float16 if a.q_f16 else np.float64).astype(np.float64)
        o = np.zeros((n, n_head, hd))
        for i in range(n):
            for hh in range(n_head):
                kv = hh // (n_head // n_kv)
                s = (kf[: i + 1, kv, :] @ qf[i, hh]) / np.sqrt(hd)
                p = np.exp(s - s.max())
                o[i, hh] = (p / p.sum()) @ vf[: i + 1, kv, :]
        o = o.reshape(n, -1).astype(np.float32)
        show("kqv_out-%d" % L, o)
        att = mm(W("blk.%d.attn_output.weight" % L), o)
        show("attn_out-%d" % L, att)
        x = x + att
        h = rms(x, W("blk.%d.ffn_norm.weight" % L))
        g, u = mm(W("blk.%d.ffn_gate.weight" % L), h), mm(W("blk.%d.ffn_up.weight" % L), h)
        f = (g / (1 + np.exp(-g.astype(np.float64)))).astype(np.float32) * u
        x = x + mm(W("blk.%d.ffn_down.weight" % L), f)
        show("l_out-%d" % L, x)
    out = "output.weight" if "output.weight" in T else "token_embd.weight"
    lg = mm(W(out), rms(x, W("output_norm.weight")))
    show("logits", lg)
    if a.npullm:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "logits.f32")
            subprocess.run([a.npullm, "eval-logits", "-m", a.model, "--ids", a.ids, "--out", path, "-b", str(n)],
                           check=True, capture_output=True)
            ours = np.fromfile(path, dtype=np.float32).reshape(n, -1)
        show("npullm logits", ours)
        print("max |npullm - reference| over all logits: %.3g" % np.abs(ours - lg).max())


if __name__ == "__main__":
    sys.exit(main())
