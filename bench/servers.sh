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
    server: exec $PY $ROOT/bench/servers_serve_write.py $variant
    command: write {result}
    outputs: {ok: int}
YAML
    prev=served_$variant
  done
} > "$WORK/overhead.yaml"
mpirun -n 2 "$BIN" run "$WORK/overhead.yaml" --out "$WORK/overhead" --log-level warn > /dev/null
echo "== per-task overhead: 40 tasks each, 2 ranks (mean seconds per task, from /tasks) =="
"$PY" "$ROOT/bench/servers_overhead.py" "$WORK/overhead/results.h5"

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
"$PY" "$ROOT/bench/servers_groups.py" "$WORK/served/results.h5" "$WORK/per_task/results.h5" "$served" "$spawned" \
  "$WORK/config/$NAME"
LIBRARY=$WORK/served/real
fi

# 3. The evaluation alone.
"$PY" "$ROOT/bench/servers_evaluate_config.py" "$LIBRARY" "$ROOT/python" > "$WORK/evaluate.yaml"
mpirun -n 2 "$BIN" run "$WORK/evaluate.yaml" --out "$WORK/evaluate" --log-level warn > /dev/null
echo
echo "== the evaluation alone (compatnets.finetune evaluate, K = 3), 10 per backbone, 2 ranks =="
"$PY" "$ROOT/bench/servers_evaluate.py" "$WORK/evaluate/results.h5"
