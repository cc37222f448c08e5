"""compatnets.serve: the protocol of a command server (ready, one reply per request), the
task's output in its log, and the exit codes of a returned value, sys.exit and an exception."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

SERVER = """
import sys
from compatnets.serve import serve
def handle(argv):
    print("task", argv)
    if argv[0] == "exit":
        sys.exit(int(argv[1]))
    if argv[0] == "raise":
        raise RuntimeError("boom")
    return int(argv[1])
serve(handle)
"""


class ServeTest(unittest.TestCase):
    def test_requests_replies_logs_and_exit_codes(self):
        ours, theirs = socket.socketpair()
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, COMPATBENCH_SERVER_FD=str(theirs.fileno()), PYTHONPATH=package)
        with tempfile.TemporaryDirectory() as d:
            proc = subprocess.Popen([sys.executable, "-c", SERVER], pass_fds=[theirs.fileno()],
                                    env=env, stdout=subprocess.DEVNULL)
            theirs.close()
            lines = ours.makefile("r")
            self.assertEqual(json.loads(lines.readline()), {"ready": True})
            codes = {}
            for i, argv in enumerate([["ok", "0"], ["ok", "4"], ["exit", "5"], ["raise"]]):
                log = os.path.join(d, f"{i}.log")
                request = {"id": f"t{i}", "argv": argv, "result": "", "workdir": d, "log": log,
                           "attempt": 1, "seed": 1}
                ours.sendall((json.dumps(request) + "\n").encode())
                reply = json.loads(lines.readline())
                self.assertEqual(reply["id"], f"t{i}")
                codes[argv[0] + argv[-1]] = reply["exit_code"]
                with open(log) as f:
                    self.assertIn(f"task {argv!r}", f.read())
            self.assertEqual(codes, {"ok0": 0, "ok4": 4, "exit5": 5, "raiseraise": 1})
            with open(os.path.join(d, "3.log")) as f:
                self.assertIn("RuntimeError: boom", f.read())
            lines.close()
            ours.close()  # the server ends when its socket closes
            self.assertEqual(proc.wait(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
