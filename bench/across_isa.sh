#!/usr/bin/env bash
# How far results move between builds for different instruction sets. Runs CONFIG with
# the host build (-march=native) and with the builds of scripts/check-isa.sh (those this
# CPU can run), then compares every dataset outside /meta and /tasks with the host's:
# byte-identical or not, and the largest difference of floating-point values, absolute
# and relative to the column's scale (its largest magnitude).
#   bash scripts/check-isa.sh && bash bench/across_isa.sh [CONFIG]   (default smoke.yaml)
#   BUILDS="release isa-x86-64-v3" bash bench/across_isa.sh configs/default.yaml
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIG=${1:-$ROOT/configs/smoke.yaml}
WORK=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$WORK"' EXIT
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
runs=()
for build in ${BUILDS:-release isa-x86-64 isa-x86-64-v3 isa-x86-64-v4}; do
  bin=$ROOT/build/$build/runner/compatbench
  [[ -x $bin ]] || { echo "$build: not built, left out"; continue; }
  if ! "$bin" --version > /dev/null 2>&1; then
    echo "$build: this CPU cannot run it, left out"
    continue
  fi
  mpirun -n 2 "$bin" run "$CONFIG" --out "$WORK/$build" --log-level error > /dev/null
  runs+=("$build")
done
/usr/bin/python3 "$ROOT/bench/across_isa_diff.py" "$WORK" "${runs[@]}"
