#!/usr/bin/env python3
"""llama.cpp's ids for every BPE pre-tokenizer name npullm accepts, for
tests/test_tokenizer_pre.c.

    scripts/python tests/data/tokenizer/make_pre_fixtures.py
        checks that NAMES is exactly llama.cpp's list of tokenizer.ggml.pre
        names (parsed from the sdist's vendor/llama.cpp/src/llama-vocab.cpp),
        then writes pre.json: for each case of CASES, a vocabulary of
        llama.cpp's vocab fixtures (from the llama-cpp-python sdist via
        make_starcoder_fixtures.py) with a few metadata keys changed, loaded
        by llama.cpp (llama-cpp-python, vocab_only), tokenizing every
        corpus.json text (English, CJK, emoji, code, whitespace runs, digits,
        contractions, random code points) with add_special 0 and 1
        (parse_special 0), and detokenizing the first (clean_spaces differs
        between names). A case is a name (the gpt-2 vocabulary with only
        tokenizer.ggml.pre changed), NAME@gemma-4 (the gemma-4 vocabulary,
        "▁" for spaces and <0xXX> byte tokens, as tokenizer.ggml.model gpt2
        with that pre name: the SPM-style and raw-UTF-8 names) or
        kimi-k2@no-merges (the gpt-2 vocabulary without its merges, which
        llama.cpp allows for kimi-k2 only) or NAME@ws-model (the gpt-2
        vocabulary as tokenizer.ggml.model "whitespace").
    scripts/python tests/data/tokenizer/make_pre_fixtures.py --audit
        prints llama.cpp's LLAMA_VOCAB_PRE_TYPE_* types with their names.
    scripts/python tests/data/tokenizer/make_pre_fixtures.py --link DIR [CASE...]
        writes DIR/CASE.gguf for each case (the C test's vocabularies;
        nothing of it is committed).

Id lists and texts are stored once (many names agree on a text): "lists"
and "texts" are tables, each case's "ids0"/"ids1"/"detok" index them.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures  # noqa: E402  (re-execs under .venv when needed)
import make_starcoder_fixtures  # noqa: E402

# llama-vocab.cpp's names (llama-cpp-python 0.3.36), in its order
NAMES = [
    "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
    "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "falcon",
    "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
    "a.x-4.0", "mellum", "modern-bert", "jais-2", "gemma4", "granite-embed-multi-311m", "sarvam-moe",
    "jina-v1-en", "jina-v2-code", "roberta-bpe", "whitespace", "refact",
    "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx",
    "smaug-bpe", "poro-chat", "chatglm-bpe", "glm4", "glm5", "viking", "jais", "tekken", "smollm", "codeshell",
    "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe", "chameleon", "minerva-7b", "megrez", "gpt-4o",
    "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe", "trillion",
    "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense",
    "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open",
    "mellum2",
]
# the names whose text is not GPT-2 byte-encoded (escape_whitespaces and/or
# byte_encode off), also on a vocabulary made for that: gemma-4's
SPM_NAMES = ["gemma4", "granite-embed-multi-311m", "sarvam-moe", "whitespace"]
# tokenizer.ggml.model "whitespace" (llama.cpp's whitespace session: whitespace
# dropped, the rest lowered unless the pre name is whitespace), the gpt-2 vocabulary
WS_MODEL = ["whitespace@ws-model", "gpt-2@ws-model"]
CASES = NAMES + [n + "@gemma-4" for n in SPM_NAMES] + ["kimi-k2@no-merges"] + WS_MODEL


# ---------------------------------------------------------------------------
# GGUF metadata edits (the vocab fixtures hold no tensors: the file is the
# header and its key/value pairs, padded to the alignment)

_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _kvs(data):
    assert data[:4] == b"GGUF"
    ver, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    assert n_tensors == 0, "a vocab fixture with tensors"
    p, out = 24, []

    def skip_str(p):
        return p + 8 + struct.unpack_from("<Q", data, p)[0]

    for _ in range(n_kv):
        k0 = p
        p = skip_str(p)
        key = data[k0 + 8:p].decode()
        t = struct.unpack_from("<I", data, p)[0]
        p += 4
        if t == 8:
            p = skip_str(p)
        elif t == 9:
            at, n = struct.unpack_from("<IQ", data, p)
            p += 12
            if at == 8:
                for _ in range(n):
                    p = skip_str(p)
            else:
                p += _FIXED[at] * n
        else:
            p += _FIXED[t]
        out.append((key, data[k0:p]))
    return ver, out


def _str_kv(key, value):
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(v)) + v


def edit_gguf(src, dst, strings=None, drop=()):
    """src's metadata with string keys set (replaced in place, or appended)
    and keys dropped"""
    strings = dict(strings or {})
    ver, kvs = _kvs(open(src, "rb").read())
    out = []
    for key, raw in kvs:
        if key in drop:
            continue
        out.append(_str_kv(key, strings.pop(key)) if key in strings else raw)
    out += [_str_kv(k, v) for k, v in strings.items()]
    body = struct.pack("<4sIQQ", b"GGUF", ver, 0, len(out)) + b"".join(out)
    body += b"\0" * (-len(body) % 32)
    open(dst, "wb").write(body)


def make_case(case, dst):
    name, _, variant = case.partition("@")
    d = make_starcoder_fixtures.vocab_dir()
    if variant == "gemma-4":
        edit_gguf(os.path.join(d, "ggml-vocab-gemma-4.gguf"), dst,
                  {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": name})
    elif variant == "ws-model":
        edit_gguf(os.path.join(d, "ggml-vocab-gpt-2.gguf"), dst,
                  {"tokenizer.ggml.model": "whitespace", "tokenizer.ggml.pre": name})
    elif variant == "no-merges":
        edit_gguf(os.path.join(d, "ggml-vocab-gpt-2.gguf"), dst, {"tokenizer.ggml.pre": name},
                  drop=("tokenizer.ggml.merges",))
    else:
        assert not variant, case
        edit_gguf(os.path.join(d, "ggml-vocab-gpt-2.gguf"), dst, {"tokenizer.ggml.pre": name})


# ---------------------------------------------------------------------------
# llama.cpp's own list, from the sdist's llama-vocab.cpp

def llama_vocab_source(base):
    """vendor/llama.cpp/src/BASE of the sdist (cached beside the vocab fixtures)"""
    d = make_starcoder_fixtures.vocab_dir()
    path = os.path.join(d, base)
    if not os.path.exists(path):
        import glob
        import subprocess
        import tarfile
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-binary", "llama-cpp-python",
                                   "--no-deps", make_starcoder_fixtures.SDIST, "-d", tmp])
            with tarfile.open(glob.glob(os.path.join(tmp, "*.tar.gz"))[0]) as tf:
                for m in tf.getmembers():
                    b = os.path.basename(m.name)
                    if m.name.endswith("/vendor/llama.cpp/src/" + b) and b in ("llama-vocab.cpp", "llama-vocab.h"):
                        with tf.extractfile(m) as src, open(os.path.join(d, b), "wb") as dst:
                            dst.write(src.read())
    return open(path, encoding="utf-8").read()


def llama_pre_names():
    """[(name, LLAMA_VOCAB_PRE_TYPE_*)] in llama_vocab::impl::load's order,
    and every type of the enum"""
    import re
    src = llama_vocab_source("llama-vocab.cpp")
    a = src.index("if (tokenizer_pre.empty())")
    b = src.index("unknown pre-tokenizer type", a)
    names, pending = [], []
    for m in re.finditer(r'tokenizer_pre == "([^"]+)"|pre_type = (LLAMA_VOCAB_PRE_TYPE_\w+)', src[a:b]):
        if m.group(1):
            pending.append(m.group(1))
        else:
            names += [(n, m.group(2)) for n in pending]
            pending = []
    types = re.findall(r"\b(LLAMA_VOCAB_PRE_TYPE_\w+)\s*=\s*\d+", llama_vocab_source("llama-vocab.h"))
    return names, types


# llama.cpp's unicode_set_whitespace
LLAMA_WS = {9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}


def llama_aborts(case, b):
    """Does llama.cpp abort on b? With the whitespace pre-tokenizer (byte
    encoding off, spaces not escaped) the gaps between \\S+ words are words
    too, and a gap of two or more code points holding a ' ' makes
    find_bpe_rank's GGML_ASSERT (no space in a symbol) fail. The prediction is
    checked: each such text is tokenized in a child process that must die of
    SIGABRT."""
    name, _, variant = case.partition("@")
    if name != "whitespace" or variant == "ws-model":   # the whitespace model drops the spaces first
        return False
    run = []
    for c in make_fixtures.lenient_cpts(b) + [None]:
        if c is not None and c in LLAMA_WS:
            run.append(c)
            continue
        if len(run) >= 2 and 32 in run:
            return True
        run = []
    return False


def dies_of_abort(llm, b):
    import signal
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
        llm.tokenize(b, add_bos=False, special=False)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    return os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGABRT


def audit():
    names, types = llama_pre_names()
    by_type = {}
    for n, ty in names:
        by_type.setdefault(ty, []).append(n)
    for ty in types:
        print(f"{ty:40s} {', '.join(by_type.get(ty, [])) or '(no name of its own)'}")
    print(f"{len(types)} types, {len(names)} names")
    return names


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--audit":
        audit()
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "--link":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        for case in sys.argv[3:] or CASES:
            make_case(case, os.path.join(out, case + ".gguf"))
        return 0

    theirs = [n for n, _ in llama_pre_names()[0]]
    if theirs != NAMES:
        sys.exit(f"NAMES differs from llama.cpp's: missing {sorted(set(theirs) - set(NAMES))}, "
                 f"extra {sorted(set(NAMES) - set(theirs))} (or the order)")

    import ctypes
    import tempfile
    os.environ["GGML_NO_BACKTRACE"] = "1"   # an expected abort need not start gdb
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

    def detokenize(vocab, ids):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        cap = 64 + 16 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, cap, False, False)
            if n >= 0:
                return buf.raw[:n]
            cap = -n

    doc = {"vocab": "ggml-vocab-gpt-2.gguf", "corpus": keep, "lists": lists, "texts": strs, "pre": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            path = os.path.join(tmp, "v.gguf")
            make_case(case, path)
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            vocab = llama_cpp.llama_model_get_vocab(llm.model)
            e = {"ids0": [], "ids1": [], "detok": [], "skip": []}
            for k, i in enumerate(keep):
                if llama_aborts(case, texts[i]):
                    assert dies_of_abort(llm, texts[i]), (case, i)
                    e["skip"].append(k)
                    for key in ("ids0", "ids1", "detok"):
                        e[key].append(-1)
                    continue
                ids0 = llm.tokenize(texts[i], add_bos=False, special=False)
                ids1 = llm.tokenize(texts[i], add_bos=True, special=False)
                e["ids0"].append(intern(lists, list_ix, ids0))
                e["ids1"].append(intern(lists, list_ix, ids1))
                e["detok"].append(intern(strs, str_ix, detokenize(vocab, ids0).hex()))
            doc["pre"][case] = e
            del llm
    with open(os.path.join(HERE, "pre.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    skipped = {c: len(e["skip"]) for c, e in doc["pre"].items() if e["skip"]}
    print(f"pre.json: {len(CASES)} cases ({len(NAMES)} names) x {len(keep)} texts, {len(lists)} distinct id lists; "
          f"texts llama.cpp aborts on (left out): {skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
