#!/usr/bin/env bash
# The unit tests under the compilers' sanitizers (CI): every unit test built with
# AddressSanitizer and UndefinedBehaviorSanitizer (the asan preset), then core's unit tests
# (the watchdog's thread, child processes and their guard) built with ThreadSanitizer (the
# tsan preset, its own small binary compatbench_unit_core), both at -O1: at -O0 the
# training tests' matrix products take most of an hour. UBSan's alignment and null checks
# are left out: they instrument every pointer and reference in Eigen's expression templates,
# which made the build 2.5 times slower (workloads/nn/layers.cpp: 83 s against 34 s), and
# what they guard is a fault that ASan reports with its stack anyway (a null or wild read
# is a SEGV; x86 runs a misaligned scalar load, and Eigen's aligned vector loads fault on
# one). Any report fails the check. Only the test binary and the command guard are built,
# each preset in its own build folder.
# The tests that start MPI (the results file's) run without leak detection: Open MPI's
# plugins leave their allocations at exit, unloaded, so no suppression can name them.
#   bash scripts/check-sanitizers.sh [asan|tsan]...     (default: both)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KINDS=("$@")
((${#KINDS[@]})) || KINDS=(asan tsan)
# What ctest gives the unit tests: the package and the checks on Python's path.
export PYTHONPATH="$ROOT/python:$ROOT/tests${PYTHONPATH:+:$PYTHONPATH}"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
MPI_TESTS='ResultsFile.*:H5Handle.*'

build() {  # build PRESET TARGET
  cmake --preset "$1" > /dev/null
  if ! cmake --build --preset "$1" --target "$2" compatbench-guard -j "$(nproc)" \
      > "build/$1.log" 2>&1; then
    { grep -E "(warning|error)" -A3 "build/$1.log" || true; } | head -n 60 >&2
    echo "check-sanitizers.sh: the $1 build failed (log: build/$1.log)" >&2
    exit 1
  fi
}

run() {  # run PRESET BINARY GTEST_FILTER ASAN_OPTIONS
  local log="build/$1-tests.log"
  if ! ASAN_OPTIONS=$4 "build/$1/tests/$2" --gtest_filter="$3" --gtest_brief=1 >> "$log" 2>&1
  then
    tail -n 80 "$log" >&2
    echo "check-sanitizers.sh: $2 '$3' under the $1 preset failed (log: $log)" >&2
    exit 1
  fi
  echo "   $2 '$3': $(grep -E '^\[  PASSED  \]' "$log" | tail -n 1)"
}

for kind in "${KINDS[@]}"; do
  start=$SECONDS
  case $kind in
    asan)
      echo "== sanitizers: ASan + UBSan (asan preset), every unit test"
      build asan compatbench_unit
      : > build/asan-tests.log
      run asan compatbench_unit "-$MPI_TESTS" detect_leaks=1
      run asan compatbench_unit "$MPI_TESTS" detect_leaks=0 ;;
    tsan)
      echo "== sanitizers: TSan (tsan preset), core's unit tests"
      build tsan compatbench_unit_core
      : > build/tsan-tests.log
      run tsan compatbench_unit_core '*' "" ;;
    *) echo "check-sanitizers.sh: unknown check '$kind' (asan, tsan)" >&2; exit 2 ;;
  esac
  echo "   clean in $((SECONDS - start)) s"
done
