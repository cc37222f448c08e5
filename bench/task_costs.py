"""Per-group task costs and study cost ratios of a results file.

  task_costs.py RESULTS.h5 [GROUP...]
      prints, per task group, tasks, summed seconds, the 50th, 90th and 100th percentile of
      a task's seconds and the group's span (first start to last end); the span of the given
      GROUPs together; then every /meta/<study>/cost table.
"""
import collections
import sys

import h5py
import numpy as np


def main():
    f = h5py.File(sys.argv[1], "r")
    t = f["tasks"]
    by = collections.OrderedDict()
    for group, start, seconds in zip(t["group"][:], t["start"][:], t["duration"][:]):
        by.setdefault(group.decode(), []).append((start, seconds))
    print(f"{'group':<16}{'tasks':>7}{'sum s':>10}{'p50 s':>9}{'p90 s':>9}{'max s':>9}{'span s':>9}")
    for group, rows in by.items():
        v = np.asarray([d for _, d in rows])
        span = max(s + d for s, d in rows) - min(s for s, _ in rows)
        print(f"{group:<16}{len(v):>7}{v.sum():>10.2f}{np.percentile(v, 50):>9.3f}"
              f"{np.percentile(v, 90):>9.3f}{v.max():>9.3f}{span:>9.2f}")
    if len(sys.argv) > 2:
        rows = [r for g in sys.argv[2:] for r in by.get(g, [])]
        span = max(s + d for s, d in rows) - min(s for s, _ in rows)
        print(f"span of {' + '.join(sys.argv[2:])}: {span:.2f} s wall ({len(rows)} tasks)")
    for study, g in f["meta"].items():
        if isinstance(g, h5py.Group) and "cost" in g:
            c = g["cost"]
            print(f"/meta/{study}/cost: " + ", ".join(
                f"{q.decode()} {v:.4g}" for q, v in zip(c["quantity"][:], c["value"][:])))


if __name__ == "__main__":
    main()
