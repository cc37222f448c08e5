#!/usr/bin/env bash
# The progress ETA against the truth. Runs CONFIG on RANKS ranks with a progress line every
# 2 s (runner.progress_interval, not part of the config hash), then compares the ETA of each
# line with the time the run really took from that line to its end. While a group with tasks
# left has no measured task, the ETA is a range (exec/cost_model.h); the targets, from 10% of
# the tasks onward: the true time left within the range shown, and the point estimate within
# ±35%. While the run goes on, `compatbench status` is asked from outside it, as a user on a
# login node would. The config runs twice, each time in a fresh output folder, with one cost
# cache of its own (exec/cost_cache.h): cold (the cache empty, as a first run) and warm (the
# costs of the first run remembered, as a rerun with another seed or folder would have).
#   bash bench/eta.sh [CONFIG] [RANKS]     (build first; default configs/default.yaml, 2)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CONFIG=${1:-$ROOT/configs/default.yaml}
RANKS=${2:-2}
WORK=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT

# The same experiment (same hash), with a progress line every 2 s.
COPY=$(copy_config "$CONFIG" "$WORK/config")
"$PY" "$ROOT/bench/eta_config.py" "$COPY" "$WORK/config/config.yaml"
"$BIN" validate "$WORK/config/config.yaml" > /dev/null
export COMPATBENCH_COST_CACHE=$WORK/costs.json
for run in cold warm; do
  mpirun -n "$RANKS" "$BIN" run "$WORK/config/config.yaml" --out "$WORK/$run" > "$WORK/$run.log" 2>&1 &
  RUN=$!
  sleep 20
  echo "== $run run: compatbench status, 20 s into the run, from outside it =="
  "$BIN" status "$WORK/$run" | head -n 40 || true
  wait "$RUN" || true
  echo
  echo "== $run run =="
  "$PY" "$ROOT/bench/eta_score.py" "$WORK/$run.log"
  echo
done
