#!/usr/bin/env bash
# Long-lived command servers against a process per task (docs/servers.md), back to back on
# this machine, 2 ranks:
#   1. per-task overhead: 40 tasks that only write their result, spawned as
#      `python3 -c ...` and served by a compatnets.serve server, with bare Python and with
#      Python that imports PyTorch;
#   2. CONFIG (default configs/real-smoke.yaml) run with its servers, then with a fresh
#      server for every task (`runner.servers: per_task`, the cost of a process per task):
#      wall time, and the mean time of a task of each served group;
#   3. the PyTorch evaluation alone, as the K-way merges run it (compatnets.finetune
#      evaluate of K = 3 fine-tunes, each backbone's first fine-tune standing in for the
#      merge), spawned and served, on the real library that step 2 trained.
#   bash bench/servers.sh [CONFIG] [LIBRARY]   (build first; with LIBRARY, the `real` folder
#                                              of an earlier run, only steps 1 and 3 run)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CONFIG=$(realpath "${1:-$ROOT/configs/real-smoke.yaml}")
LIBRARY=${2:-}
WORK=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT

# 1. Per-task overhead.
cat > "$WORK/serve_write.py" <<'PY'
import json, sys
if sys.argv[1:] == ["torch"]:
    import torch  # noqa: F401
sys.path.insert(0, sys.argv[2])
from compatnets.serve import serve
def handle(argv):
    with open(argv[-1], "w") as f:
        json.dump({"ok": 1}, f)
    return 0
serve(handle)
PY
{
  echo "experiment: {name: bench-servers, seed: 1}"
  echo "tasks:"
  prev=""
  for variant in bare torch; do
    imports="import json,sys"; [[ $variant == torch ]] && imports="import json,sys,torch"
    cat <<YAML
  - name: spawned_$variant
    kind: command
    count: 40
    ${prev:+after: [$prev]}
    command: >-
      $PY -c '$imports; json.dump({{"ok": 1}}, open(sys.argv[1], "w"))' {result}
    outputs: {ok: int}
  - name: served_$variant
    kind: command
    count: 40
    after: [spawned_$variant]
    server: exec $PY $WORK/serve_write.py $variant $ROOT/python
    command: write {result}
    outputs: {ok: int}
YAML
    prev=served_$variant
  done
} > "$WORK/overhead.yaml"
mpirun -n 2 "$BIN" run "$WORK/overhead.yaml" --out "$WORK/overhead" --log-level warn > /dev/null
echo "== per-task overhead: 40 tasks each, 2 ranks (mean seconds per task, from /tasks) =="
"$PY" - "$WORK/overhead/results.h5" <<'PY'
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
groups = np.array([g.decode() for g in f["tasks/group"][()]])
secs = f["tasks/duration"][()]
mean = {g: secs[groups == g].mean() for g in set(groups)}
for v in ("bare", "torch"):
    s, p = mean[f"served_{v}"], mean[f"spawned_{v}"]
    print(f"{v:>5}: spawned {p * 1e3:8.1f} ms   served {s * 1e3:8.1f} ms   served/spawned {s / p:6.3f}")
PY

# 2. CONFIG with servers, then with a fresh server per task (not when LIBRARY is given).
run() {  # CONFIG OUT: prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -n 2 "$BIN" run "$1" --out "$2" --log-level warn > "$2.log" 2>&1 || { tail -20 "$2.log"; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
if [[ -z $LIBRARY ]]; then
COPY=$(copy_config "$CONFIG" "$WORK/config")
NAME=$(basename "$CONFIG")
sed '1i runner: {servers: per_task}' "$COPY" > "$WORK/config/per_task.$NAME"
echo
echo "== $NAME on 2 ranks: servers, then a process per task =="
served=$(run "$WORK/config/$NAME" "$WORK/served")
spawned=$(run "$WORK/config/per_task.$NAME" "$WORK/per_task")
"$BIN" compare "$WORK/served/results.h5" "$WORK/per_task/results.h5" > /dev/null &&
  echo "results: identical" || echo "results: DIFFER"
"$PY" - "$WORK/served/results.h5" "$WORK/per_task/results.h5" "$served" "$spawned" "$WORK/config/$NAME" <<'PY'
import re, sys
import h5py
import numpy as np
def means(path):
    f = h5py.File(path, "r")
    groups = np.array([g.decode() for g in f["tasks/group"][()]])
    secs = f["tasks/duration"][()]
    return {g: (secs[groups == g].mean(), int((groups == g).sum())) for g in set(groups)}
served, spawned = means(sys.argv[1]), means(sys.argv[2])
text = open(sys.argv[5]).read()
names = re.findall(r"- name: (\S+)\n(?:(?!  - name:).*\n)*?    server:", text)
print(f"{'group':<16} {'tasks':>5} {'spawned s':>10} {'served s':>10} {'served/spawned':>15}")
for g in names:
    (s, n), (p, _) = served[g], spawned[g]
    print(f"{g:<16} {n:5d} {p:10.3f} {s:10.3f} {s / p:15.3f}")
ws, wp = float(sys.argv[3]), float(sys.argv[4])
print(f"wall: a process per task {wp:.1f} s, servers {ws:.1f} s: servers/per-task {ws / wp:.3f}")
PY
LIBRARY=$WORK/served/real
fi

# 3. The evaluation alone.
"$PY" - "$LIBRARY" "$ROOT/python" > "$WORK/evaluate.yaml" <<'PY'
import os, sys
lib, python = sys.argv[1], sys.argv[2]
fts = sorted(f[:-12] for f in os.listdir(f"{lib}/finetunes") if f.endswith(".safetensors") and "@" not in f)
backbones = sorted({f.rsplit("_", 1)[0] for f in fts})
args = {}
for b in backbones:
    mine = [f for f in fts if f.rsplit("_", 1)[0] == b][:3]
    tasks = " ".join(f.rsplit("_", 1)[1] for f in mine)
    args[b] = (f"compatnets.finetune evaluate --checkpoint {lib}/finetunes/{mine[0]}.safetensors "
               f"--base {lib}/models/{b}.safetensors --finetuned "
               + " ".join(f"{lib}/finetunes/{m}.safetensors" for m in mine)
               + f" --tasks {tasks} --data {lib}/data --models {lib} --out {{result}}")
print("experiment: {name: bench-evaluate, seed: 1}\ntasks:")
for b, a in args.items():
    for way in ("spawned", "served"):
        print(f"  - name: {way}_{b}\n    kind: command\n    grid: {{rep: {{range: [0, 10]}}}}")
        if way == "served":
            print(f"    after: [spawned_{b}]\n    server: cd {python} && exec /usr/bin/python3 -m compatnets.serve")
            print(f"    command: {a}")
        else:
            print(f"    command: cd {python} && /usr/bin/python3 -m {a}")
        print("    outputs: {acc_1: float}")
PY
mpirun -n 2 "$BIN" run "$WORK/evaluate.yaml" --out "$WORK/evaluate" --log-level warn > /dev/null
echo
echo "== the evaluation alone (compatnets.finetune evaluate, K = 3), 10 per backbone, 2 ranks =="
"$PY" - "$WORK/evaluate/results.h5" <<'PY'
import sys
import h5py
import numpy as np
f = h5py.File(sys.argv[1], "r")
groups = np.array([g.decode() for g in f["tasks/group"][()]])
secs = f["tasks/duration"][()]
total = {"spawned": 0.0, "served": 0.0}
for g in sorted({g.split("_", 1)[1] for g in groups}):
    p, s = secs[groups == f"spawned_{g}"].mean(), secs[groups == f"served_{g}"].mean()
    total["spawned"] += p
    total["served"] += s
    print(f"{g:<12} spawned {p:7.3f} s   served {s:7.3f} s   served/spawned {s / p:6.3f}")
print(f"{'all':<12} spawned {total['spawned']:7.3f} s   served {total['served']:7.3f} s   "
      f"served/spawned {total['served'] / total['spawned']:6.3f}")
PY
