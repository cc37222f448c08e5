"""Checks of tests/e2e/lib.sh, run as: python3 -m checks common FUNCTION ARGS..."""


def ledger_done_once(*args):
    argv = ["-", *args]
    import json, sys, collections
    done = collections.Counter()
    for n, line in enumerate(open(argv[1]), 1):
        r = json.loads(line)
        if r["status"] == "done":
            done[r["id"]] += 1
    twice = [i for i, c in done.items() if c > 1]
    if twice:
        sys.exit(f"tasks done more than once: {twice[:5]}")
    if len(done) != int(argv[2]):
        sys.exit(f"{len(done)} tasks done in the ledger, want {argv[2]}")
    print(f"ledger: {len(done)} tasks, each done exactly once")
