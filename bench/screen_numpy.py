"""numpy reference for `bench/screen.sh`: the same interference statistic as `compatbench
screen` (methods.md §3.1: Ī and ρ over every floating-point tensor; BF16 converted to
float32), reading the files through np.memmap, 16M elements at a time.

  screen_numpy.py BASE MODEL...   prints {"seconds", "interference", "rho", "bytes"} as JSON
  (BASE and MODELs: .safetensors files or folders with a sharded index)
"""
import json
import os
import struct
import sys
import time

import numpy as np

CHUNK = 1 << 24


def tensors(path):
    """{name: (file, offset, dtype, numel)} of a checkpoint file or folder."""
    files = [path]
    if os.path.isdir(path):
        index = json.load(open(os.path.join(path, "model.safetensors.index.json")))
        files = sorted({os.path.join(path, f) for f in index["weight_map"].values()})
    out = {}
    for f in files:
        with open(f, "rb") as h:
            (n,) = struct.unpack("<Q", h.read(8))
            header = json.loads(h.read(n))
        header.pop("__metadata__", None)
        for name, info in header.items():
            b, e = info["data_offsets"]
            out[name] = (f, 8 + n + b, info["dtype"], int(np.prod(info["shape"], dtype=np.int64)))
    return out


def values(ref, start, count):
    f, offset, dtype, _ = ref
    if dtype == "BF16":
        u = np.memmap(f, dtype="<u2", mode="r", offset=offset + 2 * start, shape=(count,))
        return (u.astype(np.uint32) << 16).view(np.float32)
    kind = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}[dtype]
    size = np.dtype(kind).itemsize
    return np.memmap(f, dtype=kind, mode="r", offset=offset + size * start, shape=(count,)).astype(np.float32)


def main():
    base, models = tensors(sys.argv[1]), [tensors(p) for p in sys.argv[2:]]
    t0 = time.perf_counter()
    total_i = total_c = count = 0.0
    nbytes = 0
    for name, ref in base.items():
        if ref[2] not in ("BF16", "F16", "F32", "F64"):
            continue
        n = ref[3]
        for start in range(0, n, CHUNK):
            c = min(CHUNK, n - start)
            b = values(ref, start, c)
            taus = np.stack([values(m[name], start, c) - b for m in models])
            mean = taus.mean(axis=0)
            var = ((taus - mean) ** 2).mean(axis=0)
            mabs = np.abs(taus).mean(axis=0)
            total_i += float(var.sum(dtype=np.float64))
            total_c += float(np.minimum(np.maximum(mabs * mabs - mean * mean, 0), var).sum(dtype=np.float64))
        count += n
        nbytes += n * {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}[ref[2]] * (len(models) + 1)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "interference": total_i / count, "rho": total_c / total_i,
                      "bytes": nbytes}))


if __name__ == "__main__":
    main()
