"""npullm serve on bad input: each gets its HTTP status and a JSON error body
(OpenAI's {"error": {"message", "type", "param", "code"}}), and the server
keeps answering everyone else. Raw sockets, so nothing is cleaned up on the
way (unlike a client library)."""
import json
import os
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import Server, check, finish  # noqa: E402

KEY = "k3y"
TIMEOUT = 3  # --timeout: idle connections and a request's arrival


def http(port, method, path, body=b"", headers=None, key=KEY, raw=None, read_timeout=60):
    """(status, parsed JSON or None, raw body) of one request on a new connection."""
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        if raw is None:
            h = {"Host": "x", "Content-Length": str(len(body)), "Connection": "close"}
            if key:
                h["Authorization"] = "Bearer " + key
            h.update(headers or {})
            raw = f"{method} {path} HTTP/1.1\r\n".encode() + b"".join(
                f"{k}: {v}\r\n".encode() for k, v in h.items()) + b"\r\n" + body
        s.sendall(raw)
        data = b""
        while True:
            try:
                b = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not b:
                break
            data += b
    finally:
        s.close()
    if not data:
        return None, None, b""
    head, _, payload = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    if b"chunked" in head.lower():
        out, rest = b"", payload
        while rest:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        payload = out
    try:
        return status, json.loads(payload), payload
    except ValueError:
        return status, None, payload


def chat_body(content="The capital of France is", **kw):
    b = {"messages": [{"role": "user", "content": content}], "max_tokens": 4, "temperature": 0}
    b.update(kw)
    return json.dumps(b).encode()


def expect_error(port, what, status, body=None, param=None, code=None, path="/v1/chat/completions", **kw):
    st, js, raw = http(port, "POST" if body is not None else "GET", path, body or b"", **kw)
    ok = check(st == status, f"{what}: status {st} (want {status}) {raw[:200]!r}")
    err = js.get("error") if isinstance(js, dict) else None
    ok &= check(isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]
                and "type" in err and "param" in err and "code" in err,
                f"{what}: a JSON error body with message/type/param/code: {raw[:200]!r}")
    if err and param is not None:
        ok &= check(err.get("param") == param, f"{what}: param {err.get('param')!r} (want {param!r})")
    if err and code is not None:
        ok &= check(err.get("code") == code, f"{what}: code {err.get('code')!r} (want {code!r})")
    if err:
        print(f"  {what}: {st} {err['message']}", flush=True)
    return ok


def still_serving(port, what):
    st, js, _ = http(port, "GET", "/health", key=None)
    check(st == 200 and js and js.get("status") == "ok", f"after {what}: /health answers ({st})")
    st, js, raw = http(port, "POST", "/v1/chat/completions", chat_body())
    check(st == 200 and js and js["choices"][0]["message"]["content"], f"after {what}: a chat answers ({st} {raw[:120]!r})")


def main():
    srv = Server("-c", "256", "-t", "1", "--parallel", "1", "--queue", "0", "--api-key", KEY, "--max-body", "65536",
                 "--timeout", str(TIMEOUT))
    p = srv.port
    try:
        expect_error(p, "malformed JSON", 400, b'{"messages": [', param=None)
        expect_error(p, "trailing garbage", 400, chat_body() + b"}")
        expect_error(p, "empty body", 400, b"")
        expect_error(p, "not an object", 400, b"[1, 2]")
        expect_error(p, "messages of the wrong type", 400, b'{"messages": "hi"}', param="messages")
        expect_error(p, "no messages", 400, b'{"model": "x"}', param="messages")
        expect_error(p, "empty messages", 400, b'{"messages": []}', param="messages")
        expect_error(p, "a role that does not exist", 400,
                     b'{"messages": [{"role": "wizard", "content": "x"}]}', param="messages[0].role")
        expect_error(p, "content of the wrong type", 400,
                     b'{"messages": [{"role": "user", "content": 5}]}', param="messages[0].content")
        expect_error(p, "temperature of the wrong type", 400, chat_body(temperature="hot"), param="temperature")
        expect_error(p, "temperature out of range", 400, chat_body(temperature=7), param="temperature")
        expect_error(p, "top_p out of range", 400, chat_body(top_p=-1), param="top_p")
        expect_error(p, "stream of the wrong type", 400, chat_body(stream="yes"), param="stream")
        expect_error(p, "stop of the wrong type", 400, chat_body(stop=[1]), param="stop")
        expect_error(p, "five stop strings", 400, chat_body(stop=["a", "b", "c", "d", "e"]), param="stop")
        expect_error(p, "absurd max_tokens", 400, chat_body(max_tokens=10**12), param="max_tokens")
        expect_error(p, "negative max_tokens", 400, chat_body(max_tokens=-5), param="max_tokens")
        expect_error(p, "fractional max_tokens", 400, chat_body(max_tokens=2.5), param="max_tokens")
        expect_error(p, "n = 2", 400, chat_body(n=2), param="n")
        expect_error(p, "completion without prompt", 400, b'{"max_tokens": 3}', param="prompt", path="/v1/completions")
        expect_error(p, "invalid UTF-8", 400,
                     b'{"messages": [{"role": "user", "content": "caf\xc3\x28 \xff"}]}')
        expect_error(p, "a lone surrogate escape", 400,
                     b'{"messages": [{"role": "user", "content": "\\ud800"}]}')
        long_prompt = " ".join(["word"] * 2000)
        expect_error(p, "a prompt longer than the context", 400, chat_body(long_prompt), code="context_length_exceeded")
        expect_error(p, "a streamed prompt longer than the context", 400, chat_body(long_prompt, stream=True),
                     code="context_length_exceeded")
        expect_error(p, "a body over --max-body", 413, chat_body("x" * 70000))
        # over the limit with no Content-Length (chunked): read, dropped, refused
        big = b"x" * 70000
        chunked = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                   b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                   f"{len(big):x}\r\n".encode() + big + b"\r\n0\r\n\r\n")
        expect_error(p, "a chunked body over --max-body", 413, b"", raw=chunked)
        expect_error(p, "no API key", 401, chat_body(), key=None, code="invalid_api_key")
        expect_error(p, "a wrong API key", 401, chat_body(), key="k3z", code="invalid_api_key")
        expect_error(p, "a longer wrong API key", 401, chat_body(), key=KEY + "x", code="invalid_api_key")
        expect_error(p, "models without a key", 401, None, path="/v1/models", key=None)
        expect_error(p, "an unknown endpoint", 404, b"{}", path="/v1/embeddings")
        expect_error(p, "GET on a POST endpoint", 405, None, path="/v1/chat/completions")
        st, js, _ = http(p, "GET", "/health", key=None)
        check(st == 200 and js["status"] == "ok", "/health needs no key")
        # unknown fields are ignored, as llama.cpp's server does
        st, js, raw = http(p, "POST", "/v1/chat/completions", chat_body(frobnicate={"x": 1}, user="me"))
        check(st == 200 and js["choices"][0]["message"]["content"], f"unknown fields are ignored ({st} {raw[:100]!r})")
        still_serving(p, "the malformed requests")

        # a header flood: libmicrohttpd refuses it (its own status, 431), the server goes on
        flood = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(
            f"X-Flood-{i}: {'y' * 100}\r\n".encode() for i in range(2000)) + b"\r\n"
        st, _, _ = http(p, None, None, raw=flood)
        check(st in (413, 431, None), f"a header flood is refused ({st})")
        print(f"  header flood: {st}", flush=True)
        still_serving(p, "a header flood")

        # a client sending its body one byte a second (declared with Content-Length, or chunked: one
        # byte per chunk) holds a connection, never a session: with one session and no queue, others
        # are served meanwhile and /health shows the session idle; after --timeout seconds the
        # client gets 408 (code request_timeout) and the connection is closed
        def slow(chunked):
            s = socket.create_connection(("127.0.0.1", p), timeout=30)
            body = chat_body()
            head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                    (b"\r\nTransfer-Encoding: chunked" if chunked else f"\r\nContent-Length: {len(body)}".encode()) +
                    b"\r\n\r\n")
            s.sendall(head)
            data = b"".join(b"1\r\n" + bytes([b]) + b"\r\n" for b in body) + b"0\r\n\r\n" if chunked else body
            t0, got, i = time.time(), b"", 0
            try:
                while i < len(data) and time.time() - t0 < TIMEOUT + 8:
                    if select.select([s], [], [], 0)[0]:  # the server answered (or closed): stop sending
                        break
                    s.sendall(data[i:i + 1])
                    i += 1
                    time.sleep(1 if not chunked or data[i - 1:i] == b"\n" else 0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                while True:
                    b = s.recv(4096)
                    if not b:
                        break
                    got += b
            except (ConnectionResetError, socket.timeout):
                pass
            s.close()
            return time.time() - t0, i, got

        for chunked in (False, True):
            what = "a slow chunked upload" if chunked else "a slow upload (Content-Length)"
            res = {}
            th = threading.Thread(target=lambda: res.update(r=slow(chunked)))
            th.start()
            time.sleep(1.5)
            _, js, _ = http(p, "GET", "/health", key=None)
            check(js and js["slots_processing"] == 0 and js["requests_queued"] == 0,
                  f"{what}: holds no session ({js})")
            still_serving(p, what + " started")  # --parallel 1 --queue 0: a held session would be 503
            th.join(60)
            el, sent, got = res["r"]
            line = got.split(b"\r\n")[0]
            check(el < TIMEOUT + 6, f"{what}: cut off after about --timeout ({el:.1f} s)")
            check(b" 408 " in line, f"{what}: gets 408: {got[:80]!r}")
            _, _, payload = got.partition(b"\r\n\r\n")
            try:
                err = json.loads(payload)["error"]
            except (ValueError, KeyError, TypeError):
                err = {}
            check(err.get("code") == "request_timeout" and err.get("message"),
                  f"{what}: an OpenAI error body with code request_timeout: {payload[:120]!r}")
            print(f"  {what}: {sent} bytes sent, cut after {el:.1f} s: {line!r} {err.get('message')!r}", flush=True)
        still_serving(p, "the slow uploads")
        # a client that connects and sends nothing is closed by the idle timeout
        s = socket.create_connection(("127.0.0.1", p), timeout=30)
        t0 = time.time()
        check(s.recv(10) == b"" and time.time() - t0 < TIMEOUT + 3, f"an idle connection is closed ({time.time() - t0:.1f} s)")
        s.close()

        # one session, no queue: a second request while one runs is 503
        def long_stream():
            http(p, "POST", "/v1/completions", json.dumps(
                {"prompt": "Once upon a time", "max_tokens": 60, "temperature": 0}).encode())
        th = threading.Thread(target=long_stream)
        th.start()
        deadline = time.time() + 30
        while time.time() < deadline:
            _, js, _ = http(p, "GET", "/health", key=None)
            if js["slots_processing"] == 1:
                break
            time.sleep(0.05)
        expect_error(p, "a request beyond the sessions and the queue", 503, chat_body(), code="server_busy")
        th.join(120)
        still_serving(p, "a 503")
        check(srv.alive(), "the server is alive")
    finally:
        rc = srv.stop()
    check(rc == 0, f"serve exits 0 (got {rc})")
    finish("test_server_bad_input")


if __name__ == "__main__":
    main()
