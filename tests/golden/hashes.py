#!/usr/bin/python3
"""The SHA-256 of every dataset of a results.h5 but the run facts (/meta, /tasks).

One line per dataset, sorted by path: `<sha256>  /<path>  <dtype> <shape>`. The bytes are
the dataset's values as stored, so two files hash alike exactly when `compatbench compare`
calls them identical.

    /usr/bin/python3 tests/golden/hashes.py RESULTS.h5
"""
import hashlib
import sys

import h5py


def hashes(path):
    lines = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or name.split("/")[0] in ("meta", "tasks"):
            return
        data = obj[()]
        digest = hashlib.sha256(data.tobytes()).hexdigest()
        lines.append(f"{digest}  /{name}  {data.dtype.str} {list(data.shape)}")

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return sorted(lines, key=lambda line: line.split("  ")[1])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("\n".join(hashes(sys.argv[1])))
