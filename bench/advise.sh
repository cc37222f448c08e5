#!/usr/bin/env bash
# `compatbench advise merge` against screening pair by pair, on a generated Llama-shaped BF16
# set of M = 8 fine-tunes (tests/checks/user_scripts/make_llm.py, as the e2e tests make
# them): the one pass over all 8 (every pair, then every triple), one `screen` of a single
# pair, and the 28 `screen` runs a user would otherwise make; warm page cache, 1 and 2 ranks.
#   bash bench/advise.sh [DIR] [LAYERS] [HIDDEN]   (build first; default 4 layers, hidden
#   1024: about 0.1 GB per checkpoint. The set is kept in DIR for reruns.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
DIR=${1:-${TMPDIR:-/tmp}/compatbench-advise}
LAYERS=${2:-4}
HIDDEN=${3:-1024}
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [[ ! -e $DIR/ft7.safetensors ]]; then
  echo "generating base + 8 fine-tunes: $LAYERS layers, hidden $HIDDEN, BF16, in $DIR ..."
  /usr/bin/python3 "$ROOT/tests/checks/user_scripts/make_llm.py" "$DIR" "$LAYERS" "$HIDDEN" 8 \
    0.01 0.02 0.03 0.01 0.05 0.01 0.02 0.04
fi
du -sh "$DIR"
B=$DIR/base.safetensors
M=("$DIR/ft0.safetensors" "$DIR/ft1" "$DIR"/ft[2-7].safetensors)
# Best of 3 of each command as a user runs it (wall: process start, MPI start-up, the pass
# and the output) and of the seconds it reports for its pass alone, at 1 and 2 ranks.
/usr/bin/python3 "$ROOT/bench/advise_timings.py" "$BIN" "$B" "$DIR" "${M[@]}"
