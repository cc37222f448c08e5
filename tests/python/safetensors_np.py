"""A numpy-only safetensors reader and writer (no safetensors package), for interop tests.

  safetensors_np.py read FILE    prints {"metadata": {...}, "tensors": {name: {dtype, shape,
                                 values}}} as JSON, values as float64 (or ints)
  safetensors_np.py write FILE   writes a fixed set of tensors, unaligned, unsorted
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
          "I32": np.int32, "U8": np.uint8, "I8": np.int8, "BF16": np.uint16}


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    buffer = data[8 + n:]
    out = {"metadata": header.pop("__metadata__", {}), "tensors": {}, "data_start": 8 + n}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = np.frombuffer(buffer[begin:end], dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        if info["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        values = raw.reshape(info["shape"]) if info["shape"] else raw.reshape(())
        out["tensors"][name] = {"dtype": info["dtype"], "shape": info["shape"],
                                "values": np.asarray(values, dtype=np.float64).ravel().tolist()}
    return out


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


def save(path, tensors, metadata=None):
    """Writes {name: numpy array} (float32 -> F32, float16 -> F16, int64 -> I64, int32 -> I32;
    a tuple ("BF16", float32 array) -> BF16)."""
    codes = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64",
             np.dtype("<i4"): "I32"}
    header, offset, blobs = {"__metadata__": metadata or {}}, 0, []
    for name, array in tensors.items():
        if isinstance(array, tuple):  # ("BF16", float32 array): rounded to nearest even
            u = np.ascontiguousarray(array[1], dtype="<f4").view("<u4").astype(np.uint64)
            bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
            blob, code, shape = bf.tobytes(), "BF16", list(array[1].shape)
        else:
            array = np.ascontiguousarray(array)
            blob = array.astype(array.dtype.newbyteorder("<")).tobytes()
            code, shape = codes[array.dtype.newbyteorder("<")], list(array.shape)
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    if sys.argv[1] == "read":
        json.dump(read(sys.argv[2]), sys.stdout)
    else:
        write(sys.argv[2])
