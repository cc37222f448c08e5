#!/usr/bin/env bash
# Submits a compatbench run to SLURM with the resources given here (the site's partition,
# account and modules come from slurm/site.sh). Prints the job id(s).
#
#   slurm/submit.sh [options] CONFIG OUT_DIR
#     --ranks N          MPI ranks (SLURM tasks), default 2
#     --nodes N          nodes (default: let SLURM choose)
#     --cpus N           CPUs per rank, default 1
#     --mem SIZE         memory per node (e.g. 8G; default: the partition's)
#     --exclusive        whole nodes to the job (an array's runs land on different nodes)
#     --gpus-per-task N  GPUs per rank: SLURM binds each rank to its own (docs/gpus.md)
#     --gpus N           GPUs for the whole job (at least one a node: a mixed allocation of
#                        GPU and CPU-only nodes is a heterogeneous job, see the README)
#     --time T           time limit (e.g. 02:00:00), default 01:00:00
#     --signal S         warn the runner S seconds before the limit (CB_SIGNAL_SECONDS)
#     --seeds K          a job array of K runs, seeds SEED_BASE..SEED_BASE+K-1, each into
#                        OUT_DIR/seed<seed>, then a dependent job (afterok) combining them
#                        into OUT_DIR/combined (compatbench combine)
#     --seed-base S      first seed of the array, default 1
#     --exclude-each "P1 P2 ..."
#                        a job array of one run per shell pattern of task ids, run i leaving
#                        out the tasks matching Pi and all that depend on them (`run
#                        --exclude`; e.g. one model family each: leave-one-family-out),
#                        each into OUT_DIR/without<i>, then the combine job as for --seeds
#     --dry-run          print the sbatch commands instead of running them
#
# Examples:
#   slurm/submit.sh --ranks 64 --nodes 2 --time 04:00:00 configs/default.yaml runs/default
#   slurm/submit.sh --ranks 8 --seeds 5 configs/default.yaml runs/seeds
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=site.sh
source "$HERE/site.sh"
export CB_ROOT CB_BIN
exclude_each="" ranks=2 nodes="" cpus=1 mem="" exclusive=0 gpus_per_task="" gpus="" time=01:00:00 signal=$CB_SIGNAL_SECONDS seeds=0 seed_base=1 dry=0
while (($#)); do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --exclusive) exclusive=1; shift ;;
    --gpus-per-task) gpus_per_task=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --signal) signal=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --seed-base) seed_base=$2; shift 2 ;;
    --exclude-each) exclude_each=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) echo "submit.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($# == 2)) || { echo "usage: slurm/submit.sh [options] CONFIG OUT_DIR (see --help)" >&2; exit 2; }
CONFIG=$(readlink -f "$1")
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
[[ -f $CONFIG ]] || { echo "submit.sh: no config $CONFIG" >&2; exit 2; }
mkdir -p "$OUT/logs"
flags=(--parsable --ntasks="$ranks" --cpus-per-task="$cpus" --time="$time"
       --signal="B:USR1@$signal" --job-name="cb-$(basename "$CONFIG" .yaml)")
[[ -n $nodes ]] && flags+=(--nodes="$nodes")
[[ -n $mem ]] && flags+=(--mem="$mem")
((exclusive)) && flags+=(--exclusive)
[[ -n $gpus_per_task ]] && flags+=(--gpus-per-task="$gpus_per_task")
[[ -n $gpus ]] && flags+=(--gpus="$gpus")
mapfile -t site < <(cb_site_flags)
flags+=("${site[@]}")
sb() {
  if ((dry)); then echo "sbatch $*" >&2; echo "DRYRUN"; else sbatch "$@"; fi
}
# An array (seeds or exclusions), its runs' folders, and the combine job after it.
runs=()
if ((seeds > 0)); then
  export CB_SEED_BASE=$seed_base
  for ((i = 0; i < seeds; i++)); do runs+=("$OUT/seed$((seed_base + i))"); done
elif [[ -n $exclude_each ]]; then
  export CB_EXCLUDE_EACH=$exclude_each
  read -r -a patterns <<< "$exclude_each"
  for ((i = 1; i <= ${#patterns[@]}; i++)); do runs+=("$OUT/without$i"); done
fi
if ((${#runs[@]} > 0)); then
  job=$(sb "${flags[@]}" --array="0-$((${#runs[@]} - 1))" --output="$OUT/logs/slurm-%A_%a.out" \
        "$HERE/compatbench.sbatch" "$CONFIG" "$OUT")
  comb=$(sb --parsable --ntasks=1 --time="$time" "${site[@]}" --dependency="afterok:$job" \
         --job-name=cb-combine --output="$OUT/logs/slurm-combine-%j.out" \
         "$HERE/combine.sbatch" "$OUT/combined" "${runs[@]}")
  echo "$job $comb"
else
  sb "${flags[@]}" --output="$OUT/logs/slurm-%j.out" "$HERE/compatbench.sbatch" "$CONFIG" "$OUT"
fi
