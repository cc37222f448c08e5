"""A numpy-only safetensors reader and writer.

The format (https://huggingface.co/docs/safetensors): 8 bytes little-endian header length
N, N bytes of JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
end]} (offsets into the data after the header; an optional "__metadata__" maps strings to
strings), then the tensors' little-endian bytes.

    save(path, {"features": x})                       # x: float32 (N, d) -> F32
    save(path, {"w": w}, dtypes="BF16")               # float tensors stored as BF16
    load(path)           -> {name: numpy array}        # BF16 comes back as float32
    read(path)           -> File(tensors, dtypes, metadata, data_start)
    load(folder)         # a sharded checkpoint: its model.safetensors.index.json

Every malformed file raises SafetensorsError naming the file, the byte offset or tensor,
and the reason. Run as ``python3 -m compatnets.safetensors FILE`` to print a file's
tensors (dtype, shape, min, max).
"""
import json
import os
import struct
import sys
from dataclasses import dataclass, field

import numpy as np

# safetensors dtype -> numpy storage dtype (little-endian). BF16 is stored as uint16 bits.
_STORAGE = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8",
            "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
_CODES = {np.dtype(v): k for k, v in _STORAGE.items() if k != "BF16"}
INDEX_NAME = "model.safetensors.index.json"


class SafetensorsError(ValueError):
    """A file that is not valid safetensors: the message names the file and the reason."""


@dataclass
class File:
    """One file's tensors (BF16 as float32), their stored dtypes, and its metadata."""
    tensors: dict = field(default_factory=dict)
    dtypes: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    data_start: int = 0


def _header(path, data):
    if len(data) < 8:
        raise SafetensorsError(f"{path}: {len(data)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise SafetensorsError(f"{path}: header of {n} bytes at offset 8 runs past the end "
                               f"of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: the header at offset 8 is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header at offset 8 is not a JSON object")
    return header, 8 + n


def _tensor(path, name, info, buffer, start):
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise SafetensorsError(f"{path}: tensor '{name}' lacks dtype, shape or data_offsets")
    dtype = info["dtype"]
    if dtype not in _STORAGE:
        raise SafetensorsError(f"{path}: tensor '{name}' has dtype '{dtype}', not one of "
                               f"{', '.join(_STORAGE)}")
    begin, end = info["data_offsets"]
    storage = np.dtype(_STORAGE[dtype])
    count = int(np.prod(info["shape"], dtype=np.int64))
    if not 0 <= begin <= end <= len(buffer):
        raise SafetensorsError(f"{path}: tensor '{name}' spans bytes {start + begin}..{start + end}, "
                               f"past the end of the file ({start + len(buffer)} bytes)")
    if end - begin != count * storage.itemsize:
        raise SafetensorsError(f"{path}: tensor '{name}' at offset {start + begin} has "
                               f"{end - begin} bytes; {dtype} {info['shape']} needs "
                               f"{count * storage.itemsize}")
    values = np.frombuffer(buffer, dtype=storage, count=count, offset=begin)
    if dtype == "BF16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values.reshape(info["shape"]).copy()


def read(path):
    """The tensors of one .safetensors file with their stored dtypes and metadata."""
    with open(path, "rb") as f:
        data = f.read()
    header, start = _header(path, data)
    out = File(metadata=header.pop("__metadata__", None) or {}, data_start=start)
    buffer = memoryview(data)[start:]
    for name, info in header.items():
        out.tensors[name] = _tensor(path, name, info, buffer, start)
        out.dtypes[name] = info["dtype"]
    return out


def _index(path):
    """(folder, weight_map) of a sharded checkpoint (its folder or its index file), or None
    for a single file or a folder without an index."""
    if os.path.isfile(path) and path.endswith(".json"):
        folder, index = os.path.dirname(path), path
    elif os.path.isdir(path) and os.path.exists(os.path.join(path, INDEX_NAME)):
        folder, index = path, os.path.join(path, INDEX_NAME)
    else:
        return None
    try:
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise TypeError("weight_map is not an object of file names")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SafetensorsError(f"{index}: not a checkpoint index with a weight_map ({e})") from None
    return folder, weight_map


def shard_files(path):
    """The .safetensors files of a checkpoint: the file itself, or a folder's shards in the
    order of its index (or the folder's only .safetensors file)."""
    sharded = _index(path)
    if sharded is not None:
        folder, weight_map = sharded
        return [os.path.join(folder, f) for f in dict.fromkeys(weight_map.values())]
    if os.path.isdir(path):
        files = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
        if len(files) != 1:
            raise SafetensorsError(f"{path}: no {INDEX_NAME} and {len(files)} .safetensors "
                                   "files (want one)")
        return [os.path.join(path, files[0])]
    return [path]


def load(path):
    """{name: array} of a file, a sharded checkpoint folder or its index; BF16 as float32.
    A sharded checkpoint gives the tensors its index maps, each from the shard it names: a
    missing shard, or a tensor absent from its shard, raises naming both."""
    sharded = _index(path)
    if sharded is None:
        return read(shard_files(path)[0]).tensors
    folder, weight_map = sharded
    index, out = os.path.join(folder, INDEX_NAME) if os.path.isdir(path) else path, {}
    for file in dict.fromkeys(weight_map.values()):
        shard = os.path.join(folder, file)
        if not os.path.exists(shard):
            raise SafetensorsError(f"{shard}: missing shard (named by {index})")
        tensors = read(shard).tensors
        for name in (n for n, f in weight_map.items() if f == file):
            if name not in tensors:
                raise SafetensorsError(f"{shard}: no tensor '{name}' ({index} puts it there)")
            out[name] = tensors[name]
    return out


def _encode(name, array, dtype):
    array = np.ascontiguousarray(array)
    if dtype == "BF16":
        if array.dtype.kind != "f":
            raise SafetensorsError(f"tensor '{name}': BF16 needs a float array, not {array.dtype}")
        u = array.astype("<f4").view("<u4").astype(np.uint64)
        bits = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # nearest, ties to even
        nan = ((u & 0x7F800000) == 0x7F800000) & ((u & 0x007FFFFF) != 0)
        bits[nan] = (u[nan] >> 16) | 0x40  # NaN stays a (quiet) NaN
        return bits.astype("<u2").tobytes()
    if dtype is not None:
        return array.astype(_STORAGE[dtype]).tobytes()
    return array.astype(array.dtype.newbyteorder("<")).tobytes()


def save(path, tensors, metadata=None, dtypes=None):
    """Writes {name: array} to `path`. Each array keeps its own dtype unless `dtypes` names
    one: a string applies to every float tensor ("BF16", "F16", "F32"), a dict per name.
    BF16 rounds to nearest even. `metadata` is {str: str}."""
    header, offset, blobs = {"__metadata__": dict(metadata or {})}, 0, []
    for name, array in tensors.items():
        array = np.asarray(array)
        want = dtypes.get(name) if isinstance(dtypes, dict) else (
            dtypes if array.dtype.kind == "f" else None)
        if want is not None and want not in _STORAGE:
            raise SafetensorsError(f"tensor '{name}': unknown dtype '{want}'")
        code = want or _CODES.get(array.dtype.newbyteorder("<"))
        if code is None:
            raise SafetensorsError(f"tensor '{name}': numpy dtype {array.dtype} has no safetensors code")
        blob = _encode(name, array, want)
        header[name] = {"dtype": code, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # data 8-byte aligned, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main(argv):
    if len(argv) != 1:
        print("usage: python3 -m compatnets.safetensors FILE_OR_FOLDER", file=sys.stderr)
        return 2
    try:
        for f in shard_files(argv[0]):
            r = read(f)
            print(f"{f}: {len(r.tensors)} tensors, metadata {json.dumps(r.metadata)}")
            for name, t in r.tensors.items():
                lo, hi = (float(t.min()), float(t.max())) if t.size else (0.0, 0.0)
                print(f"  {name}  {r.dtypes[name]} {list(t.shape)}  min {lo:.6g} max {hi:.6g}")
    except (OSError, SafetensorsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
