#!/usr/bin/env bash
# `compatbench advise align` at the size of the issue's question: 20 vision × 20 text
# encoders, 1,024 probe images (one caption each) and 768 dimensions, features drawn at random
# (seeded) around a shared signal; 1 rank, then 2.
#   bash bench/advise_align.sh [DIR]   (build first; the features are kept in DIR)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DIR=${1:-${TMPDIR:-/tmp}/compatbench-advise-align}
if [[ ! -e $DIR/features.yaml ]]; then
  "$PY" "$ROOT/bench/advise_align_features.py" "$DIR"
fi
for n in 1 2; do
  mpirun -n $n --oversubscribe "$BIN" advise align --manifest "$DIR/features.yaml" --budget 5 --json "$DIR/n$n.json" | tail -1
done
