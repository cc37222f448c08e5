"""A compatbench command server: one Python process that runs many tasks.

A task group with ``server:`` starts its server once per rank and sends it each task's
arguments (the group's ``command``, rendered as a list of words) instead of starting a
process per task, so that Python, PyTorch and whatever a task loads start once. A server
written with this module::

    import json, sys
    from compatnets.serve import serve

    def handle(argv):                    # one task: its arguments, as a command gets them
        out = argv[argv.index("--result") + 1]
        with open(out, "w") as f:        # the result file, as a command writes it
            json.dump({"n": len(argv)}, f)
        print("done", argv)              # goes to the task's own log
        return 0                         # the exit code: 0 is success

    serve(handle)

``python3 -m compatnets.serve`` serves any module with a ``main(argv)`` that returns an
exit code (all of this package's jobs): a task's first argument names the module
(``compatnets.finetune``), the rest are its command line.

The protocol (docs/servers.md): the runner hands the server a socket as descriptor
``COMPATBENCH_SERVER_FD``; the server says ``{"ready": true}``, then reads one JSON request
per line (``id``, ``argv``, ``result``, ``workdir``, ``log``, ``attempt``, ``seed``) and
replies ``{"id": ..., "exit_code": N}`` when the task is done. While a task runs, its
stdout and stderr go to the task's log. An exception is printed there and fails the task
(exit code 1); ``sys.exit(n)`` gives exit code n. The server ends when the socket closes.
"""
import contextlib
import importlib
import json
import os
import socket
import sys
import traceback


@contextlib.contextmanager
def _output_to(path):
    """stdout and stderr (Python's and the descriptors 1 and 2) appended to `path`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _exit_code(code):
    """What sys.exit(code) would make the process's exit code."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_task(handler, request):
    """Runs one request's task with its output in its log; returns its exit code."""
    with _output_to(request["log"]):
        try:
            return _exit_code(handler(list(request["argv"])))
        except SystemExit as e:
            return _exit_code(e.code)
        except Exception:  # the task fails; the server lives on
            traceback.print_exc()
            return 1


def serve(handler, fd=None):
    """Serves tasks to `handler(argv) -> exit code` until the runner closes the socket."""
    fd = int(os.environ["COMPATBENCH_SERVER_FD"]) if fd is None else fd
    sock = socket.socket(fileno=fd)
    requests = sock.makefile("r", encoding="utf-8")

    def reply(message):
        sock.sendall((json.dumps(message) + "\n").encode())

    reply({"ready": True})
    for line in requests:
        request = json.loads(line)
        reply({"id": request["id"], "exit_code": run_task(handler, request)})


def run_module(argv):
    """A task whose first argument names a module with main(argv): that main, on the rest."""
    if not argv:
        print("error: a served task needs a module name as its first argument", file=sys.stderr)
        return 2
    return importlib.import_module(argv[0]).main(argv[1:])


if __name__ == "__main__":
    serve(run_module)
