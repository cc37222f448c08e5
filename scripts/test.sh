#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test through ctest
# (unit, golden, mpirun -n 1/2/3, end-to-end, and the SLURM scripts on a local single-node
# SLURM). MPI tests take a lock, so they never overlap; unit tests run beside them.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PACKAGES+=("${TEST_PACKAGES[@]}")
install_packages
build
mpi_environment
ctest --test-dir build/release --output-on-failure -j 2
