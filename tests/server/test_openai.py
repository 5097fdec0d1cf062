"""npullm serve through the official openai client (PyPI `openai`, pinned in
scripts/requirements.txt): models, chat (streamed and not), completions;
greedy answers and token counts equal `npullm run`'s on the same prompt, and
a seeded sampled answer equals `npullm run --seed` with the same settings;
a multi-turn conversation (earlier assistant turns; a system message when the
model has a chat template) gets the C API's greedy answer to the same
messages on a fresh session, twice (the second time the slot's KV cache holds
most of it: the usage still counts the whole prompt); with --parallel 2 the
weights are mapped once (RssFile about one model file).
Gemma 3 270M (a base model: its chat turn is the raw prompt) always; the
Qwen2.5 chat model (chatml template from its metadata) when it is installed."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai  # noqa: E402

from serverlib import CHAT_MODEL, MODEL, Server, api_reference, check, finish, run_reference  # noqa: E402

KEY = "test-key-123"
PROMPT = "The capital of France is"
N = 12


def multi_turn_checks(client, model_id, model_path, conv, n):
    """conv through the server (not streamed, then streamed) vs the C API on a fresh session."""
    ref, ref_prompt, ref_decode = api_reference(model_path, conv, n)
    print(f"{model_id}: the C API answers the {len(conv)}-message conversation {ref!r} "
          f"({ref_prompt} prompt tokens)", flush=True)
    check(len(ref) > 0, "the C API gave an answer to the conversation")
    r = client.chat.completions.create(model=model_id, messages=conv, max_tokens=n, temperature=0)
    got = r.choices[0].message.content
    check(got == ref, f"multi-turn chat equals the C API: {got!r} vs {ref!r}")
    check((r.usage.prompt_tokens, r.usage.completion_tokens) == (ref_prompt, ref_decode),
          f"multi-turn usage {(r.usage.prompt_tokens, r.usage.completion_tokens)} vs {(ref_prompt, ref_decode)}")
    chunks = list(client.chat.completions.create(model=model_id, messages=conv, max_tokens=n, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(text == ref, f"multi-turn chat again (streamed, KV rows reused) equals the C API: {text!r} vs {ref!r}")
    usage = [c.usage for c in chunks if c.usage]
    check(len(usage) == 1 and usage[0].prompt_tokens == ref_prompt,
          f"the repeated conversation's usage counts the whole prompt ({ref_prompt}): {usage}")


def chat_checks(srv, model_path, prompt, n, conv_tail, system=None):
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key=KEY, max_retries=0, timeout=300)
    model_id = os.path.basename(model_path)
    ref, ref_counts = run_reference(prompt, n, model=model_path, extra=["--temp", "0"])
    print(f"{model_id}: npullm run answers {ref!r} {ref_counts}", flush=True)
    check(len(ref) > 0, "npullm run gave an answer")

    models = client.models.list()
    check([m.id for m in models.data] == [model_id], f"/v1/models lists {model_id}: {[m.id for m in models.data]}")

    r = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": prompt}],
                                       max_tokens=n, temperature=0)
    got = r.choices[0].message.content
    check(got == ref, f"chat (not streamed) equals npullm run: {got!r} vs {ref!r}")
    check(r.choices[0].message.role == "assistant", "the message's role is assistant")
    check(r.object == "chat.completion", f"object is chat.completion: {r.object}")
    if ref_counts:
        check((r.usage.prompt_tokens, r.usage.completion_tokens) == ref_counts,
              f"usage equals run's token counts: {(r.usage.prompt_tokens, r.usage.completion_tokens)} vs {ref_counts}")
    check(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "total_tokens is the sum")
    want_finish = "length" if ref_counts and ref_counts[1] == n else "stop"
    check(r.choices[0].finish_reason == want_finish, f"finish_reason {r.choices[0].finish_reason} == {want_finish}")

    chunks = list(client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": prompt}],
                                                 max_tokens=n, temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(text == ref, f"chat (streamed) equals npullm run: {text!r} vs {ref!r}")
    check(len([c for c in chunks if c.choices]) >= 3, f"the stream came in pieces: {len(chunks)} chunks")
    check(chunks[0].choices and chunks[0].choices[0].delta.role == "assistant", "the first chunk names the role")
    fins = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    check(fins == [want_finish], f"one chunk carries finish_reason {want_finish}: {fins}")
    usage = [c.usage for c in chunks if c.usage]
    check(len(usage) == 1 and ref_counts is not None and
          (usage[0].prompt_tokens, usage[0].completion_tokens) == ref_counts,
          f"include_usage: one usage chunk with run's counts: {usage}")

    conv = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": prompt}, {"role": "assistant", "content": ref},
        {"role": "user", "content": conv_tail}]
    multi_turn_checks(client, model_id, model_path, conv, n)
    return client, model_id, ref


def main():
    srv = Server("-c", "512", "-t", "1", "--parallel", "2", "--api-key", KEY)
    try:
        # a base model (no chat template): the turns are completed one after another as raw text
        client, model_id, ref = chat_checks(srv, MODEL, PROMPT, N, "\nThe capital of Italy is")

        # two sessions, one copy of the weights: the file is mapped once, by the model
        size_kib = os.path.getsize(MODEL) // 1024
        rss_file = srv.status_kib("RssFile")
        print(f"--parallel 2: RssFile {rss_file} KiB, VmRSS {srv.status_kib('VmRSS')} KiB, model file {size_kib} KiB",
              flush=True)
        check(0.5 * size_kib < rss_file < 1.5 * size_kib,
              f"--parallel 2 maps the weights once: RssFile {rss_file} KiB within 0.5-1.5 x the model's {size_kib} KiB")

        # completions: raw text, run --raw's answer
        raw, raw_counts = run_reference(PROMPT, N, extra=["--temp", "0", "--raw"])
        c = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=N, temperature=0)
        check(c.choices[0].text == raw, f"completion equals npullm run --raw: {c.choices[0].text!r} vs {raw!r}")
        check(c.object == "text_completion", f"object is text_completion: {c.object}")
        if raw_counts:
            check((c.usage.prompt_tokens, c.usage.completion_tokens) == raw_counts,
                  f"completion usage {(c.usage.prompt_tokens, c.usage.completion_tokens)} vs {raw_counts}")
        cs = list(client.completions.create(model=model_id, prompt=PROMPT, max_tokens=N, temperature=0, stream=True))
        check("".join(x.choices[0].text for x in cs if x.choices) == raw, "streamed completion equals run --raw")

        # a stop string: the answer ends before it, finish_reason stop
        cut = ref.find(" of")
        if check(cut > 0, f"the reference answer holds ' of': {ref!r}"):
            r = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": PROMPT}],
                                               max_tokens=N, temperature=0, stop=[" of", "zzz"])
            check(r.choices[0].message.content == ref[:cut], f"stop cuts the answer: {r.choices[0].message.content!r}")
            check(r.choices[0].finish_reason == "stop", "finish_reason stop at a stop string")
            s = list(client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": PROMPT}],
                                                    max_tokens=N, temperature=0, stop=" of", stream=True))
            st = "".join(x.choices[0].delta.content or "" for x in s if x.choices)
            check(st == ref[:cut], f"stop cuts the stream: {st!r}")

        # sampling with a seed: the same settings as npullm run's defaults (temp 0.8, top-k 40,
        # top-p 0.95, min-p 0.05) give run --seed's answer, twice
        seeded, _ = run_reference(PROMPT, N, extra=["--seed", "42"])
        for i in range(2):
            r = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": PROMPT}],
                                               max_tokens=N, temperature=0.8, top_p=0.95, seed=42,
                                               extra_body={"top_k": 40, "min_p": 0.05})
            check(r.choices[0].message.content == seeded,
                  f"seed 42 (try {i}) equals npullm run --seed 42: {r.choices[0].message.content!r} vs {seeded!r}")

        # the key is required (and checked) on every endpoint but /health
        bad = openai.OpenAI(base_url=srv.url + "/v1", api_key="wrong", max_retries=0)
        try:
            bad.models.list()
            check(False, "a wrong API key is refused")
        except openai.AuthenticationError as e:
            check(e.status_code == 401, f"wrong key: 401 ({e.status_code})")
        try:
            client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": PROMPT}],
                                           max_tokens=10**9)
            check(False, "an absurd max_tokens is refused")
        except openai.BadRequestError as e:
            check(e.status_code == 400 and "max_tokens" in str(e), f"absurd max_tokens: 400 ({e})")
    finally:
        rc = srv.stop()
    check(rc == 0, f"serve exits 0 on SIGTERM (got {rc}); log:\n{''.join(srv.log)}")

    if os.path.exists(CHAT_MODEL):  # a model with a chat template: the server renders it as run does
        srv = Server("-c", "512", "-t", "1", "--api-key", KEY, model=CHAT_MODEL)
        try:
            chat_checks(srv, CHAT_MODEL, "What is the capital of France?", 8, "And of Italy?",
                        system="You are a geography tutor. Answer in one sentence.")
        finally:
            check(srv.stop() == 0, "serve (chat model) exits 0")
    else:
        print(f"(no {CHAT_MODEL}: the chat-template check is skipped)")
    finish("test_server_openai")


if __name__ == "__main__":
    main()
