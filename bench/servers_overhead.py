"""bench/servers.sh, step 1: the mean seconds of a task spawned and served, bare Python and
with PyTorch, from the run's /tasks.

    /usr/bin/python3 bench/servers_overhead.py RESULTS_H5
"""
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
groups = np.array([g.decode() for g in f["tasks/group"][()]])
secs = f["tasks/duration"][()]
mean = {g: secs[groups == g].mean() for g in set(groups)}
for v in ("bare", "torch"):
    s, p = mean[f"served_{v}"], mean[f"spawned_{v}"]
    print(f"{v:>5}: spawned {p * 1e3:8.1f} ms   served {s * 1e3:8.1f} ms   served/spawned {s / p:6.3f}")
