"""Reading a compatbench results file from Python: every table of results.h5 as columns
(a dict of numpy arrays, what pandas.DataFrame(...) takes), strings decoded.

    /usr/bin/python3 examples/read_results.py results/default/results.h5

prints the tables the file holds and the alignment study's correlation table.
"""
import sys

import h5py
import numpy as np


def tables(f):
    """{'/alignment/analysis/correlations': {column: array}, ...} for every table group."""
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Group):
            cols = {k: d for k, d in obj.items() if isinstance(d, h5py.Dataset) and d.ndim == 1}
            if cols:
                out["/" + name] = {k: read(d) for k, d in cols.items()}
    f.visititems(visit)
    return out


def read(dataset):
    v = dataset[()]
    if v.dtype.kind == "S":  # fixed-length strings: null-padded bytes
        return np.array([x.decode() for x in v])
    return v


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "results/default/results.h5"
    with h5py.File(path, "r") as f:
        t = tables(f)
    for name, cols in sorted(t.items()):
        rows = len(next(iter(cols.values())))
        print(f"{name}: {rows} rows, columns {', '.join(sorted(cols))}")
    corr = t.get("/alignment/analysis/correlations")
    if corr is None:
        sys.exit(f"{path}: no alignment study")
    # With pandas installed: pandas.DataFrame(corr)
    print("\nalignment correlations")
    print(f"{'predictor':>10} {'target':>10} {'n':>4} {'pearson_r':>10} {'pearson_p':>10} {'spearman_rho':>12}")
    for i in range(len(corr["predictor"])):
        print(f"{corr['predictor'][i]:>10} {corr['target'][i]:>10} {corr['n'][i]:>4} "
              f"{corr['pearson_r'][i]:>10.4f} {corr['pearson_p'][i]:>10.3g} {corr['spearman_rho'][i]:>12.4f}")


if __name__ == "__main__":
    main()
