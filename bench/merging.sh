#!/usr/bin/env bash
# The 392-merge grid of configs/default.yaml on 2 ranks, once the model library is built:
# runs the default config without the alignment study and prints the merging stage's wall
# time (first merge_knn task's start to the last merge's end) against the 5-minute budget,
# with every group's task-cost percentiles.
#   bash bench/merging.sh   (build first)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
/usr/bin/python3 "$ROOT/bench/merging_config.py" "$ROOT/configs/default.yaml" "$OUT/merging.yaml"
"$ROOT/build/release/runner/compatbench" validate "$OUT/merging.yaml"
mpirun -n 2 "$ROOT/build/release/runner/compatbench" run "$OUT/merging.yaml" --out "$OUT/run" --log-level warn > "$OUT/log" 2>&1
/usr/bin/python3 "$ROOT/bench/task_costs.py" "$OUT/run/results.h5" merge_knn merge_grid merges
