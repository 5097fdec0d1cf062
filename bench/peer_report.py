"""The report of bench/peer: the markdown tables, targets, summary.json, the
.dat files and the gnuplot chart, from the meta and raw runs bench/peer
recorded (runs.json). bench/peer --report-only rebuilds them from it."""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = ("llama.cpp", "npullm", "package")


def log(*a):
    print("[peer]", *a, file=sys.stderr, flush=True)


def paired_ratios(runs, engine, test, bpt):
    """(tok/s over its own bound, bound GB/s) for each run measured with bandwidth around it."""
    out = []
    for r in runs:
        if r["engine"] == engine and r["test"] == test and r.get("tps") and r.get("bw_around_gbs"):
            g = max(r["bw_around_gbs"])
            out.append((r["tps"] / (g * 1e9 / bpt), g))
    return out


SHARED_L3_NS = 250  # core_latency round trips below this: both CPUs on one L3 (Zen 5 VM: 80-160 against ~420 ns)


def paired_by_l3(runs, engine, test, bpt):
    """paired ratios split by where the two CPUs sat: (shared L3, apart or contended) lists."""
    one, two = [], []
    for r in runs:
        rt = r.get("core_rt_around_ns")
        if r["engine"] == engine and r["test"] == test and r.get("tps") and r.get("bw_around_gbs") and rt:
            x = r["tps"] / (max(r["bw_around_gbs"]) * 1e9 / bpt)
            (one if max(rt) < SHARED_L3_NS else two).append(x)
    return one, two


def med(v):
    return statistics.median(v) if v else None


def fmt_cell(vals):
    if not vals:
        return "—"
    m = med(vals)
    if len(vals) == 1:
        return "%.2f" % m
    return "%.2f (%.2f–%.2f)" % (m, min(vals), max(vals))


def fmt_ratio(x, y):
    if x is None or y is None or y == 0:
        return "—"
    return "%.2f×" % (x / y)


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(meta, runs, out_dir):
    cells = {}
    for r in runs:
        if r.get("tps") is not None:
            cells.setdefault((r["engine"], r["test"]), []).append(r["tps"])
    engines = [e for e in ENGINES if any(k[0] == e for k in cells)]
    has_pkg = "package" in engines
    test_order = []
    for r in runs:
        if r["test"] not in test_order and r["kind"] != "growth":
            test_order.append(r["test"])
    main_tests = [t for t in test_order if not any(x["test"] == t and x.get("ctx") for x in runs)]
    ctx_tests = [t for t in test_order if t not in main_tests]

    def c(e, t):
        return cells.get((e, t), [])

    def m(e, t):
        return med(c(e, t))

    L = []
    L.append("## npullm vs llama.cpp — %s" % os.path.basename(meta["model"]))
    L.append("")
    L.append("%s; %s threads; %d repetitions per cell, engines alternated cell by cell; t/s = median (min–max)." %
             (meta["cpu"], meta["threads"], meta["reps"]))
    L.append("Load before: `%s`; after: `%s`." % (meta["uptime_before"], meta.get("uptime_after", "?")))
    if meta.get("isa", -1) >= 0:
        L.append("npullm's kernel family capped at %d (%s) (`--isa`); llama.cpp: `%s`." %
                 (meta["isa"], ["plain C", "AVX2", "AVX-512", "AMX"][meta["isa"]], meta["llama_bench"]))
    if meta.get("llama_bench") == "llama-cpp-python":
        L.append("llama.cpp timed through %s: llama-bench's loop in a child process (`--llama-bench llama-cpp-python`)."
                 % meta.get("llama_source", "llama-cpp-python"))
    if meta.get("llama_repack", -1) >= 0:
        L.append("llama.cpp's extra buffer types (AMX / repacked weights) %s (`--llama-repack %d`)." %
                 ("on" if meta["llama_repack"] else "off", meta["llama_repack"]))
    L.append("")
    hdr = "| test | llama.cpp t/s | npullm CPU t/s | ratio |"
    sep = "|---|---|---|---|"
    if has_pkg:
        hdr += " package t/s | ratio |"
        sep += "---|---|"
    L += [hdr, sep]
    for t in main_tests + ctx_tests:
        row = "| %s | %s | %s | %s |" % (t, fmt_cell(c("llama.cpp", t)), fmt_cell(c("npullm", t)),
                                         fmt_ratio(m("npullm", t), m("llama.cpp", t)))
        if has_pkg:
            row += " %s | %s |" % (fmt_cell(c("package", t)), fmt_ratio(m("package", t), m("llama.cpp", t)))
        L.append(row)
    L.append("")
    srcs = {}
    for r in runs:
        srcs.setdefault((r["engine"], r["test"]), r["source"])
    notes = sorted({"%s %s: %s" % (e, ("tg…@d…" if "@d" in t else t if t.startswith("tg") else "pp…"), s)
                    for (e, t), s in srcs.items()})
    L.append("Sources: " + "; ".join(notes) + ".")
    L.append("ratio = engine median / llama.cpp median (higher is better for the engine). "
             "`tgN@dK` = N decoded tokens after K tokens of context; npullm bench cannot start from a "
             "non-empty context, so npullm's `@d` cells run through the C API (npl_engine_eval via ctypes); "
             "the plain `tgN` rows are both CLIs from an empty context.")
    L.append("")

    # bandwidth and bound
    bw = meta.get("bandwidth", {})
    bpt = meta.get("weight_bytes")
    bw_vals = [b["gbs_median"] for b in (bw.get("before"), bw.get("after")) if b]
    bw_gbs = max(bw_vals) if bw_vals else None
    bound = bw_gbs * 1e9 / bpt if bw_gbs and bpt else None
    L.append("### Bandwidth and decode bound")
    L.append("")
    for k in ("before", "after"):
        b = bw.get(k)
        if b:
            L.append("- read bandwidth %s the runs: %.2f GB/s median (%.2f–%.2f), %d MiB buffer, %s" %
                     (k, b["gbs_median"], b["gbs_min"], b["gbs_max"], b["mib"], b["method"]))
    b = bw.get("model_sized")
    if b:
        L.append("- with a model-sized buffer (%d MiB; this CPU reports %s of L3): %.2f GB/s median (%.2f–%.2f)" %
                 (b["mib"], meta.get("l3", "?"), b["gbs_median"], b["gbs_min"], b["gbs_max"]))
    if bpt:
        L.append("- bytes read per decoded token (all %d weight tensors, tied output matrix included): %d "
                 "(%.1f MiB) — %s" % (meta.get("n_tensors", 0), bpt, bpt / 2**20,
                                       ", ".join("%s %.1f MiB" % (k, v / 2**20)
                                                 for k, v in sorted(meta.get("bytes_by_type", {}).items(),
                                                                    key=lambda kv: -kv[1]))))
    if bound:
        L.append("- decode bound = %.2f GB/s / %.1f MB = **%.2f tok/s** (the higher median of the two 1 GiB "
                 "measurements)" % (bw_gbs, bpt / 1e6, bound))
        dec = "tg%d@d%d" % (meta["decode"], meta["depth"])
        for e in engines:
            if m(e, dec):
                L.append("  - %s %s: %.2f tok/s = %.0f%% of the bound" % (e, dec, m(e, dec), 100 * m(e, dec) / bound))
        for e in engines:
            pr = paired_ratios(runs, e, dec, bpt)
            if pr:
                L.append("- paired with each run (bandwidth right before and right after it, the higher of the two "
                         "as its bound), %s %s: **%.0f%%** of its bound, median of %d runs (%.0f–%.0f%%); bounds "
                         "%.1f–%.1f GB/s" % (e, dec, 100 * med([x for x, _ in pr]), len(pr), 100 * min(x for x, _ in pr),
                                             100 * max(x for x, _ in pr), min(g for _, g in pr), max(g for _, g in pr)))
                one, two = paired_by_l3(runs, e, dec, bpt)
                for name, v in (("both CPUs on one L3 (round trip < %d ns before and after)" % SHARED_L3_NS, one),
                                ("CPUs on two L3s or contended (a round trip >= %d ns)" % SHARED_L3_NS, two)):
                    if v:
                        L.append("  - %s: %.0f%%, median of %d (%.0f–%.0f%%)" %
                                 (name, 100 * med(v), len(v), 100 * min(v), 100 * max(v)))
    L.append("")

    # memory
    L.append("### Memory")
    L.append("")
    peak = {}
    for e in engines:
        v = [r["peak_rss_kib"] for r in runs if r["engine"] == e and r["test"] == "pp2048" and r.get("peak_rss_kib")]
        if v:
            peak[e] = v
            L.append("- peak RSS of a 2048-token prefill process, %s: %.1f MiB median (%.1f–%.1f; VmHWM of %s, polled from /proc)" %
                     (e, med(v) / 1024, min(v) / 1024, max(v) / 1024,
                      "llama-bench -p 2048 -n 0 -r 1" if e == "llama.cpp" else "npullm bench -p 2048,2048 -n 0 -r 1"))
    for e in ("npullm", "package"):
        v = [r["self_vmhwm_kib"] for r in runs if r["engine"] == e and r["test"] == "pp2048" and r.get("self_vmhwm_kib")]
        if v:
            L.append("  - %s's own VmHWM at exit (npullm bench's memory table) for the same runs: %.1f MiB median" %
                     (e, med(v) / 1024))
    anon = {}
    for e in ("npullm", "package"):
        v = [r["rss_anon_open_kib"] for r in runs if r["engine"] == e and r.get("rss_anon_open_kib") is not None
             and r["source"] == "npullm bench"]
        if v:
            anon[e] = max(v)
            L.append("- RssAnon after open, %s (npullm bench's memory table, max over %d runs): %.1f MiB" %
                     (e, len(v), max(v) / 1024))
    L.append("")

    # targets
    T = []

    def target(text, value, ok):
        T.append("TARGET %-58s %s  -> %s" % (text + ":", value, "n/a" if ok is None else verdict(ok)))

    dec = "tg%d@d%d" % (meta["decode"], meta["depth"])
    if bound and m("npullm", dec):
        r = m("npullm", dec) / bound
        target("CPU decode >= 85% of bandwidth bound", "%.2f tok/s / %.2f tok/s bound = %.0f%%" %
               (m("npullm", dec), bound, 100 * r), r >= 0.85)
    else:
        target("CPU decode >= 85% of bandwidth bound", "not measured", None)
    pr = paired_ratios(runs, "npullm", dec, bpt) if bpt else []
    if pr:
        r = med([x for x, _ in pr])
        target("CPU decode >= 85% of the bound paired with each run", "median %.0f%% of %d runs (%.0f-%.0f%%)" %
               (100 * r, len(pr), 100 * min(x for x, _ in pr), 100 * max(x for x, _ in pr)), r >= 0.85)
    for t in ("pp512", "pp2048"):
        if m("npullm", t) and m("llama.cpp", t):
            r = m("npullm", t) / m("llama.cpp", t)
            target("CPU prefill %s >= 1.5x llama.cpp" % t, "%.2f vs %.2f t/s = %.2fx" %
                   (m("npullm", t), m("llama.cpp", t), r), r >= 1.5)
        else:
            target("CPU prefill %s >= 1.5x llama.cpp" % t, "not measured", None)
    if has_pkg:
        pps = [t for t in main_tests if t.startswith("pp") and m("package", t) and m("llama.cpp", t)]
        for t in pps:
            r = m("package", t) / m("llama.cpp", t)
            target("package prefill %s >= 5x llama.cpp" % t, "%.2f vs %.2f t/s = %.2fx" %
                   (m("package", t), m("llama.cpp", t), r), r >= 5)
        if m("package", dec) and m("llama.cpp", dec):
            r = m("package", dec) / m("llama.cpp", dec)
            target("package decode %s >= 1.5x llama.cpp" % dec, "%.2f vs %.2f t/s = %.2fx" %
                   (m("package", dec), m("llama.cpp", dec), r), r >= 1.5)
        else:
            target("package decode >= 1.5x llama.cpp", "not measured", None)
    else:
        target("package prefill >= 5x, decode >= 1.5x llama.cpp", "no --package given", None)
    g = [r for r in runs if r["kind"] == "growth" and r["engine"] == "npullm"]
    if g:
        ratios = [r["per_token_ratio"] for r in g]
        target("prefill per-token time at 8192 <= 1.3x at 1024", "%.2fx (%s; pp1024 %.1f, pp8192 %.1f t/s)" %
               (med(ratios), ", ".join("%.2f" % x for x in ratios), med([r["tps_1024"] for r in g]),
                med([r["tps"] for r in g])), med(ratios) <= 1.3)
    else:
        target("prefill per-token time at 8192 <= 1.3x at 1024", "not run (use --growth)", None)
    if len(ctx_tests) >= 2:
        lo, hi = ctx_tests[0], ctx_tests[-1]
        for e in [x for x in engines if x != "llama.cpp"] + ["llama.cpp"]:
            if m(e, lo) and m(e, hi):
                r = m(e, lo) / m(e, hi)
                label = "decode time/token at %s <= 1.5x at %s" % (hi.split("@")[1], lo.split("@")[1])
                if e == "npullm":
                    target(label, "%.2fx (%.2f vs %.2f t/s; C API, npullm bench cannot set a starting context)" %
                           (r, m(e, hi), m(e, lo)), r <= 1.5)
                else:
                    T.append("       (%s for reference: %.2fx, %.2f vs %.2f t/s)" % (e, r, m(e, hi), m(e, lo)))
    else:
        target("decode with 2000 context <= 1.5x with 100", "not run", None)
    if "npullm" in anon:
        target("RssAnon after opening <= 64 MiB", "%.1f MiB" % (anon["npullm"] / 1024), anon["npullm"] <= 64 * 1024)
    if "package" in anon:
        T.append("       (package RssAnon after opening: %.1f MiB)" % (anon["package"] / 1024))
    if "npullm" in peak and "llama.cpp" in peak:
        a_, b_ = med(peak["npullm"]), med(peak["llama.cpp"])
        target("peak RSS of 2048-token prefill <= llama.cpp's", "%.1f vs %.1f MiB = %.2fx" %
               (a_ / 1024, b_ / 1024, a_ / b_), a_ <= b_)
        if "package" in peak:
            T.append("       (package peak RSS: %.1f MiB)" % (med(peak["package"]) / 1024))
    L.append("### Targets (issue 6)")
    L.append("")
    L.append("```")
    L += T
    L.append("```")
    L.append("")
    L.append("Command: `%s`" % meta["command"])
    text = "\n".join(L) + "\n"

    # data files for gnuplot
    pp_tests = [t for t in main_tests if t.startswith("pp") and any(x["test"] == t and not x.get("once")
                                                                      for x in runs)]
    with open(os.path.join(out_dir, "prefill.dat"), "w") as f:
        f.write("# n  " + "  ".join("%s_med %s_min %s_max" % (e, e, e) for e in ENGINES) + "\n")
        for t in sorted(pp_tests, key=lambda s: int(s[2:])):
            vals = []
            for e in ENGINES:
                v = c(e, t)
                vals += ["%.3f %.3f %.3f" % (med(v), min(v), max(v)) if v else "NaN NaN NaN"]
            f.write("%s  %s\n" % (t[2:], "  ".join(vals)))
    with open(os.path.join(out_dir, "decode.dat"), "w") as f:
        f.write("# test  " + "  ".join("%s_med %s_min %s_max" % (e, e, e) for e in ENGINES) + "\n")
        for t in [t for t in test_order if t.startswith("tg")]:
            vals = []
            for e in ENGINES:
                v = c(e, t)
                vals += ["%.3f %.3f %.3f" % (med(v), min(v), max(v)) if v else "NaN NaN NaN"]
            f.write('"%s"  %s\n' % (t, "  ".join(vals)))
    summary = {"meta": meta, "cells": {"%s|%s" % k: {"median": med(v), "min": min(v), "max": max(v), "n": len(v)}
                                       for k, v in cells.items()},
               "decode_bound_tps": bound, "bandwidth_gbs": bw_gbs,
               "decode_paired_ratio": med([x for x, _ in pr]) if pr else None, "targets": T}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return text


def plot(out_dir, title, has_pkg):
    if not shutil.which("gnuplot"):
        log("gnuplot missing; trying apt-get install -y gnuplot-nox")
        subprocess.run(["apt-get", "install", "-y", "gnuplot-nox"], stdout=subprocess.DEVNULL)
    if not shutil.which("gnuplot"):
        log("no gnuplot: no chart")
        return None
    png = os.path.join(out_dir, "peer.png")
    r = subprocess.run(["gnuplot", "-e", "dir='%s'; out='%s'; ttl='%s'; pkg=%d" % (out_dir, png, title, int(has_pkg)),
                        os.path.join(HERE, "peer_plot.gp")], capture_output=True, text=True)
    if r.returncode:
        log("gnuplot failed: " + r.stderr.strip()[-500:])
        return None
    return png


def write_raw(out_dir, meta, runs):
    with open(os.path.join(out_dir, "runs.json"), "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    keys = ["engine", "test", "kind", "n", "depth", "rep", "tps", "source", "wall_s", "cpu_s", "peak_rss_kib",
            "rss_anon_open_kib", "self_vmhwm_kib", "warmup_tps", "depth_prefill_tps", "tps_1024", "per_token_ratio", "start",
            "loadavg_before", "loadavg_after", "cmd"]
    with open(os.path.join(out_dir, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            w.writerow(r)
