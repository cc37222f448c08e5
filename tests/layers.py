#!/usr/bin/python3
"""The layers, drawn from the includes alone, checked.

Rules (docs/architecture.md):
  - workloads/ includes nothing from runner/, and no <mpi.h> or <hdf5.h>;
  - within runner/, only comm/ (the MPI layer) includes <mpi.h>;
  - within workloads/, folders include each other without cycles;
  - within runner/, a folder includes only folders below it in
        core < comm < config < store < kind < catalog < commands < tasks, analyses
          < experiment < graph < exec < app
    (tasks and analyses are one level: they may not include each other).

Known breaches still to be undone are listed in tests/layers_known.txt, one per line as
`file -> included folder`. The check fails on a breach that is not listed, and on a listed
one that is gone (take it off the list: the list only shrinks).

    /usr/bin/python3 tests/layers.py SOURCE_DIR
"""
import os
import re
import sys

from ratchet import check, source_root

RUNNER_ORDER = {"core": 0, "comm": 1, "config": 2, "store": 3, "kind": 4, "catalog": 5,
                "commands": 6, "tasks": 7, "analyses": 7, "experiment": 8, "graph": 9, "exec": 10,
                "app": 11}
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)


def sources(root, top):
    for base, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith((".h", ".cpp")):
                path = os.path.join(base, f)
                yield os.path.relpath(path, root), open(path, encoding="utf-8").read()


def folder_of(include, runner_dirs, workload_dirs):
    head = include.split("/")[0]
    if "/" not in include:
        return None
    if head in runner_dirs:
        return "runner/" + head
    if head in workload_dirs:
        return "workloads/" + head
    return None


def breaches(root):
    runner_dirs = {d for d in os.listdir(os.path.join(root, "runner"))
                   if os.path.isdir(os.path.join(root, "runner", d))}
    workload_dirs = {d for d in os.listdir(os.path.join(root, "workloads"))
                     if os.path.isdir(os.path.join(root, "workloads", d))}
    unknown = runner_dirs - RUNNER_ORDER.keys()
    if unknown:
        sys.exit(f"tests/layers.py: runner/{sorted(unknown)[0]} has no place in the layer order")
    found, edges = set(), {}
    for top in ("runner", "workloads"):
        for path, text in sources(root, top):
            here = path.split("/")[1]
            for inc in INCLUDE.findall(text):
                if top == "workloads" and inc in ("mpi.h", "hdf5.h"):
                    found.add(f"{path} -> <{inc}>")
                if top == "runner" and here != "comm" and inc == "mpi.h":
                    found.add(f"{path} -> <{inc}>")
                there = folder_of(inc, runner_dirs, workload_dirs)
                if there is None or there == f"{top}/{here}":
                    continue
                t_top, t_dir = there.split("/")
                if top == "workloads":
                    if t_top == "runner":
                        found.add(f"{path} -> {there}")
                    else:
                        edges.setdefault(here, {}).setdefault(t_dir, path)
                elif t_top == "runner" and RUNNER_ORDER[t_dir] >= RUNNER_ORDER[here]:
                    found.add(f"{path} -> {there}")
    # Cycles among workloads folders: an edge both ways.
    for a, targets in edges.items():
        for b, path in targets.items():
            if a in edges.get(b, {}):
                found.add(f"{path} -> workloads/{b}")
    return found


def main():
    root = source_root()
    check(root, "layers_known.txt", dict.fromkeys(breaches(root), ""), "layer breach", "undone",
          "layers: no new breach")


if __name__ == "__main__":
    main()
