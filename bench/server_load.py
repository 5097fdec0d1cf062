#!/usr/bin/env python3
"""Bounded loopback load test of `npullm serve`: C clients x R requests each
(greedy chat, streamed and not, every D-th request's client disconnecting
after its first streamed piece), against the answers of the same prompts
asked one at a time first. Prints throughput and p50/p99 latency, RSS before
and after; exits 1 on a server error, a crash, a completed answer that
differs from the sequential one, or RSS growth over --rss-slack MiB.

    scripts/python bench/server_load.py --cli build-asan/npullm   # under ASan
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "server"))
from serverlib import MODEL, Server  # noqa: E402

PROMPTS = ["The capital of France is", "Once upon a time", "The best way to learn to code is",
           "In 1969, the first man on the moon", "Water boils at"]


def request(port, prompt, n, stream, disconnect=False):
    """(text or None if disconnected, status) of one chat request."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": n, "temperature": 0,
                       "stream": stream})
    c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        r.read()
        c.close()
        return None, r.status
    if not stream:
        js = json.loads(r.read())
        c.close()
        return js["choices"][0]["message"]["content"], 200
    text = ""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            break
        ev = json.loads(line[6:])
        if "error" in ev:
            c.close()
            return None, ev["error"].get("code") or 500
        if ev["choices"]:
            piece = ev["choices"][0]["delta"].get("content") or ""
            text += piece
            if disconnect and piece:
                c.sock.close()  # mid-stream: the server must cancel and go on
                c.close()
                return None, 200
    c.close()
    return text, 200


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("NPL_CLI", "build/npullm"))
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=25)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per session")
    ap.add_argument("--disconnect-every", type=int, default=5)
    ap.add_argument("--rss-slack", type=float, default=8.0, help="MiB")
    a = ap.parse_args()

    srv = Server("-c", "512", "-t", str(a.threads), "--parallel", str(a.parallel), "--queue", str(a.clients * 2),
                 model=a.model, cli=a.cli)
    bad = []
    try:
        ref = {}
        for p in PROMPTS:  # sequential answers, streamed and not (they must agree too)
            ref[p], st = request(srv.port, p, a.max_tokens, False)
            s, _ = request(srv.port, p, a.max_tokens, True)
            if st != 200 or s != ref[p]:
                bad.append(f"sequential: {p!r}: {ref[p]!r} vs streamed {s!r}")
        # one round of the load first, so allocator pools are warm before RSS is read
        ths = [threading.Thread(target=request, args=(srv.port, p, a.max_tokens, i % 2 == 0))
               for i, p in enumerate(PROMPTS)]
        [t.start() for t in ths]
        [t.join() for t in ths]
        time.sleep(0.5)
        rss0 = srv.rss_kib()
        lat, errors, mism, done, cut = [], [], [], [0], [0]
        lock = threading.Lock()

        def client(ci):
            for k in range(a.requests):
                p = PROMPTS[(ci + k) % len(PROMPTS)]
                stream = (ci + k) % 2 == 0
                disc = stream and a.disconnect_every > 0 and (ci * a.requests + k) % a.disconnect_every == 0
                t0 = time.time()
                try:
                    text, st = request(srv.port, p, a.max_tokens, stream, disc)
                except Exception as e:  # noqa: BLE001
                    text, st = None, repr(e)
                dt = time.time() - t0
                with lock:
                    if st != 200:
                        errors.append(f"client {ci} request {k}: {st}")
                    elif disc:
                        cut[0] += 1
                    else:
                        done[0] += 1
                        lat.append(dt)
                        if text != ref[p]:
                            mism.append(f"{p!r}: {text!r} != {ref[p]!r}")
        t0 = time.time()
        ths = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        [t.start() for t in ths]
        [t.join() for t in ths]
        wall = time.time() - t0
        time.sleep(1.0)  # cancelled generations end
        rss1 = srv.rss_kib()
        alive = srv.alive()
        lat.sort()
        pct = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan"))
        print(f"{a.clients} clients x {a.requests} requests (max_tokens {a.max_tokens}, {a.parallel} sessions x "
              f"{a.threads} thread{'s' if a.threads > 1 else ''}, {os.path.basename(a.cli)}): {done[0]} completed, "
              f"{cut[0]} disconnected mid-stream, {len(errors)} errors, {len(mism)} mismatches in {wall:.1f} s")
        print(f"throughput {done[0] / wall:.2f} req/s, {done[0] * a.max_tokens / wall:.1f} generated tok/s "
              f"(at most max_tokens each); latency p50 {pct(0.5):.2f} s, p99 {pct(0.99):.2f} s")
        print(f"server RSS before {rss0 / 1024:.1f} MiB, after {rss1 / 1024:.1f} MiB "
              f"({(rss1 - rss0) / 1024:+.1f} MiB)")
        bad += errors[:5] + mism[:5]
        if not alive:
            bad.append("the server died")
        if (rss1 - rss0) / 1024 > a.rss_slack:
            bad.append(f"RSS grew by {(rss1 - rss0) / 1024:.1f} MiB")
    finally:
        rc = srv.stop()
    if rc != 0:
        bad.append(f"serve exited {rc}: {''.join(srv.log[-20:])}")
    errs = [line for line in srv.log if "ERROR" in line or "runtime error" in line]
    if errs:
        bad.append("sanitizer: " + "".join(errs[:5]))
    for b in bad:
        print("FAIL:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
