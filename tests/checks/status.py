"""Checks of tests/e2e/status.sh, run as: python3 -m checks status FUNCTION ARGS..."""


def live_status(*args):
    argv = ["-", *args]
    import json, sys
    r = json.load(open(argv[1]))
    assert r["live"] and r["state"] == "running", r["state"]
    assert r["experiment"] == "status" and r["ranks"] == 2, r
    groups = {g["group"]: g for g in r["groups"]}
    assert sum(g["tasks"] for g in groups.values()) == 52, groups
    for g in groups.values():
        assert g["done"] + g["failed"] + g["skipped"] + g["running"] + g["pending"] == g["tasks"], g
    assert groups["slow"]["done"] < 8, groups["slow"]
    assert r["running"], "no running tasks while the slow group runs"
    for t in r["running"]:
        assert t["rank"] in (0, 1) and t["since"] <= r["now"], t
    assert 0 < r["eta_seconds"] < 60, r["eta_seconds"]
    print(f"live: {groups['slow']['done']} of 8 slow done, {len(r['running'])} running, ETA {r['eta_seconds']:.1f} s")


def finished_status(*args):
    argv = ["-", *args]
    import json, sys
    r = json.load(open(argv[1]))
    assert not r["live"] and r["state"] == "failed", r["state"]
    groups = {g["group"]: g for g in r["groups"]}
    assert groups["slow"]["done"] == 8 and groups["quick"]["done"] == 40, groups
    assert groups["broken"]["failed"] == 1 and groups["after_broken"]["skipped"] == 3, groups
    assert all(g["pending"] == 0 and g["running"] == 0 for g in groups.values()), groups
    err = r["errors"][-1]
    assert err["id"] == "broken" and "exit code 4" in err["error"] and "log: " in err["error"], err
    assert "disk full" in err["error"], err
    assert len(r["slowest"]) == 5 and r["slowest"][0]["seconds"] >= 0.9, r["slowest"]
    print("finished: counts from results.h5, the error with its log path, the slowest tasks")
