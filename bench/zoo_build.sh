#!/usr/bin/env bash
# Wall time of building the default model library on 2 ranks, against its 5-minute budget.
#   bash bench/zoo_build.sh [CONFIG]   (build first; default configs/default.yaml)
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
tasks=$(/usr/bin/python3 -c "import h5py,sys; print(len(h5py.File(sys.argv[1],'r')['tasks/id']))" "$OUT/run/results.h5")
models=$(/usr/bin/python3 -c "import h5py,sys; print(len(h5py.File(sys.argv[1],'r')['zoo/models/name']))" "$OUT/run/results.h5")
printf 'zoo build: %d tasks, %d models in %.1f s wall on 2 ranks (budget 300 s: %s)\n' \
  "$tasks" "$models" "$(echo "$ms" | awk '{print $1/1000}')" "$( ((ms <= 300000)) && echo met || echo 'NOT met')"
