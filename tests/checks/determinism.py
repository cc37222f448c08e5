"""Checks of tests/e2e/determinism.sh, run as: python3 -m checks determinism FUNCTION ARGS..."""


def every_rank_worked(*args):
    argv = ["-", *args]
    import h5py, sys
    f = h5py.File(argv[1], "r")
    ranks = set(f["tasks/rank"][:].tolist())
    assert ranks == set(range(int(argv[2]))), f"not every rank ran tasks: {ranks}"
    assert all(s == b"done" for s in f["tasks/status"][:]), "not every task done"
    assert list(f["flaky/attempt"][:]) == [2] * 5, "flaky tasks should succeed on attempt 2"
    assert f["dag/analysis/correlations/n"][0] == 100
