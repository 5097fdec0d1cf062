#!/usr/bin/env python3
"""llama.cpp's ids for every BPE pre-tokenizer name npullm accepts, for
tests/test_tokenizer_pre.c.

    scripts/python tests/data/tokenizer/make_pre_fixtures.py
        writes pre.json: for each tokenizer.ggml.pre name of NAMES, the
        gpt-2 vocabulary of llama.cpp's vocab fixtures (ggml-vocab-gpt-2.gguf,
        from the llama-cpp-python sdist via make_starcoder_fixtures.py) with
        only that string changed, loaded by llama.cpp (llama-cpp-python,
        vocab_only), tokenizing every corpus.json text (English, CJK, emoji,
        code, whitespace runs, digits, contractions, random code points)
        with add_special 0 and 1 (parse_special 0), and detokenizing the
        first (clean_spaces differs between names).
    scripts/python tests/data/tokenizer/make_pre_fixtures.py --link DIR [NAME...]
        writes DIR/NAME.gguf for each name (the C test's vocabularies;
        nothing of it is committed).

Id lists and texts are stored once (many names agree on a text): "lists"
and "texts" are tables, each name's "ids0"/"ids1"/"detok" index them.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures  # noqa: E402  (re-execs under .venv when needed)
import make_starcoder_fixtures  # noqa: E402

# llama-vocab.cpp's names (llama-cpp-python 0.3.36) except those npullm
# refuses: kimi-k2 (custom splitter, no merges), whitespace (its own
# session), gemma4, granite-embed-multi-311m and sarvam-moe (SPM-style BPE)
NAMES = [
    "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
    "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "falcon",
    "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
    "a.x-4.0", "mellum", "modern-bert", "jais-2", "jina-v1-en", "jina-v2-code", "roberta-bpe", "refact",
    "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx",
    "smaug-bpe", "poro-chat", "chatglm-bpe", "glm4", "glm5", "viking", "jais", "tekken", "smollm", "codeshell",
    "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe", "chameleon", "minerva-7b", "megrez", "gpt-4o",
    "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe", "trillion",
    "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense",
    "hy_v4", "joyai-llm", "ufakzeka", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open", "mellum2",
]


def with_pre(src, dst, pre):
    """src's bytes with the tokenizer.ggml.pre string replaced"""
    data = bytearray(open(src, "rb").read())
    key = b"tokenizer.ggml.pre"
    k = data.find(struct.pack("<Q", len(key)) + key)
    assert k >= 0
    p = k + 8 + len(key)
    assert struct.unpack_from("<I", data, p)[0] == 8
    n = struct.unpack_from("<Q", data, p + 4)[0]
    new = pre.encode()
    data[p + 4:p + 12 + n] = struct.pack("<Q", len(new)) + new
    open(dst, "wb").write(bytes(data))


def gpt2_vocab():
    return os.path.join(make_starcoder_fixtures.vocab_dir(), "ggml-vocab-gpt-2.gguf")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--link":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        src = gpt2_vocab()
        for name in sys.argv[3:] or NAMES:
            with_pre(src, os.path.join(out, name + ".gguf"), name)
        return 0

    import ctypes
    import tempfile
    import llama_cpp
    texts = [bytes.fromhex(h) for h in json.load(open(os.path.join(HERE, "corpus.json")))]
    keep = [i for i, b in enumerate(texts) if make_fixtures.bpe_safe(b)]
    lists, list_ix, strs, str_ix = [], {}, [], {}

    def intern(tab, ix, v):
        k = json.dumps(v)
        if k not in ix:
            ix[k] = len(tab)
            tab.append(v)
        return ix[k]

    doc = {"vocab": "ggml-vocab-gpt-2.gguf", "corpus": keep, "lists": lists, "texts": strs, "pre": {}}
    src = gpt2_vocab()
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            path = os.path.join(tmp, "v.gguf")
            with_pre(src, path, name)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            vocab = llama_cpp.llama_model_get_vocab(llm.model)
            e = {"ids0": [], "ids1": [], "detok": []}
            for i in keep:
                ids0 = llm.tokenize(texts[i], add_bos=False, special=False)
                ids1 = llm.tokenize(texts[i], add_bos=True, special=False)
                arr = (llama_cpp.llama_token * max(1, len(ids0)))(*ids0)
                cap = 64 + 16 * len(ids0)
                buf = ctypes.create_string_buffer(cap)
                n = llama_cpp.llama_detokenize(vocab, arr, len(ids0), buf, cap, False, False)
                assert 0 <= n <= cap
                e["ids0"].append(intern(lists, list_ix, ids0))
                e["ids1"].append(intern(lists, list_ix, ids1))
                e["detok"].append(intern(strs, str_ix, buf.raw[:n].hex()))
            doc["pre"][name] = e
            del llm
    with open(os.path.join(HERE, "pre.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"pre.json: {len(NAMES)} names x {len(keep)} texts, {len(lists)} distinct id lists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
