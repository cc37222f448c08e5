#!/usr/bin/env bash
# The main job's wall time on 2 ranks (configs/default.yaml: the model library and the
# studies on it), the task cost of every group (sum and percentiles, from /tasks) and each
# study's predictor-vs-ground-truth cost (/meta/<study>/cost).
#   bash bench/default_run.sh [CONFIG]   (build first)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIG=${1:-$ROOT/configs/default.yaml}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
t0=$(date +%s%N)
mpirun -n 2 "$ROOT/build/release/runner/compatbench" run "$CONFIG" --out "$OUT/run" --log-level warn > "$OUT/log" 2>&1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
printf 'wall: %.1f s on 2 ranks\n' "$(echo "$ms" | awk '{print $1/1000}')"
/usr/bin/python3 "$ROOT/bench/task_costs.py" "$OUT/run/results.h5"
