#!/usr/bin/env python3
"""make_random_gemma4.py - a small random-weight gemma4 (dense E2B/E4B-style) GGUF.

The fixture for issue 17's gemma4 builder, written as llama.cpp's gemma4
loader (src/models/gemma4.cpp in llama-cpp-python 0.3.36) reads it:
  * 4 layers, sliding_window_pattern [swa, full, swa, full], window 16;
  * per-layer head dims: key/value_length 64 (full), key/value_length_swa 32;
  * shared_kv_layers 2: layers 2 and 3 have no attn_k/attn_v/attn_k_norm and
    reuse the KV of layers 0 (swa) and 1 (full);
  * proportional RoPE: rope_freqs.weight (full layers) is 1 for the first
    quarter of the pairs and 1e30 (no rotation) for the rest; rope bases 1e6
    (full) and 1e4 (swa);
  * per-layer embeddings (embedding_length_per_layer_input 32):
    per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm and per
    layer inp_gate / proj / post_norm;
  * layer_output_scale per layer, final_logit_softcapping 30, output tied to
    token_embd;
  * V is RMS-normalized without a weight (nothing to write).
Conditioning (q_gain, branch): attention scale is 1, so q_norm's gain sets
the score spread: q_norm weights ~0.4 (scores std ~3 / ~2 at head dims 64 /
32; with 1.5, std ~12, near-hard attention amplified float noise enough that
even the f32 file disagreed with itself in llama.cpp on 1.6 % of the
positions).  The post-attention / post-FFN / per-layer-embedding norms have
gain ~0.25 (1 before): with int8 activations any float-level difference
between two runs (summation order, llama.cpp's flash attention on or off)
grows into independent int8 rounding that moves these logits by ~0.1-0.5, and
when the layers decided every next token llama.cpp disagreed with itself on
up to 20 % of the q8_0 file's positions.  With the smaller branches the tied
output favours the input token by a margin on ~97 % of the positions and
llama.cpp agrees with itself >= 99.7 %, while each feature still moves the
logits (rope_freqs all 1, no sliding window, layer_output_scale 1 or
per_layer_token_embd zeroed: a median max |dlogit| of 10-17 against 0.4 for
llama.cpp's flash attention on vs off).
Vocabulary: make_random_gguf.py's truncated Gemma-3 SentencePiece one.
usage: make_random_gemma4.py OUTDIR [--type f32|q8_0 ...] [--check]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_random_gguf as mr  # noqa: E402

N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_VOCAB, CTX = 4, 128, 4, 2, 256, 1024, 4096
HD_FULL, HD_SWA, N_PL, SHARED = 64, 32, 32, 2
SWA = [True, False, True, False]


def build(path, wtype, seed=1, logit_std=6.0, q_gain=0.4, branch=0.25):
    qtype, ftype = mr.TYPES[wtype]
    vocab = mr.spm_vocab(N_VOCAB)
    rng = np.random.default_rng(seed)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm_w(n, center=1.0):
        return (center * (1.0 + 0.1 * rng.standard_normal(n))).astype(np.float32)

    w = mr.GGUFWriter(path, "gemma4")
    w.add_name("npullm-random-gemma4-%s" % wtype)
    w.add_description("random weights, seed %d, made by tests/tools/make_random_gemma4.py" % seed)
    w.add_context_length(CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    w.add_rope_freq_base_swa(10000.0)
    w.add_rope_dimension_count(HD_FULL)
    w.add_rope_dimension_count_swa(HD_SWA)
    w.add_key_length(HD_FULL)
    w.add_value_length(HD_FULL)
    w.add_key_length_swa(HD_SWA)
    w.add_value_length_swa(HD_SWA)
    w.add_sliding_window(16)
    w.add_sliding_window_pattern(SWA)
    w.add_shared_kv_layers(SHARED)
    w.add_embedding_length_per_layer_input(N_PL)
    w.add_final_logit_softcapping(30.0)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(ftype)
    mr.add_vocab(w, vocab)

    def add_mat(name, a):
        rows, cols = a.shape
        if qtype == mr.QT.F32:
            w.add_tensor(name, a)
        else:
            w.add_tensor(name, mr.gguf.quants.quantize(a, qtype), raw_dtype=qtype)

    def mat(name, rows, cols, std):
        add_mat(name, normal((rows, cols), std))

    def vec(name, a):
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))

    half = HD_FULL // 2
    vec("rope_freqs.weight", np.array([1.0 if i < half // 4 else 1e30 for i in range(half)]))
    s_emb = 1.0 / np.sqrt(N_EMBD)  # tied output
    mat("token_embd.weight", N_VOCAB, N_EMBD, s_emb)
    mat("per_layer_token_embd.weight", N_VOCAB, N_PL * N_LAYER, 1.0)
    mat("per_layer_model_proj.weight", N_PL * N_LAYER, N_EMBD, 1.0 / np.sqrt(N_EMBD))
    vec("per_layer_proj_norm.weight", norm_w(N_PL))
    for i in range(N_LAYER):
        p = "blk.%d." % i
        hd = HD_SWA if SWA[i] else HD_FULL
        n_q, n_kv = N_HEAD * hd, N_HEAD_KV * hd
        vec(p + "attn_norm.weight", norm_w(N_EMBD))
        mat(p + "attn_q.weight", n_q, N_EMBD, 1.0 / np.sqrt(N_EMBD))
        vec(p + "attn_q_norm.weight", norm_w(hd, q_gain))
        if i < N_LAYER - SHARED:
            mat(p + "attn_k.weight", n_kv, N_EMBD, 1.0 / np.sqrt(N_EMBD))
            mat(p + "attn_v.weight", n_kv, N_EMBD, 1.0 / np.sqrt(N_EMBD))
            vec(p + "attn_k_norm.weight", norm_w(hd))
        mat(p + "attn_output.weight", N_EMBD, n_q, 1.0 / np.sqrt(n_q))
        vec(p + "post_attention_norm.weight", norm_w(N_EMBD, branch))
        vec(p + "ffn_norm.weight", norm_w(N_EMBD))
        mat(p + "ffn_gate.weight", N_FF, N_EMBD, 1.0 / np.sqrt(N_EMBD))
        mat(p + "ffn_up.weight", N_FF, N_EMBD, 1.0 / np.sqrt(N_EMBD))
        mat(p + "ffn_down.weight", N_EMBD, N_FF, 1.0 / np.sqrt(N_FF))
        vec(p + "post_ffw_norm.weight", norm_w(N_EMBD, branch))
        mat(p + "inp_gate.weight", N_PL, N_EMBD, 1.0 / np.sqrt(N_EMBD))
        mat(p + "proj.weight", N_EMBD, N_PL, 1.0 / np.sqrt(N_PL))
        vec(p + "post_norm.weight", norm_w(N_EMBD, branch))
        vec(p + "layer_output_scale.weight", np.array([0.5 + 0.25 * i]))
    vec("output_norm.weight", norm_w(N_EMBD, logit_std / (s_emb * np.sqrt(N_EMBD))))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (gemma4 %s, %d bytes)" % (path, wtype, os.path.getsize(path)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--type", choices=("f32", "q8_0"), action="append", dest="types")
    ap.add_argument("--check", action="store_true", help="load with llama.cpp and print logit entropy")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    bad = 0
    for t in a.types or ("f32", "q8_0"):
        path = os.path.join(a.outdir, "rand-gemma4-%s.gguf" % t)
        build(path, t)
        if a.check:
            # llama-cpp-python's AMX matmul crashes here: extra buffer types off
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "llamacpp"))
            from record_reference import no_extra_bufts
            no_extra_bufts()
            r = mr.check_with_llamacpp(path)
            print("  llama.cpp: n_vocab %d, %d tokens, finite=%s, entropy mean %.3f min %.3f max %.3f nats, "
                  "mean top-1 p %.3f, %d distinct argmax"
                  % (r["n_vocab"], r["n_tokens"], r["finite"], r["entropy_mean"], r["entropy_min"],
                     r["entropy_max"], r["top1_p_mean"], r["distinct_top1"]))
            bad += not r["finite"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
