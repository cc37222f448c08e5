"""Checks of tests/e2e/command_tasks.sh, run as: python3 -m checks command_tasks FUNCTION ARGS..."""


def failed_rows_keep_their_keys(*args):
    argv = ["-", *args]
    import h5py, json, sys, collections
    out = argv[1]
    f = h5py.File(out + "/results.h5", "r")
    status = dict(zip([s.decode() for s in f["tasks/id"][:]], [s.decode() for s in f["tasks/status"][:]]))
    want = {"flaky/1": "done", "flaky/2": "done", "flaky/3": "done", "slow": "failed",
            "broken": "failed", "after_broken/0": "skipped", "after_broken/1": "skipped",
            "after_flaky": "done"}
    assert status == want, status
    assert list(f["flaky/square"][:]) == [1, 4, 9]
    assert list(f["flaky/attempt"][:]) == [2, 2, 2]
    errors = dict(zip([s.decode() for s in f["tasks/id"][:]], [s.decode() for s in f["tasks/error"][:]]))
    assert "timed out" in errors["slow"], errors["slow"]
    assert "exit code 4" in errors["broken"], errors["broken"]
    assert "dependency broken failed" in errors["after_broken/0"]
    assert f["meta/status"][()] == b"failed"
    # A row of a task that did not finish keeps its keys; only its outputs are blank.
    assert [s.decode() for s in f["after_broken/task_id"][:]] == ["after_broken/0", "after_broken/1"]
    assert f["broken/task_id"][0] == b"broken" and f["broken/seed"][0] != 2**64 - 1
    lines = [json.loads(l) for l in open(out + "/ledger.jsonl")]
    attempts = collections.Counter(r["id"] for r in lines)
    assert attempts["broken"] == 3 and attempts["slow"] == 1 and attempts["flaky/1"] == 2, attempts
    log = open(out + "/logs/tasks/" + [p for p in __import__("os").listdir(out + "/logs/tasks") if p.startswith("flaky_1")][0]).read()
    assert "first try fails" in log
    print("statuses, retries, timeout, skips and logs as expected")


def resume_reruns_only_the_failed(*args):
    argv = ["-", *args]
    import json, sys, collections
    done = collections.Counter(r["id"] for r in map(json.loads, open(argv[1])) if r["status"] == "done")
    assert all(c == 1 for c in done.values()), done
    attempts = [r["attempt"] for r in map(json.loads, open(argv[1])) if r["id"] == "broken"]
    assert attempts == [1, 2, 3, 4, 5, 6], attempts
