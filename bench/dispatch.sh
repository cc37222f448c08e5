#!/usr/bin/env bash
# The dispatch benchmark on 2 ranks (build first: bash scripts/main.sh or the release preset).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
exec mpirun -n 2 "$ROOT/build/release/runner/compatbench" bench dispatch --out "$ROOT/results/bench-dispatch" "$@"
