#!/usr/bin/env bash
# Mutual k-NN against numpy at n = 1024 and n = 16384 (d = 768, k = 10). Build first; numpy
# should run on OpenBLAS (Debian libopenblas0-pthread), as a user's would.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/release/runner/compatbench
"$BIN" bench knn --n 1024 --d 768 --k 10 --repeats 7 --python /usr/bin/python3
"$BIN" bench knn --n 16384 --d 768 --k 10 --repeats 1 --python /usr/bin/python3
