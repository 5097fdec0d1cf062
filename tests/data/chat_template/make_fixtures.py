#!/usr/bin/env python3
"""Expected renderings for tests/test_chat_template.c: real chat templates
(llama.cpp's models/templates/*.jinja from the llama-cpp-python 0.3.36
sdist, the template strings those models ship in tokenizer.chat_template)
rendered by jinja2 (pinned in scripts/requirements.txt) the way Hugging Face
transformers' apply_chat_template does, for plain conversations.

    scripts/python tests/data/chat_template/make_fixtures.py

writes real.json: per template its file name, the family npullm renders it
as, its text (for detection), and per conversation the rendering with
add_generation_prompt 0 and 1. The tokenizer adds BOS, so a rendering's
leading bos_token is cut (and recorded as "bos_cut"); see NEEDS_SYSTEM and
CUT_EOS for the two other differences by design. strftime_now(fmt)
renders as "\\u0001fmt\\u0002": the C test puts today's date there.
"""
import datetime
import glob
import json
import os
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizer"))
import make_fixtures  # noqa: E402,F401  (re-execs under .venv when needed)

SDIST = "llama-cpp-python==0.3.36"
# template file -> (npullm family, bos_token, eos_token)
TEMPLATES = {
    "deepseek-ai-DeepSeek-V3.1.jinja": ("deepseek3", "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    "microsoft-Phi-3.5-mini-instruct.jinja": ("phi3", "<s>", "<|endoftext|>"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("mistral-v3-tekken", "<s>", "</s>"),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": ("mistral-v7-tekken", "<s>", "</s>"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("granite", "<|end_of_text|>", "<|end_of_text|>"),
    "ibm-granite-granite-4.0.jinja": ("granite-4.0", "<|end_of_text|>", "<|end_of_text|>"),
    "HuggingFaceTB-SmolLM3-3B.jinja": ("smollm3", "", "<|im_end|>"),
    "google-gemma-4-31B-it.jinja": ("gemma4", "<bos>", "<turn|>"),
}
# where npullm differs by design (chat_template_families.c): Mistral-Small's
# built-in default system prompt is not rendered (conversations without a
# system message are marked "by_design"); Phi-3.5's eos_token after the last
# message without a generation prompt is left out (cut, "eos_cut")
NEEDS_SYSTEM = {"mistral-v7-tekken"}
CUT_EOS = {"phi3"}

CONVS = [
    [{"role": "user", "content": "Hello"}],
    [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"}],
    [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"},
     {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "Who are you"},
     {"role": "assistant", "content": "   I am an assistant   "}, {"role": "user", "content": "Another question"}],
    [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": "Paris."}],
    [{"role": "user", "content": "\n  spaced  \n"}, {"role": "assistant", "content": "\nok\n"},
     {"role": "user", "content": "x"}],
    [{"role": "system", "content": "Be brief. /no_think"}, {"role": "user", "content": "2+2?"}],
]


def templates_dir(tmp):
    import subprocess
    subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-binary", "llama-cpp-python",
                           "--no-deps", SDIST, "-d", tmp])
    tgz = glob.glob(os.path.join(tmp, "*.tar.gz"))[0]
    out = os.path.join(tmp, "templates")
    os.makedirs(out)
    with tarfile.open(tgz) as tf:
        for m in tf.getmembers():
            if "/vendor/llama.cpp/models/templates/" in m.name and os.path.basename(m.name) in TEMPLATES:
                with tf.extractfile(m) as src, open(os.path.join(out, os.path.basename(m.name)), "wb") as dst:
                    dst.write(src.read())
    return out


def environment():
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "\x01" + fmt + "\x02"
    return env


def main():
    env = environment()
    doc = []
    with tempfile.TemporaryDirectory() as tmp:
        d = os.environ.get("NPL_CHAT_TEMPLATES_DIR") or templates_dir(tmp)
        for fname, (family, bos, eos) in TEMPLATES.items():
            src = open(os.path.join(d, fname), encoding="utf-8").read()
            tmpl = env.from_string(src)
            entry = {"file": fname, "family": family, "bos": bos, "template": src, "cases": []}
            for conv in CONVS:
                case = {"messages": conv}
                for add in (0, 1):
                    out = tmpl.render(messages=conv, add_generation_prompt=bool(add), bos_token=bos, eos_token=eos)
                    cut = bool(bos) and out.startswith(bos)
                    out = out[len(bos):] if cut else out
                    if not add and family in CUT_EOS and out.endswith(eos):
                        out = out[:-len(eos)]
                        case["eos_cut"] = True
                    case["add%d" % add] = out
                    case["bos_cut"] = cut
                case["by_design"] = family in NEEDS_SYSTEM and conv[0]["role"] != "system"
                entry["cases"].append(case)
            doc.append(entry)
    with open(os.path.join(HERE, "real.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("real.json: %d templates x %d conversations (jinja2 %s, %s)" % (
        len(doc), len(CONVS), __import__("jinja2").__version__, datetime.date.today()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
