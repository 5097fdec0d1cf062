#!/usr/bin/env python3
"""make_iq4_fixture.py - llama.cpp / gguf-py reference blocks for iq4_nl, iq4_xs and mxfp4.

Writes tests/data/quant/iq4.gguf (read by tests/test_iq4.c), holding for
T in iq4_nl, iq4_xs, mxfp4:

  T.src        f32 [N]  inputs (normal, heavy-tailed, a zero block, a block
                        of one value, tiny and huge scales)
  T.q          T   [N]  llama.cpp's quantization of T.src as llama-quantize
                        writes it without an importance matrix
                        (quantize_iq4_nl / quantize_iq4_xs / quantize_mxfp4,
                        ggml-base; for mxfp4 also gguf-py's, which must equal it)
  T.q_ref      T   [N]  iq4_nl only: quantize_row_iq4_nl_ref (no trials)
  T.deq        f32 [N]  gguf-py's dequantization of T.q (gguf.quants)
  T.rand       T   [N]  random block bytes (finite f16 scales; mxfp4 exponents
                        100..150, so the values stay finite)
  T.rand_deq   f32 [N]  gguf-py's dequantization of T.rand
  T.rand_deq_ggml f32 [N] llama.cpp's dequantize_row_T of T.rand

llama.cpp's functions are called through ctypes from the libggml-base.so of
llama-cpp-python 0.3.36 (installed for recording only; it is not a test
dependency); gguf-py is the pinned gguf==0.19.0.  The C test only reads the
file, so it needs neither.  Deterministic (numpy default_rng(7)).

Usage: tests/tools/make_iq4_fixture.py [-o tests/data/quant/iq4.gguf]
"""
import argparse
import ctypes
import os
import sys

_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv")
if (sys.prefix == sys.base_prefix and not os.environ.get("NPL_PYTHON")
        and os.path.isfile(os.path.join(_VENV, "pyvenv.cfg"))):
    os.execv(os.path.join(_VENV, "bin", "python3"),
             [os.path.join(_VENV, "bin", "python3"), os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT

HERE = os.path.dirname(os.path.abspath(__file__))
N = 4096
BLOCK = {QT.IQ4_NL: (32, 18), QT.IQ4_XS: (256, 136), QT.MXFP4: (32, 17)}


def ggml_base():
    import llama_cpp
    lib = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
    fp = ctypes.POINTER(ctypes.c_float)
    for name in ("quantize_iq4_nl", "quantize_iq4_xs", "quantize_mxfp4"):
        f = getattr(lib, name)
        f.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, fp]
        f.restype = ctypes.c_size_t
    for name in ("quantize_row_iq4_nl_ref",):
        f = getattr(lib, name)
        f.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
        f.restype = None
    for name in ("dequantize_row_iq4_nl", "dequantize_row_iq4_xs", "dequantize_row_mxfp4"):
        f = getattr(lib, name)
        f.argtypes = [ctypes.c_void_p, fp, ctypes.c_int64]
        f.restype = None
    return lib, llama_cpp.__version__


def inputs(rng):
    x = rng.standard_normal(N).astype(np.float32)
    x[::17] *= 6.0                       # heavy tails
    x[256:288] = 0.0                     # an all-zero block (and sub-block)
    x[288:320] = 0.75                    # one value
    x[512:768] *= 1e-6                   # tiny scale
    x[768:1024] *= 1e4                   # large scale (f16 range)
    x[1024:1280] = np.abs(x[1024:1280])  # one sign
    x[1280:1536] = -np.abs(x[1280:1536])
    return x


def rand_blocks(rng, qt):
    bs, ts = BLOCK[qt]
    nb = N // bs
    raw = rng.integers(0, 256, size=(nb, ts), dtype=np.uint8)
    if qt == QT.MXFP4:
        raw[:, 0] = rng.integers(100, 151, size=nb, dtype=np.uint8)
        return raw.reshape(-1)
    d = (rng.standard_normal(nb) * 0.01).astype(np.float16)  # finite scales
    raw[:, 0:2] = d.view(np.uint8).reshape(nb, 2)
    return raw.reshape(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", default=os.path.join(HERE, "..", "data", "quant", "iq4.gguf"))
    a = ap.parse_args()
    lib, ver = ggml_base()
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(a.out, "npullm-quant-fixture")
    w.add_description("iq4_nl / iq4_xs / mxfp4 reference blocks: llama.cpp (llama-cpp-python %s, libggml-base) "
                      "and gguf-py %s; made by tests/tools/make_iq4_fixture.py" % (ver, gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0"))
    fp = ctypes.POINTER(ctypes.c_float)
    for qt, name in ((QT.IQ4_NL, "iq4_nl"), (QT.IQ4_XS, "iq4_xs"), (QT.MXFP4, "mxfp4")):
        bs, ts = BLOCK[qt]
        x = inputs(rng)
        q = np.zeros(N // bs * ts, dtype=np.uint8)
        getattr(lib, "quantize_" + name)(x.ctypes.data_as(fp), q.ctypes.data, 1, N, None)
        w.add_tensor(name + ".src", x)
        w.add_tensor(name + ".q", q, raw_shape=(N // bs, ts), raw_dtype=qt)
        if qt == QT.IQ4_NL:
            qr = np.zeros_like(q)
            lib.quantize_row_iq4_nl_ref(x.ctypes.data_as(fp), qr.ctypes.data, N)
            w.add_tensor(name + ".q_ref", qr, raw_shape=(N // bs, ts), raw_dtype=qt)
        if qt == QT.MXFP4:
            qg = gguf.quants.quantize(x.reshape(1, N), qt).reshape(-1)
            assert np.array_equal(qg, q), "mxfp4: gguf-py and llama.cpp quantize differently"
        deq = gguf.quants.dequantize(q.reshape(N // bs, ts), qt).reshape(-1).astype(np.float32)
        w.add_tensor(name + ".deq", deq)
        r = rand_blocks(rng, qt)
        w.add_tensor(name + ".rand", r, raw_shape=(N // bs, ts), raw_dtype=qt)
        rd = gguf.quants.dequantize(r.reshape(N // bs, ts), qt).reshape(-1).astype(np.float32)
        w.add_tensor(name + ".rand_deq", rd)
        rg = np.zeros(N, dtype=np.float32)
        getattr(lib, "dequantize_row_" + name)(r.ctypes.data, rg.ctypes.data_as(fp), N)
        w.add_tensor(name + ".rand_deq_ggml", rg)
        assert np.array_equal(rd.view(np.uint32), rg.view(np.uint32)), name + ": gguf-py and llama.cpp disagree"
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d bytes)" % (a.out, os.path.getsize(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
