"""IDX files (the MNIST family's format), plain or gzip-compressed, read with numpy.

An IDX file is 2 zero bytes, a type byte (0x08 unsigned byte, 0x09 signed byte, 0x0B
int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of dimensions, each dimension
as a big-endian uint32, then the values, big-endian, row-major.
"""
import gzip
import os

import numpy as np

_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxError(ValueError):
    """A missing or malformed IDX file: the message names the file and the reason."""


def _bytes(path):
    if not os.path.exists(path):
        raise IdxError(f"{path}: not found")
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (EOFError, gzip.BadGzipFile, OSError) as e:
        raise IdxError(f"{path}: cannot be read as {'gzip' if opener is gzip.open else 'a file'}"
                       f" ({e}); the file is truncated or damaged") from None


def read_idx(path):
    """The array an IDX file holds, in native byte order."""
    data = _bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _TYPES:
        raise IdxError(f"{path}: bytes 0..3 are not an IDX magic number (00 00 type ndim)")
    ndim, dtype = data[3], np.dtype(_TYPES[data[2]])
    start = 4 + 4 * ndim
    if len(data) < start:
        raise IdxError(f"{path}: the file ends at byte {len(data)}, inside the {ndim} dimensions")
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, 4))
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) - start != need:
        raise IdxError(f"{path}: {len(data) - start} bytes of values from offset {start}; "
                       f"shape {list(shape)} needs {need} (truncated or padded)")
    return np.frombuffer(data, dtype, offset=start).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path, array):
    """Writes `array` (uint8, int32, float32, ...) as an IDX file, gzip-compressed when the
    name ends in .gz (for tests and for small datasets of one's own)."""
    array = np.asarray(array)
    code = {np.dtype(v).newbyteorder("="): k for k, v in _TYPES.items()}[array.dtype]
    head = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    body = array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(head + body)
