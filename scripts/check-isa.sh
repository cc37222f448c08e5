#!/usr/bin/env bash
# Compile checks: builds the project's code (the libraries and the compatbench binary: all
# that a user builds and runs) with warnings as errors for each instruction set users' CPUs
# have, whatever this machine's CPU is. Nothing is run: a build for AVX-512 only has to
# compile on a machine without it. GCC's warnings depend on the code paths each instruction
# set opens in Eigen and the intrinsics, so a build that is clean for one can fail for
# another. The tests are not rebuilt here: the release build compiles them, warnings as
# errors in CI, for this machine's instruction set, and a third of the time would go to
# code that no user runs. (The isa-* presets still list their unit tests when ctest runs,
# not at build time, CMake's PRE_TEST discovery mode, for a developer who builds them all.)
#   bash scripts/check-isa.sh [LEVEL...]     (default: x86-64 x86-64-v3 x86-64-v4)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
LEVELS=("$@")
((${#LEVELS[@]})) || LEVELS=(x86-64 x86-64-v3 x86-64-v4)
for level in "${LEVELS[@]}"; do
  echo "== compile check: -march=$level, warnings as errors"
  start=$SECONDS
  cmake --preset "isa-$level" > /dev/null
  if ! cmake --build --preset "isa-$level" --target compatbench -j "$(nproc)" \
      > "build/isa-$level.log" 2>&1; then
    { grep -E "(warning|error)" -A3 "build/isa-$level.log" || true; } | head -n 60 >&2 || true
    echo "check-isa.sh: the build for -march=$level failed (log: build/isa-$level.log)" >&2
    exit 1
  fi
  # Math whose bits the CPU vendor chooses (an AVX-512 build's double sqrt among them).
  math=$(/usr/bin/python3 tests/portable_math.py . "build/isa-$level/runner/compatbench") \
    || { echo "$math" >&2; exit 1; }
  echo "   clean in $((SECONDS - start)) s"
done
