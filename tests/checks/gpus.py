"""Checks of tests/e2e/gpus.sh: which rank ran each task and the devices its command saw."""
import json

import h5py


def _rows(out, table):
    with h5py.File(f"{out}/results.h5", "r") as f:
        g = f[table]
        return [(d.decode(), int(r), t.decode())
                for d, r, t in zip(g["devices"][()], g["rank"][()], g["threads"][()])]


def devices_by_rank(out, table, *expected):
    """Every task of `table` ran on one of the ranks named "RANK=DEVICES" and saw exactly
    that rank's DEVICES; every such rank ran some."""
    seen = devices_within(out, table, *expected)
    want = {e.split("=", 1)[0] for e in expected}
    assert seen == want, f"{table}: ranks {sorted(seen)} ran tasks, expected {sorted(want)}"


def devices_within(out, table, *expected):
    """Every task of `table` ran on one of the ranks named "RANK=DEVICES" and saw exactly
    that rank's DEVICES. Returns the ranks that ran some."""
    want = dict(e.split("=", 1) for e in expected)
    rows = _rows(out, table)
    seen = set()
    for devices, rank, threads in rows:
        assert str(rank) in want, f"{table}: a task ran on rank {rank}, expected {sorted(want)}"
        assert devices == want[str(rank)], f"{table}: rank {rank} saw {devices!r}"
        assert int(threads) >= 1, f"{table}: OMP_NUM_THREADS {threads!r}"
        seen.add(str(rank))
    assert rows, f"{table}: no rows"
    return seen


def facts_record_placement(out):
    """The ledger and /tasks give each task's host and the devices its command saw."""
    with open(f"{out}/ledger.jsonl") as f:
        records = {r["id"]: r for r in map(json.loads, f)}
    with h5py.File(f"{out}/results.h5", "r") as f:
        ids = [x.decode() for x in f["tasks/id"][()]]
        hosts = [x.decode() for x in f["tasks/host"][()]]
        devices = [x.decode() for x in f["tasks/devices"][()]]
        placement = json.loads(f["meta/placement"][()].decode())
        seen = {r: d.decode() for r, d in zip(f["one/rank"][()], f["one/devices"][()])}
    assert [p["devices"] for p in placement] == [["4"], ["5"]], placement
    assert all(p["source"] == "--devices" for p in placement), placement
    for i, host, dev in zip(ids, hosts, devices):
        r = records[i]
        assert host and r["host"] == host, (i, host, r)
        assert r["devices"] == dev == seen[r["rank"]], (i, dev, r)


def placed(out, group, *expected):
    """Every task of `group` ran on a host named in "HOST=DEVICES", with those devices in
    /tasks and in what its command saw; every entry was used."""
    want = [tuple(e.split("=", 1)) for e in expected]
    with h5py.File(f"{out}/results.h5", "r") as f:
        groups = [g.decode() for g in f["tasks/group"][()]]
        hosts = [h.decode() for h in f["tasks/host"][()]]
        devices = [d.decode() for d in f["tasks/devices"][()]]
        ids = [i.decode() for i in f["tasks/id"][()]]
        seen = dict(zip([i.decode() for i in f[f"{group}/task_id"][()]],
                        [d.decode() for d in f[f"{group}/devices"][()]]))
    used = set()
    for i, g, h, d in zip(ids, groups, hosts, devices):
        if g != group:
            continue
        assert (h, d) in want, f"{i} ran on {h} with devices {d!r}, expected one of {want}"
        assert seen[i] == d, f"{i}: /tasks says {d!r}, its command saw {seen[i]!r}"
        used.add((h, d))
    assert used == set(want), f"{group}: used {sorted(used)}, expected {sorted(want)}"


def own_devices(out):
    """Each rank read its devices from CUDA_VISIBLE_DEVICES as SLURM set them, and no two
    ranks hold the same device."""
    with h5py.File(f"{out}/results.h5", "r") as f:
        placement = json.loads(f["meta/placement"][()].decode())
    held = [d for p in placement for d in p["devices"]]
    assert len(held) == len(set(held)) == len(placement), placement
    assert all(p["source"] == "CUDA_VISIBLE_DEVICES" for p in placement), placement
