"""The C++ reader and writer against compatnets.safetensors (python/), for the interop test.

  safetensors_fixture.py dump FILE    prints {"metadata": {...}, "tensors": {name: {dtype,
                                      shape, values}}} as JSON, values as float64 (or ints)
  safetensors_fixture.py write FILE   writes a fixed set of tensors, unaligned and unsorted,
                                      as no writer of ours would (readers must not need it)
  safetensors_fixture.py bf16 FILE    saves 4096 float32 values (halfway cases, NaN and
                                      infinities among them) as "x" (F32) and "x_bf16" (BF16)
"""
import json
import struct
import sys

import numpy as np

from compatnets.safetensors import read, save


def dump(path):
    r = read(path)
    tensors = {name: {"dtype": r.dtypes[name], "shape": list(t.shape),
                      "values": np.asarray(t, dtype=np.float64).ravel().tolist()}
               for name, t in r.tensors.items()}
    return {"metadata": r.metadata, "tensors": tensors, "data_start": r.data_start}


def write(path):
    tensors = [
        ("w", "F32", [2, 3], (np.arange(6, dtype=np.float32) * 0.5).tobytes()),
        ("h", "F16", [4], np.array([1, -2, 0.5, 65504], dtype="<f2").tobytes()),
        ("b", "BF16", [3], np.array([0x3F80, 0xC000, 0x4049], dtype="<u2").tobytes()),
        ("i", "I32", [2], np.array([7, -7], dtype="<i4").tobytes()),
    ]
    header, offset, blobs = {"__metadata__": {"who": "numpy"}}, 0, []
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode("utf-8")  # no padding: readers must not need alignment
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bf16(path):
    rng = np.random.default_rng(7)
    x = rng.normal(scale=rng.choice([1e-30, 1e-3, 1.0, 1e30], 4096)).astype(np.float32)
    u = x.view(np.uint32)
    u[:1024] = (u[:1024] & 0xFFFF0000) | 0x8000  # exactly halfway between two BF16 values
    x[1024:1028] = [np.nan, np.inf, -np.inf, -0.0]
    save(path, {"x": x, "x_bf16": x}, dtypes={"x_bf16": "BF16"})


if __name__ == "__main__":
    {"dump": lambda p: json.dump(dump(p), sys.stdout), "write": write, "bf16": bf16}[sys.argv[1]](sys.argv[2])
