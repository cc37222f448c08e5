"""bench/across_isa.sh's comparison: every dataset outside /meta and /tasks of each build's
results.h5 against the first build's: how many are byte-identical, and the float datasets that
differ, the largest differences first (absolute, and relative to the larger magnitude).

    /usr/bin/python3 bench/across_isa_diff.py WORK BUILD...   (WORK/BUILD/results.h5 each)
"""
import sys
import h5py
import numpy as np
work, builds = sys.argv[1], sys.argv[2:]
def datasets(f):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset)
                 and not n.startswith(("meta", "tasks")) else None)
    return out
ref = datasets(h5py.File(f"{work}/{builds[0]}/results.h5", "r"))
print(f"reference: {builds[0]} ({len(ref)} datasets)")
for b in builds[1:]:
    other = datasets(h5py.File(f"{work}/{b}/results.h5", "r"))
    def equal(a, b):
        return a.tobytes() == b.tobytes() if isinstance(a, np.ndarray) else a == b
    same = sum(1 for k in ref if k in other and equal(ref[k], other[k]))
    print(f"{b}: {same}/{len(ref)} datasets byte-identical")
    rows = []
    for k, a in ref.items():
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or k not in other:
            continue
        x, y = a.astype(float), other[k].astype(float)
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.any() or np.array_equal(x[ok], y[ok]):
            continue
        d = np.abs(x[ok] - y[ok])
        rel = d / np.maximum(np.maximum(np.abs(x[ok]), np.abs(y[ok])), 1e-6)
        i = int(np.argmax(rel))
        rows.append((rel[i], d.max(), k, x[ok][i], y[ok][i]))
    rows.sort(reverse=True)
    small = sum(1 for r in rows if r[0] <= 1e-4)
    print(f"  {len(rows)} float datasets differ; {small} of them by at most 1e-4 relative "
          f"(elementwise, |a-b| / max(|a|, |b|, 1e-6)). The largest:")
    for rel, d, k, u, v in rows[:8]:
        print(f"  {rel:9.3g} rel  {d:9.3g} abs  /{k}: {u:.6g} vs {v:.6g}")
