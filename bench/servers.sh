#!/usr/bin/env bash
# Long-lived command servers against a process per task (docs/servers.md), back to back on
# this machine, 2 ranks:
#   1. per-task overhead: 40 tasks that only write their result, spawned as
#      `python3 -c ...` and served by a compatnets.serve server, with bare Python and with
#      Python that imports PyTorch;
#   2. CONFIG (default configs/real-smoke.yaml) run with its servers, then with a fresh
#      server for every task (`runner.servers: per_task`, the cost of a process per task):
#      wall time, and the mean time of a task of each served group.
#   bash bench/servers.sh [CONFIG]      (build first; CONFIG's sibling files are copied too)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
CONFIG=$(realpath "${1:-$ROOT/configs/real-smoke.yaml}")
PY=/usr/bin/python3
WORK=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

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

# 2. CONFIG with servers, then with a fresh server per task.
mkdir -p "$WORK/config"
cp "$(dirname "$CONFIG")"/*.yaml "$WORK/config/"
NAME=$(basename "$CONFIG")
sed -i "s|{config_dir}/../python|$ROOT/python|g" "$WORK/config/$NAME"
sed '1i runner: {servers: per_task}' "$WORK/config/$NAME" > "$WORK/config/per_task.$NAME"
run() {  # CONFIG OUT: prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -n 2 "$BIN" run "$1" --out "$2" --log-level warn > "$2.log" 2>&1 || { tail -20 "$2.log"; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
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
