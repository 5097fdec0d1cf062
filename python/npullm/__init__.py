"""npullm: a ctypes binding over libnpullm's public C API (include/npullm.h).

    import npullm
    m = npullm.Model("model.gguf", n_threads=2)
    s = m.session(n_ctx=512)
    print(s.complete("The capital of France is", max_tokens=16, temperature=0))
    for piece in s.stream("Once upon a time", max_tokens=32):
        print(piece, end="")
    ids = m.tokenize("Hello"); text = m.detokenize(ids)

The library is found at $NPULLM_LIBRARY if set, else by the loader
(ctypes.util.find_library("npullm"), LD_LIBRARY_PATH): build it and
`cmake --install` it, or point NPULLM_LIBRARY at build/libnpullm.so.
Errors raise npullm.Error with the library's message and status.
"""
import ctypes
import ctypes.util
import os

__all__ = ["Error", "Model", "Session", "load_library"]

MAX_STOP = 8
MAX_CHUNK_LIMITS = 8
_c_int, _c_float, _sz = ctypes.c_int, ctypes.c_float, ctypes.c_size_t
_TEXT_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _sz, ctypes.c_void_p)


class _ModelParams(ctypes.Structure):
    _fields_ = [("vocab_only", _c_int), ("n_threads", _c_int), ("kernel_family", _c_int),
                ("arithmetic", _c_int), ("chat_template", ctypes.c_char_p), ("repack_mib", _c_int)]


class _SessionParams(ctypes.Structure):
    _fields_ = [("n_ctx", _c_int), ("kv_budget_bytes", _sz), ("profile", _c_int),
                ("n_chunk_limits", _c_int), ("chunk_limits", _c_int * MAX_CHUNK_LIMITS)]


class _GenParams(ctypes.Structure):
    _fields_ = [("max_tokens", _c_int), ("temperature", _c_float), ("top_k", _c_int), ("top_p", _c_float),
                ("min_p", _c_float), ("repeat_penalty", _c_float), ("repeat_last_n", _c_int),
                ("frequency_penalty", _c_float), ("presence_penalty", _c_float), ("seed", ctypes.c_uint32),
                ("n_stop", _c_int), ("stop", ctypes.c_char_p * MAX_STOP)]


class _ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


class Stats(ctypes.Structure):
    _fields_ = [("prompt_tokens", _c_int), ("decode_tokens", _c_int), ("prefill_seconds", ctypes.c_double),
                ("decode_seconds", ctypes.c_double), ("prefill_tps", ctypes.c_double),
                ("decode_tps", ctypes.c_double), ("ttft_seconds", ctypes.c_double), ("n_past", _c_int),
                ("reused_tokens", _c_int), ("finish", _c_int)]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


FINISH = {0: None, 1: "eog", 2: "stop", 3: "length", 4: "context", 5: "cancelled", 6: "error"}
OK, DONE = 0, 1


class Error(RuntimeError):
    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


_lib = None


def load_library(path=None):
    """Loads libnpullm (path, $NPULLM_LIBRARY, or the loader's search) once."""
    global _lib
    if _lib is not None:
        return _lib
    path = path or os.environ.get("NPULLM_LIBRARY") or ctypes.util.find_library("npullm")
    if not path:
        raise OSError("libnpullm not found: set NPULLM_LIBRARY or install it (cmake --install)")
    lib = ctypes.CDLL(path)
    P, S = ctypes.c_void_p, ctypes.c_int
    sig = {
        "npl_version": (ctypes.c_char_p, []),
        "npl_status_name": (ctypes.c_char_p, [S]),
        "npl_model_default_params": (_ModelParams, []),
        "npl_session_default_params": (_SessionParams, []),
        "npl_gen_default_params": (_GenParams, []),
        "npl_model_open": (P, [ctypes.c_char_p, ctypes.POINTER(_ModelParams), ctypes.POINTER(S), ctypes.c_char_p, _sz]),
        "npl_model_close": (None, [P]),
        "npl_model_arch": (ctypes.c_char_p, [P]),
        "npl_model_n_vocab": (S, [P]),
        "npl_model_chat_template": (ctypes.c_char_p, [P]),
        "npl_model_tokenize": (ctypes.c_int64, [P, ctypes.c_char_p, _sz, S, S, ctypes.POINTER(ctypes.c_int32), ctypes.c_int64]),
        "npl_model_detokenize": (ctypes.c_int64, [P, ctypes.POINTER(ctypes.c_int32), ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, S, S]),
        "npl_session_new": (P, [P, ctypes.POINTER(_SessionParams), ctypes.POINTER(S), ctypes.c_char_p, _sz]),
        "npl_session_free": (None, [P]),
        "npl_session_n_ctx": (S, [P]),
        "npl_session_set_text": (S, [P, ctypes.c_char_p, ctypes.POINTER(_GenParams)]),
        "npl_session_set_messages": (S, [P, ctypes.POINTER(_ChatMessage), _sz, ctypes.POINTER(_GenParams)]),
        "npl_session_set_tokens": (S, [P, ctypes.POINTER(ctypes.c_int32), S, ctypes.POINTER(_GenParams)]),
        "npl_session_next": (S, [P, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_sz)]),
        "npl_session_cancel": (None, [P]),
        "npl_session_reset": (S, [P]),
        "npl_session_stats": (S, [P, ctypes.POINTER(Stats)]),
        "npl_session_logits": (ctypes.POINTER(_c_float), [P]),
        "npl_session_save": (S, [P, ctypes.c_char_p]),
        "npl_session_load": (S, [P, ctypes.c_char_p]),
        "npl_session_last_error": (ctypes.c_char_p, [P]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


class Model:
    """A model file (weights mapped once); any number of sessions share it."""

    def __init__(self, path, n_threads=0, kernel_family=-1, chat_template=None, vocab_only=False, library=None):
        lib = load_library(library)
        p = lib.npl_model_default_params()
        p.n_threads, p.kernel_family, p.vocab_only = n_threads, kernel_family, int(vocab_only)
        p.chat_template = _b(chat_template) if chat_template else None
        st, err = ctypes.c_int(0), ctypes.create_string_buffer(512)
        self._lib = lib
        self._h = lib.npl_model_open(_b(os.fspath(path)), ctypes.byref(p), ctypes.byref(st), err, 512)
        if not self._h:
            raise Error(err.value.decode("utf-8", "replace"), st.value)
        self._sessions = []

    def close(self):
        if getattr(self, "_h", None):
            for s in self._sessions:
                s.close()
            self._lib.npl_model_close(self._h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def arch(self):
        return self._lib.npl_model_arch(self._h).decode()

    @property
    def n_vocab(self):
        return self._lib.npl_model_n_vocab(self._h)

    @property
    def chat_template(self):
        return self._lib.npl_model_chat_template(self._h).decode()

    def tokenize(self, text, add_special=True, parse_special=True):
        b = _b(text)
        n = self._lib.npl_model_tokenize(self._h, b, len(b), int(add_special), int(parse_special), None, 0)
        if n < 0:
            raise Error("tokenize failed", -1)
        ids = (ctypes.c_int32 * max(n, 1))()
        self._lib.npl_model_tokenize(self._h, b, len(b), int(add_special), int(parse_special), ids, n)
        return list(ids[:n])

    def detokenize(self, ids, remove_special=True, unparse_special=False):
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        n = self._lib.npl_model_detokenize(self._h, arr, len(ids), None, 0, int(remove_special), int(unparse_special))
        if n < 0:
            raise Error("detokenize: an id out of range", -1)
        buf = ctypes.create_string_buffer(n + 1)
        self._lib.npl_model_detokenize(self._h, arr, len(ids), buf, n, int(remove_special), int(unparse_special))
        return buf.raw[:n].decode("utf-8", "replace")

    def session(self, n_ctx=0, kv_budget_bytes=0):
        s = Session(self, n_ctx, kv_budget_bytes)
        self._sessions.append(s)
        return s


class Session:
    """One conversation on a model: its own KV cache, history, sampler, stats."""

    def __init__(self, model, n_ctx=0, kv_budget_bytes=0):
        lib = model._lib
        p = lib.npl_session_default_params()
        p.n_ctx, p.kv_budget_bytes = n_ctx, kv_budget_bytes
        st, err = ctypes.c_int(0), ctypes.create_string_buffer(512)
        self._lib, self.model = lib, model
        self._h = lib.npl_session_new(model._h, ctypes.byref(p), ctypes.byref(st), err, 512)
        if not self._h:
            raise Error(err.value.decode("utf-8", "replace"), st.value)

    def close(self):
        if getattr(self, "_h", None):
            self._lib.npl_session_free(self._h)
            self._h = None

    def _check(self, st):
        if st not in (OK, DONE):
            raise Error(self._lib.npl_session_last_error(self._h).decode("utf-8", "replace"), st)
        return st

    def _gen(self, max_tokens=512, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0,
             repeat_last_n=64, frequency_penalty=0.0, presence_penalty=0.0, seed=0xFFFFFFFF, stop=()):
        g = self._lib.npl_gen_default_params()
        g.max_tokens, g.temperature, g.top_k, g.top_p, g.min_p = max_tokens, temperature, top_k, top_p, min_p
        g.repeat_penalty, g.repeat_last_n = repeat_penalty, repeat_last_n
        g.frequency_penalty, g.presence_penalty, g.seed = frequency_penalty, presence_penalty, seed & 0xFFFFFFFF
        stop = [stop] if isinstance(stop, str) else list(stop)
        if len(stop) > MAX_STOP:
            raise ValueError("at most %d stop strings" % MAX_STOP)
        g.n_stop = len(stop)
        for i, s in enumerate(stop):
            g.stop[i] = _b(s)
        return g

    def _set(self, prompt=None, messages=None, tokens=None, **kw):
        g = self._gen(**kw)
        if messages is not None:
            arr = (_ChatMessage * len(messages))(*[_ChatMessage(_b(m["role"]), _b(m["content"])) for m in messages])
            st = self._lib.npl_session_set_messages(self._h, arr, len(messages), ctypes.byref(g))
        elif tokens is not None:
            arr = (ctypes.c_int32 * len(tokens))(*tokens)
            st = self._lib.npl_session_set_tokens(self._h, arr, len(tokens), ctypes.byref(g))
        else:
            st = self._lib.npl_session_set_text(self._h, _b(prompt), ctypes.byref(g))
        self._check(st)

    def stream(self, prompt=None, messages=None, tokens=None, **kw):
        """Yields the answer's text pieces (whole UTF-8 characters)."""
        self._set(prompt, messages, tokens, **kw)
        text, n = ctypes.c_void_p(), _sz()
        while True:
            st = self._lib.npl_session_next(self._h, ctypes.byref(text), ctypes.byref(n))
            if n.value:
                yield ctypes.string_at(text, n.value).decode("utf-8", "replace")
            if st != OK:
                self._check(st)
                return

    def complete(self, prompt, **kw):
        """Raw completion of prompt; the answer's text."""
        return "".join(self.stream(prompt, **kw))

    def chat(self, messages, **kw):
        """messages: [{"role": ..., "content": ...}]; the assistant's answer."""
        return "".join(self.stream(messages=messages, **kw))

    def generate(self, tokens, **kw):
        return "".join(self.stream(tokens=tokens, **kw))

    def cancel(self):
        self._lib.npl_session_cancel(self._h)

    def reset(self):
        self._lib.npl_session_reset(self._h)

    def stats(self):
        s = Stats()
        self._lib.npl_session_stats(self._h, ctypes.byref(s))
        d = s.as_dict()
        d["finish"] = FINISH.get(d["finish"])
        return d

    def logits(self):
        p = self._lib.npl_session_logits(self._h)
        return None if not p else p[: self.model.n_vocab]

    def save(self, path):
        self._check(self._lib.npl_session_save(self._h, _b(os.fspath(path))))

    def load(self, path):
        self._check(self._lib.npl_session_load(self._h, _b(os.fspath(path))))
