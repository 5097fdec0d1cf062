#!/usr/bin/env python3
"""requant.py - a GGUF with every quantized weight requantized to Q8_0, for benchmarks.

Usage:
  scripts/python bench/requant.py IN.gguf OUT.gguf

Each tensor of a block type (Q4_K, Q5_0, Q6_K, ...) is dequantized with the
gguf package and quantized again to Q8_0; F32 / F16 / Q8_0 tensors and every
metadata key are copied as they are. The result is not the model's Q8_0
release (it carries the source's rounding too): it gives a Q8_0 file of the
same architecture and shapes, so that the Q8_0 kernels of both engines can be
timed on a real model (bench/peer --model OUT.gguf). Nothing is downloaded.
OUT is written to a temporary name and renamed only when complete.
"""
import os
import sys


def fail(msg):
    print(f"requant: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        fail("usage: requant.py IN.gguf OUT.gguf")
    src, dst = sys.argv[1], sys.argv[2]
    try:
        import numpy as np
        import gguf
        from gguf import quants, GGMLQuantizationType as T
    except ImportError as e:
        fail(f"needs the venv's gguf and numpy packages ({e}); run it with scripts/python")
    try:
        r = gguf.GGUFReader(src)
    except (OSError, ValueError) as e:
        fail(f"{src}: cannot read as GGUF: {e}")
    if "general.architecture" not in r.fields:
        fail(f"{src}: no general.architecture key")
    tmp = dst + ".tmp"
    w = gguf.GGUFWriter(tmp, r.fields["general.architecture"].contents())
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_key_value(f.name, f.contents(), t, sub_type=f.types[-1])
        else:
            w.add_key_value(f.name, f.contents(), t)
    for t in r.tensors:
        if t.tensor_type in (T.F32, T.F16, T.Q8_0):
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
            continue
        shape = [int(x) for x in reversed(t.shape)]  # rows, columns
        if shape[-1] % 32:
            fail(f"{src}: tensor {t.name}: rows of {shape[-1]} are not whole Q8_0 blocks of 32")
        try:
            x = quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
        except NotImplementedError:
            fail(f"{src}: tensor {t.name}: the gguf package cannot dequantize {t.tensor_type.name}")
        q = quants.quantize(x, T.Q8_0)
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=T.Q8_0)
    try:
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, dst)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(f"{dst}: {e}")


if __name__ == "__main__":
    main()
