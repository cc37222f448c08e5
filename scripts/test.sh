#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test through ctest
# (unit, golden, mpirun -n 1/2/3, end-to-end, and the SLURM scripts on a local single-node
# SLURM). MPI tests take a lock, so they never overlap; unit tests and the SLURM tests
# (whose jobs mostly sleep, under a lock of their own) run beside them.
# In CI (CI=true) the build treats warnings as errors, and after the tests the project's
# code is compile-checked, warnings as errors, for the instruction sets users have
# (scripts/check-isa.sh), the smoke run of the baseline x86-64 build is checked against
# its golden hashes (scripts/check-golden.sh), and the unit tests run under the sanitizers
# (scripts/check-sanitizers.sh: ASan + UBSan for every unit test, TSan for core's).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PACKAGES+=("${TEST_PACKAGES[@]}")
install_packages
build
mpi_environment
step "test suite (ctest)"
tests=0
ctest --test-dir build/release --output-on-failure -j 2 || tests=$?
isa=0
golden=0
sanitizers=0
if [[ ${CI:-} == true ]]; then
  step "compile checks for x86-64, x86-64-v3, x86-64-v4"
  bash scripts/check-isa.sh || isa=$?
  step "golden hashes of the smoke run (baseline x86-64 build)"
  bash scripts/check-golden.sh || golden=$?
  step "unit tests under ASan + UBSan, core's under TSan"
  bash scripts/check-sanitizers.sh || sanitizers=$?
fi
((tests == 0)) || { step "test suite (ctest): some tests failed"; exit "$tests"; }
((isa == 0)) || { step "compile checks for x86-64, x86-64-v3, x86-64-v4"; exit "$isa"; }
((golden == 0)) || { step "golden hashes of the smoke run"; exit "$golden"; }
((sanitizers == 0)) || { step "unit tests under the sanitizers"; exit "$sanitizers"; }
