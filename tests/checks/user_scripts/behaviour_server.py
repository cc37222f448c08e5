"""A command server for the tests of served tasks (commands/command_server.h): each task's
arguments say what to do, and its result says which process ran it.

    ok N         write {"pid": <this process>, "n": N, "devices": $CUDA_VISIBLE_DEVICES}
    fail N       print to stderr and exit with code N
    crash N      end the whole process with code N, mid-task
    forkdie N    fork a child that sleeps 30 s holding the socket, then end with code N
    sleep S      sleep S seconds, then as ok
    raise        raise an exception
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from compatnets.serve import serve  # noqa: E402


def handle(argv):
    what, arg, result = argv[0], argv[1] if len(argv) > 1 else "0", argv[-1]
    print(f"task {what} {arg}")
    if what == "fail":
        print("failing on purpose", file=sys.stderr)
        return int(arg)
    if what == "crash":
        os._exit(int(arg))
    if what == "forkdie":
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        os._exit(int(arg))
    if what == "raise":
        raise ValueError("raised on purpose")
    if what == "sleep":
        time.sleep(float(arg))
    with open(result, "w") as f:
        json.dump({"pid": os.getpid(), "n": int(float(arg)),
                   "devices": os.environ.get("CUDA_VISIBLE_DEVICES", "unset")}, f)
    return 0


if __name__ == "__main__":
    serve(handle)
