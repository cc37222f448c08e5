# Site settings of the SLURM scripts: the one file to edit for a cluster. Sourced by
# compatbench.sbatch, combine.sbatch and submit.sh; every value may also come from the
# environment of `sbatch` / `submit.sh` (CB_PARTITION=gpu slurm/submit.sh ...).

# Where compatbench is: the checkout (CB_ROOT) and the binary built in it.
: "${CB_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${CB_BIN:=$CB_ROOT/build/release/runner/compatbench}"

# Scheduler: partition and account (empty: the cluster's defaults).
: "${CB_PARTITION:=}"
: "${CB_ACCOUNT:=}"

# Environment modules to load before running, space-separated (empty: none), e.g.
#   CB_MODULES="gcc/12 openmpi/4.1 hdf5/1.14-openmpi"
: "${CB_MODULES:=}"

# MPI launch inside a job: Debian's and most sites' Open MPI want PMIx.
: "${CB_SRUN_MPI:=pmix}"

# SLURM's PMIx plugin runs MPI_Init's two fences with two algorithms by default (a ring for
# the exchange of addresses, a tree for the closing barrier). Under Open MPI 4.1 that lets a
# rank leave MPI_Init while another is still in the exchange, and the first message it sends
# crashes the slow rank (segmentation fault in Open MPI's TCP transport, about one start in
# 50 on SLURM 22.05: docs/cluster.md, "MPI_Init under srun"). The tree for both does not.
: "${SLURM_PMIX_FENCE:=tree}"
export SLURM_PMIX_FENCE

# Signal the job this many seconds before its time limit (the runner then stops cleanly,
# exits 75, and the job requeues itself), and at most this many restarts.
: "${CB_SIGNAL_SECONDS:=300}"
: "${CB_MAX_RESTARTS:=5}"

# sbatch flags for the partition and account above (one per line).
cb_site_flags() {
  [[ -n $CB_PARTITION ]] && echo "--partition=$CB_PARTITION"
  [[ -n $CB_ACCOUNT ]] && echo "--account=$CB_ACCOUNT"
  return 0
}

cb_load_modules() {
  [[ -z $CB_MODULES ]] && return 0
  if ! command -v module > /dev/null 2>&1; then
    echo "site.sh: CB_MODULES is set but there is no 'module' command" >&2
    return 1
  fi
  # shellcheck disable=SC2086
  module load $CB_MODULES
}
