#!/usr/bin/env bash
# Validates `compatbench plan --ranks`: runs CONFIG on 1 rank and on 2 ranks, then predicts
# both from the 1-rank run's task durations and prints predicted beside measured wall time
# (target: within 15%). Then the prediction for a 64-node cluster from the same durations.
#   bash bench/plan.sh [CONFIG] [RANKS_TO_PREDICT]   (build first; default configs/smoke.yaml
#   and 1,2,4,8,16,64,128,256,1024,4096)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
CONFIG=${1:-$ROOT/configs/smoke.yaml}
RANKS=${2:-1,2,4,8,16,64,128,256,1024,4096}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
wall() { /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); print(f['/meta/end_time'][()]-f['/meta/start_time'][()])" "$1"; }
"$BIN" run "$CONFIG" --out "$OUT/n1" --log-level error > /dev/null
mpirun -n 2 "$BIN" run "$CONFIG" --out "$OUT/n2" --log-level error > /dev/null
m1=$(wall "$OUT/n1/results.h5"); m2=$(wall "$OUT/n2/results.h5")
plan=$("$BIN" plan "$CONFIG" --ranks "1,2" --costs "$OUT/n1/results.h5")
p1=$(echo "$plan" | awk '$1 == 1 && $NF ~ /ranks|path/ {print $4}')
p2=$(echo "$plan" | awk '$1 == 2 && $NF ~ /ranks|path/ {print $4}')
/usr/bin/python3 "$ROOT/bench/plan_check.py" "$m1" "$p1" "$m2" "$p2"
echo
"$BIN" plan "$CONFIG" --ranks "$RANKS" --costs "$OUT/n1/results.h5" | sed -n '/^scaling/,$p'
