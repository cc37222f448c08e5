# Shared set-up of the end-to-end tests: bash tests/e2e/<test>.sh BIN SOURCE_DIR
set -euo pipefail
BIN=${1:?usage: $0 COMPATBENCH_BINARY SOURCE_DIR}
SRC=${2:?usage: $0 COMPATBENCH_BINARY SOURCE_DIR}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/compatbench-e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl='^openib,ofi' OMPI_MCA_pml=ob1 OMPI_MCA_mtl='^ofi,psm,psm2'
PY=/usr/bin/python3
# The project's Python package (compatnets) and the checks (tests/checks), for every Python
# the tests start.
export PYTHONPATH="$SRC/python:$SRC/tests${PYTHONPATH:+:$PYTHONPATH}"
# Each test remembers task costs in its own folder, not in the user's cache (exec/cost_cache.h).
export COMPATBENCH_COST_CACHE=$WORK/costs.json
# pycheck MODULE FUNCTION ARGS...: a check of tests/checks/MODULE.py, run in this directory.
pycheck() { "$PY" -m checks "$@"; }

# mpi N ARGS...: compatbench on N ranks (N = 0: a plain process, no mpirun).
mpi() {
  local n=$1; shift
  if [[ $n == 0 ]]; then "$BIN" "$@"; else mpirun -n "$n" --oversubscribe "$BIN" "$@"; fi
}
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }
# expect_code WANT CMD...: runs CMD, fails unless it exits with WANT.
expect_code() {
  local want=$1; shift
  set +e; "$@"; local got=$?; set -e
  [[ $got == "$want" ]] || fail "'$*' exited $got, expected $want"
}
# Every task done exactly once in a ledger, and as many as the config has.
check_ledger_once() {
  local ledger=$1 want=$2
  pycheck common ledger_done_once "$ledger" "$want"
}
# check_stopped OUT WHAT STATES: after a run that a fault stopped: every ledger line is a
# whole record, `status` says one of STATES (a grep alternation), no rank is left running.
check_stopped() {
  local out=$1 what=$2 states=$3
  "$PY" -c "import json, sys; [json.loads(l) for l in open(sys.argv[1]) if l.endswith('\n')]" \
    "$out/ledger.jsonl" || fail "$what: a ledger line is not a record"
  "$BIN" status "$out" | grep -q "^state: \($states\)" \
    || fail "$what: status says $("$BIN" status "$out" | sed -n 2p)"
  ! pgrep -f -- "--out $out " > /dev/null || fail "$what: a rank is still running"
}
h5_value() { "$PY" -c "import h5py,sys; v=h5py.File(sys.argv[1],'r')[sys.argv[2]][()]; print(v.decode() if isinstance(v, bytes) else v)" "$1" "$2"; }
# gpu_config NAME EXTRA_RUNNER GROUPS...: a config of command groups "name:gpus:count"
# whose commands write the devices they saw, their rank and OMP_NUM_THREADS (tests/checks/gpus.py).
gpu_config() {
  local file=$WORK/$1.yaml; shift
  printf 'experiment: {name: gpus, seed: 5}\nrunner: {%s}\ntasks:\n' "$1" > "$file"; shift
  local g name gpus count
  for g in "$@"; do
    IFS=: read -r name gpus count <<< "$g"
    cat >> "$file" <<YAML
  - name: $name
    kind: command
    count: $count
    gpus: $gpus
    command: >-
      sleep 0.2; printf '{{"devices": "%s", "rank": %s, "threads": "%s"}}'
      "\$CUDA_VISIBLE_DEVICES" "\${{SLURM_PROCID:-\${{OMPI_COMM_WORLD_RANK:-0}}}}" "\$OMP_NUM_THREADS" > {result}
    outputs: {devices: "str:32", rank: int, threads: "str:8"}
YAML
  done
  echo "$file"
}

