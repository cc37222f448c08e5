"""Checks of tests/e2e/servers.sh: the README's server example, served."""
import glob

import h5py


def readme_example(out):
    """Each score is twice its checkpoint's length; each rank's tasks ran in one process,
    whose log of each task names the rank's own device."""
    with h5py.File(f"{out}/results.h5", "r") as f:
        t = f["score"]
        rows = list(zip([c.decode() for c in t["checkpoint"][()]], t["score"][()], t["pid"][()]))
        by_task = {i.decode(): (int(r), d.decode())
                   for i, r, d in zip(f["tasks/id"][()], f["tasks/rank"][()], f["tasks/devices"][()])}
    assert len(rows) == 4, rows
    for checkpoint, score, _ in rows:
        assert score == 2.0 * len(checkpoint), (checkpoint, score)
    pids = {pid for _, _, pid in rows}
    ranks = {rank for rank, _ in by_task.values()}
    assert len(pids) == len(ranks), f"{len(pids)} server processes for ranks {ranks}"
    for task, (rank, device) in by_task.items():
        assert device == str(rank), (task, rank, device)
        log = open(glob.glob(f"{out}/logs/tasks/{task.replace('/', '_')}*.log")[0]).read()
        assert f"on {device}" in log, log
