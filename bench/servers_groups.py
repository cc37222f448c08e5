"""bench/servers.sh, step 2: per served group of CONFIG, its tasks' mean seconds with servers
(SERVED) and with a process per task (PER_TASK), and the two runs' wall seconds.

    /usr/bin/python3 bench/servers_groups.py SERVED_H5 PER_TASK_H5 SERVED_S PER_TASK_S CONFIG
"""
import re, sys
import h5py
import numpy as np
def means(path):
    f = h5py.File(path, "r")
    groups = np.array([g.decode() for g in f["tasks/group"][()]])
    secs = f["tasks/duration"][()]
    return {g: (secs[groups == g].mean(), int((groups == g).sum())) for g in set(groups)}
served, spawned = means(sys.argv[1]), means(sys.argv[2])
text = open(sys.argv[5]).read()
names = re.findall(r"- name: (\S+)\n(?:(?!  - name:).*\n)*?    server:", text)
print(f"{'group':<16} {'tasks':>5} {'spawned s':>10} {'served s':>10} {'served/spawned':>15}")
for g in names:
    (s, n), (p, _) = served[g], spawned[g]
    print(f"{g:<16} {n:5d} {p:10.3f} {s:10.3f} {s / p:15.3f}")
ws, wp = float(sys.argv[3]), float(sys.argv[4])
print(f"wall: a process per task {wp:.1f} s, servers {ws:.1f} s: servers/per-task {ws / wp:.3f}")
