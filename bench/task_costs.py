"""Per-group task costs and study cost ratios of a results file.

  task_costs.py RESULTS.h5   prints, per task group, tasks, summed seconds and the 50th,
                             90th and 100th percentile of a task's seconds; then every
                             /meta/<study>/cost table.
"""
import collections
import sys

import h5py
import numpy as np


def main():
    f = h5py.File(sys.argv[1], "r")
    t = f["tasks"]
    by = collections.OrderedDict()
    for group, seconds in zip(t["group"][:], t["duration"][:]):
        by.setdefault(group.decode(), []).append(seconds)
    print(f"{'group':<16}{'tasks':>7}{'sum s':>10}{'p50 s':>9}{'p90 s':>9}{'max s':>9}")
    for group, v in by.items():
        v = np.asarray(v)
        print(f"{group:<16}{len(v):>7}{v.sum():>10.2f}{np.percentile(v, 50):>9.3f}"
              f"{np.percentile(v, 90):>9.3f}{v.max():>9.3f}")
    for study, g in f["meta"].items():
        if isinstance(g, h5py.Group) and "cost" in g:
            c = g["cost"]
            print(f"/meta/{study}/cost: " + ", ".join(
                f"{q.decode()} {v:.4g}" for q, v in zip(c["quantity"][:], c["value"][:])))


if __name__ == "__main__":
    main()
