#!/usr/bin/env bash
# The main job: install what is missing, build, and run the default experiment on 2 ranks
# (the paper-shaped model library and the four studies: about 5.5 minutes on 2 cores once
# built), then the HTML report of its results.
#   bash scripts/main.sh [CONFIG]      (default: configs/default.yaml; configs/real.yaml, real-lm.yaml: the
#                                     library of real PyTorch networks, with its packages)
# Running it again continues (or re-checks) the same output folder with --resume.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
CONFIG=${1:-configs/default.yaml}
grep -q "compatnets" "$CONFIG" && PACKAGES+=("${REAL_PACKAGES[@]}")
install_packages
build
mpi_environment
step "validate $CONFIG"
NAME=$("$BIN" validate "$CONFIG" | sed -n "s/.*experiment '\([^']*\)'.*/\1/p")
OUT=results/$NAME
resume=()
[[ -s $OUT/ledger.jsonl ]] && resume=(--resume)
step "run $CONFIG on 2 ranks"
# Ctrl-C stops the run cleanly (scripts/launch.sh); running this script again continues it.
bash "$ROOT/scripts/launch.sh" -n 2 "$BIN" run "$CONFIG" --out "$OUT" "${resume[@]}"
step "report"
"$BIN" report "$OUT"
echo "results: $OUT/results.h5 (layout in docs/results.md); report: $OUT/report/index.html"
