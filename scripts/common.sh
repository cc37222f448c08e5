# Shared by scripts/main.sh and scripts/test.sh: install the distribution packages that
# are missing, then configure and build the Release preset. Each phase is a named step; when
# one fails, the script says which before it exits.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STEP="start"
step() {
  STEP=$1
  echo "== ${0##*/}: $STEP"
}
report_failed_step() {
  local code=$?
  ((code == 0)) || echo "${0##*/}: failed at step '$STEP' (exit code $code)" >&2
  exit "$code"
}
trap report_failed_step EXIT

# Everything compatbench builds, runs and tests with, from Debian's packages.
PACKAGES=(g++ make cmake pkg-config git procps
          openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
          libeigen3-dev libyaml-cpp-dev libspdlog-dev libgtest-dev nlohmann-json3-dev
          libcli11-dev libboost-math-dev
          parallel python3-numpy python3-scipy python3-h5py python3-matplotlib libopenblas0-pthread
          clang libclang-rt-14-dev)
# Only the tests need these: a local single-node SLURM (slurm/local-cluster.sh) and a
# headless browser that opens the report.
TEST_PACKAGES=(slurm-wlm slurm-client munge chromium python3-venv python3-wheel python3-setuptools)
# The library of real PyTorch networks (python/compatnets, configs/real*.yaml) needs these;
# the tests run it, and scripts/main.sh adds them for a config that uses it.
REAL_PACKAGES=(python3-torch python3-sklearn dataset-fashion-mnist fortunes fortunes-de fortunes-es)
TEST_PACKAGES+=("${REAL_PACKAGES[@]}")

install_packages() {
  step "install missing Debian packages"
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  echo "installing: ${missing[*]}"
  local sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  # No daemon starts at install time (munge, slurmctld: the tests start their own).
  local policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d > /dev/null
    "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
    policy=1
  fi
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
  ((policy)) && "${sudo[@]}" rm -f /usr/sbin/policy-rc.d
  return 0
}

# The Release preset. Warnings are errors only in CI (CI=true): a user's build never fails
# on a compiler warning.
build() {
  local werror=OFF
  [[ ${CI:-} == true ]] && werror=ON
  step "configure (release preset, warnings as errors: $werror)"
  cmake --preset release -DCOMPATBENCH_WERROR=$werror
  step "build (release preset)"
  cmake --build --preset release -j "$(nproc)"
}

# Open MPI: allow root (CI, containers), more ranks than cores, no CMA in containers.
mpi_environment() {
  if [[ $(id -u) == 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  export OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
}

BIN=$ROOT/build/release/runner/compatbench
