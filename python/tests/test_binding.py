"""The Python binding (python/npullm) on Gemma 3 270M, run by ctest:
pip-installs the package from the repository into a temporary folder
(--no-build-isolation: offline) and imports it from there, then checks
  - greedy complete() equals `npullm run` on the same prompt (the CLI's
    stdout, another path through the library: npl_engine);
  - stream() pieces join to complete(); stats count the prompt's tokens
    (= tokenize()) and the decode limit, finish "length";
  - two sessions on one model give the same text; a stop string cuts it;
  - tokenize/detokenize round trip; save/load gives the same logits;
  - errors raise npullm.Error with the library's message."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
tmp = tempfile.mkdtemp(prefix="npullm_py_")
subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                "--target", tmp, os.path.dirname(here)], check=True)
sys.path.insert(0, tmp)
import npullm  # noqa: E402

assert npullm.__file__.startswith(tmp), npullm.__file__
model_path, cli = os.environ["NPL_TEST_MODEL"], os.environ["NPL_CLI"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


prompt = "The three primary colors are"
m = npullm.Model(model_path, n_threads=2)
check(m.arch == "gemma3" and m.chat_template == "", "model facts")
a, b = m.session(n_ctx=256), m.session(n_ctx=256)
text = a.complete(prompt, max_tokens=24, temperature=0)
# a sanitizer build preloads the ASan runtime into python (tests/CMakeLists.txt);
# the CLI has its own linked in and must not get a second one, and keeps leak checks
cli_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
if "NPL_CHILD_ASAN_OPTIONS" in cli_env:
    cli_env["ASAN_OPTIONS"] = cli_env["NPL_CHILD_ASAN_OPTIONS"]
run = subprocess.run([cli, "run", "-m", model_path, "-p", prompt, "-n", "24", "--temp", "0", "-t", "2"],
                     capture_output=True, check=True, env=cli_env).stdout.decode()
print("complete:", repr(text))
check(run == text + "\n", "npullm run printed %r" % run)
st = a.stats()
ids = m.tokenize(prompt)
check(st["prompt_tokens"] + st["reused_tokens"] == len(ids), "prompt tokens %s vs %d" % (st, len(ids)))
check(st["decode_tokens"] == 24 and st["finish"] == "length", "stats %s" % st)
pieces = list(b.stream(prompt, max_tokens=24, temperature=0))
check(len(pieces) > 5 and "".join(pieces) == text, "stream on a second session")
check(m.detokenize(ids) == prompt, "detokenize(tokenize(x)) == x")
cut = b.complete(prompt, max_tokens=24, temperature=0, stop=["blue"])
check(cut == text[: text.index("blue")] and b.stats()["finish"] == "stop", "stop string: %r" % cut)
path = os.path.join(tmp, "s.gguf")
a.complete(prompt, max_tokens=0, temperature=0)
a.complete(prompt, max_tokens=0, temperature=0)  # the last token run alone
la = a.logits()
a.save(path)
b.load(path)
b.complete(prompt, max_tokens=0, temperature=0)
check(b.stats()["reused_tokens"] == len(ids) - 1 and b.logits() == la, "save/load logits")
try:
    b.complete(prompt, top_p=3.0)
    check(False, "top_p 3 accepted")
except npullm.Error as e:
    check("top_p" in str(e) and e.status == -1, "error %s" % e)
try:
    npullm.Model("/no/such/model.gguf")
    check(False, "missing model opened")
except npullm.Error as e:
    check("/no/such/model.gguf" in str(e) and e.status == -2, "error %s" % e)
m.close()
print("%s" % ("ok" if not failures else "%d failed" % failures))
sys.exit(1 if failures else 0)
