"""A shrinking list of known exceptions, shared by tests/layers.py and tests/sizes.py.

check() compares what a check found with the list in tests/<list_name>: it fails on a
finding that is not listed, and on a listed one that is gone (the list only shrinks)."""
import os
import sys


def source_root():
    return sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))


def check(root, list_name, found, new_label, gone_label, summary):
    """found: {finding: detail}; prints and exits 1 on any difference from the list."""
    path = os.path.join(root, "tests", list_name)
    known = {line.strip() for line in open(path, encoding="utf-8")
             if line.strip() and not line.startswith("#")}
    new = sorted(k for k in found if k not in known)
    gone = sorted(k for k in known if k not in found)
    for k in new:
        print(f"{new_label}: {k}" + (f" ({found[k]})" if found[k] else ""))
    for k in gone:
        print(f"{gone_label}, take it off tests/{list_name}: {k}")
    if new or gone:
        sys.exit(1)
    print(f"{summary} ({len(known)} known, listed in tests/{list_name})")
