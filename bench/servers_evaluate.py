"""bench/servers.sh, step 3: the evaluation's mean seconds per backbone, spawned and served,
from the run's /tasks.

    /usr/bin/python3 bench/servers_evaluate.py RESULTS_H5
"""
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
groups = np.array([g.decode() for g in f["tasks/group"][()]])
secs = f["tasks/duration"][()]
total = {"spawned": 0.0, "served": 0.0}
for g in sorted({g.split("_", 1)[1] for g in groups}):
    p, s = secs[groups == f"spawned_{g}"].mean(), secs[groups == f"served_{g}"].mean()
    total["spawned"] += p
    total["served"] += s
    print(f"{g:<12} spawned {p:7.3f} s   served {s:7.3f} s   served/spawned {s / p:6.3f}")
print(f"{'all':<12} spawned {total['spawned']:7.3f} s   served {total['served']:7.3f} s   "
      f"served/spawned {total['served'] / total['spawned']:6.3f}")
