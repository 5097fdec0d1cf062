#!/usr/bin/env python3
"""Bounded loopback load test of `npullm serve`: C clients x R requests each
(greedy chat, streamed and not, every D-th request's client disconnecting
after its first streamed piece), against the answers of the same prompts
asked one at a time first. Prints throughput and p50/p99 latency, RSS before
and after; exits 1 on a client or server (5xx) error, a crash or a nonzero
exit (a sanitizer report or a leak at exit), a completed answer that differs
from the sequential one, a disconnected client whose generation the server
did not cancel (logged as 499), or RSS growth over --rss-slack MiB.

    scripts/python bench/server_load.py --cli build-asan/npullm   # under ASan
"""
import argparse
import http.client
import json
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "server"))
from serverlib import MODEL, Server  # noqa: E402

PROMPTS = ["The capital of France is", "Once upon a time", "The best way to learn to code is",
           "In 1969, the first man on the moon", "Water boils at"]


def request(port, prompt, n, stream, disconnect=False):
    """(text or None if disconnected, status, completion tokens) of one chat request."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": n, "temperature": 0, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        r.read()
        c.close()
        return None, r.status, 0
    if not stream:
        js = json.loads(r.read())
        c.close()
        return js["choices"][0]["message"]["content"], 200, js["usage"]["completion_tokens"]
    text, ntok = "", 0
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
            return None, ev["error"].get("code") or 500, 0
        if ev.get("usage"):
            ntok = ev["usage"]["completion_tokens"]
        if ev["choices"]:
            piece = ev["choices"][0]["delta"].get("content") or ""
            text += piece
            if disconnect and piece:
                # mid-stream: the socket really closes (the response's file object holds
                # a reference to it, so close() alone would leave it open)
                c.sock.shutdown(socket.SHUT_RDWR)
                c.sock.close()
                r.close()
                c.close()
                return None, 200, 0
    c.close()
    return text, 200, ntok


def health(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/health")
    h = json.loads(c.getresponse().read())
    c.close()
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("NPL_CLI", "build/npullm"))
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=25)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads of the model's pool")
    ap.add_argument("--disconnect-every", type=int, default=5)
    ap.add_argument("--rss-slack", type=float, default=4.0, help="MiB")
    a = ap.parse_args()

    # -v: one line per request (route, status, seconds), read below for 5xx and for the
    # disconnected clients' cancelled generations (499)
    # under ASan, freed memory waits in a quarantine of 256 MiB before reuse, which reads as RSS
    # growth; a small one (still catching use-after-free of recent frees) makes RSS measure leaks
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS", ""), "quarantine_size_mb=4",
                                               "thread_local_quarantine_size_kb=64") if x)
    srv = Server("-c", "512", "-t", str(a.threads), "--parallel", str(a.parallel), "--queue", str(a.clients * 2), "-v",
                 model=a.model, cli=a.cli, env=env)
    bad = []
    try:
        ref = {}
        for p in PROMPTS:  # sequential answers, streamed and not (they must agree too)
            ref[p], st, _ = request(srv.port, p, a.max_tokens, False)
            s, st2, _ = request(srv.port, p, a.max_tokens, True)
            if st != 200 or st2 != 200 or not ref[p] or s != ref[p]:
                bad.append(f"sequential: {p!r}: {ref[p]!r} ({st}) vs streamed {s!r} ({st2})")
        # one round of the load first, so allocator pools are warm before RSS is read
        ths = [threading.Thread(target=request, args=(srv.port, p, a.max_tokens, i % 2 == 0))
               for i, p in enumerate(PROMPTS)]
        [t.start() for t in ths]
        [t.join() for t in ths]
        time.sleep(0.5)
        rss0 = srv.rss_kib()
        log0 = len(srv.log)
        lat, errors, mism, done, cut, ntok = [], [], [], [0], [0], [0]
        lock = threading.Lock()

        def client(ci):
            for k in range(a.requests):
                p = PROMPTS[(ci + k) % len(PROMPTS)]
                stream = (ci + k) % 2 == 0
                disc = stream and a.disconnect_every > 0 and (ci * a.requests + k) % a.disconnect_every == 0
                t0 = time.time()
                try:
                    text, st, n = request(srv.port, p, a.max_tokens, stream, disc)
                except Exception as e:  # noqa: BLE001
                    text, st, n = None, repr(e), 0
                dt = time.time() - t0
                with lock:
                    if st != 200:
                        errors.append(f"client {ci} request {k}: {st}")
                    elif disc:
                        cut[0] += 1
                    else:
                        done[0] += 1
                        ntok[0] += n
                        lat.append(dt)
                        if text != ref[p]:
                            mism.append(f"{p!r}: {text!r} != {ref[p]!r}")
        t0 = time.time()
        ths = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        [t.start() for t in ths]
        [t.join() for t in ths]
        wall = time.time() - t0
        # the cancelled generations end, and the sessions are idle again
        deadline = time.time() + 30
        while time.time() < deadline:
            h = health(srv.port)
            if h.get("slots_processing") == 0 and h.get("requests_queued") == 0:
                break
            time.sleep(0.2)
        time.sleep(0.5)
        rss1 = srv.rss_kib()
        alive = srv.alive()
        lines = [m.groups() for m in (re.search(r"npullm serve: (chat|completion|models|health|other) (\d+) ",
                                                 x) for x in srv.log[log0:]) if m]
        n499 = sum(1 for r, st in lines if r == "chat" and st == "499")
        n5xx = [f"{r} {st}" for r, st in lines if st.startswith("5")]
        lat.sort()
        pct = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan"))
        print(f"{a.clients} clients x {a.requests} requests (max_tokens {a.max_tokens}, {a.parallel} sessions, "
              f"a pool of {a.threads} thread{'s' if a.threads > 1 else ''}, {a.cli}, {os.path.basename(a.model)}): "
              f"{done[0]} completed, {cut[0]} disconnected mid-stream ({n499} cancelled by the server), "
              f"{len(errors)} client errors, {len(n5xx)} server 5xx, {len(mism)} mismatches in {wall:.1f} s")
        print(f"throughput {done[0] / wall:.2f} req/s, {ntok[0] / wall:.1f} generated tok/s (completed requests, "
              f"{ntok[0]} tokens); latency p50 {pct(0.5):.2f} s, p99 {pct(0.99):.2f} s")
        print(f"server RSS before {rss0 / 1024:.1f} MiB, after {rss1 / 1024:.1f} MiB "
              f"({(rss1 - rss0) / 1024:+.1f} MiB, limit +{a.rss_slack:g})")
        bad += errors[:5] + mism[:5] + n5xx[:5]
        if done[0] == 0:
            bad.append("no request completed")
        if a.disconnect_every > 0 and cut[0] == 0:
            bad.append("no client disconnected mid-stream")
        if n499 != cut[0]:
            bad.append(f"{cut[0]} clients disconnected mid-stream, the server logged {n499} cancelled (499)")
        if done[0] + cut[0] != a.clients * a.requests:
            bad.append(f"{done[0] + cut[0]} of {a.clients * a.requests} requests accounted for")
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
    print("server_load:", "FAILED" if bad else "passed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
