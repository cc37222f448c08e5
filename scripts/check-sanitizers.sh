#!/usr/bin/env bash
# The unit tests under the compilers' sanitizers (CI): every unit test built with
# AddressSanitizer and UndefinedBehaviorSanitizer (the debug preset), then those that run
# threads (the watchdog, command tasks and their servers, cancellation) built with
# ThreadSanitizer (the tsan preset). Any report fails the check. Only the unit-test binary
# and the command guard are built, each in its own build folder.
#   bash scripts/check-sanitizers.sh [asan|tsan]...     (default: both)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KINDS=("$@")
((${#KINDS[@]})) || KINDS=(asan tsan)
# What ctest gives the unit tests: the package and the checks on Python's path.
export PYTHONPATH="$ROOT/python:$ROOT/tests${PYTHONPATH:+:$PYTHONPATH}"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
THREADED='Watchdog.*:CommandTask.*:ServedTask.*:FailTask.*'

check() {  # check PRESET [GTEST_FILTER]
  local preset=$1 filter=${2:-*} start=$SECONDS
  echo "== sanitizers: $preset preset, unit tests '$filter'"
  cmake --preset "$preset" > /dev/null
  if ! cmake --build --preset "$preset" --target compatbench_unit compatbench-guard \
      -j "$(nproc)" > "build/$preset.log" 2>&1; then
    { grep -E "(warning|error)" -A3 "build/$preset.log" || true; } | head -n 60 >&2
    echo "check-sanitizers.sh: the $preset build failed (log: build/$preset.log)" >&2
    exit 1
  fi
  if ! "build/$preset/tests/compatbench_unit" --gtest_filter="$filter" --gtest_brief=1 \
      > "build/$preset-tests.log" 2>&1; then
    tail -n 80 "build/$preset-tests.log" >&2
    echo "check-sanitizers.sh: unit tests under the $preset preset failed" \
      "(log: build/$preset-tests.log)" >&2
    exit 1
  fi
  echo "   clean in $((SECONDS - start)) s: $(grep -E '^\[  PASSED  \]' "build/$preset-tests.log")"
}

for kind in "${KINDS[@]}"; do
  case $kind in
    asan) check debug ;;
    tsan) check tsan "$THREADED" ;;
    *) echo "check-sanitizers.sh: unknown check '$kind' (asan, tsan)" >&2; exit 2 ;;
  esac
done
