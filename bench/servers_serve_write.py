"""bench/servers.sh's server: a compatnets.serve server whose tasks only write {"ok": 1} to
their result file (the last argument); with `torch`, it imports PyTorch first.

    PYTHONPATH=python /usr/bin/python3 bench/servers_serve_write.py bare|torch
"""
import json, sys
if sys.argv[1:] == ["torch"]:
    import torch  # noqa: F401
from compatnets.serve import serve
def handle(argv):
    with open(argv[-1], "w") as f:
        json.dump({"ok": 1}, f)
    return 0
serve(handle)
