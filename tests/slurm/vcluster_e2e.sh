# The SLURM path across nodes, on the virtual 3-node cluster (slurm/virtual-cluster.sh):
#   nodes   the smoke config through slurm/submit.sh on 3 nodes, one rank per node, then two:
#           results.h5 equals a one-node mpirun run; /meta/hosts lists node1..node3
#   crash   a node's PID namespace killed while tasks are in flight: the job is requeued and
#           finishes with --resume; no task the ledger had recorded as done runs again and
#           the results equal an uninterrupted run; `compatbench status` on the job's folder
#           from outside the job while it runs
#   array   a leave-one-family-out job array (submit.sh --exclude-each: one run per vision
#           family of the smoke config, without it), one whole node per run (--exclusive),
#           then its combine job
#   gpus    SLURM hands out node1's two simulated GPUs from its gres configuration: two ranks
#           with --gpus-per-task 1 on node1 each get their own; in a mixed allocation (a
#           heterogeneous job: node1's rank with both, a rank on each of node2 and node3) the
#           2-GPU tasks run on node1's rank, CPU tasks on the others
#           (srun as the README's recipe: SLURM_PMIX_FENCE=tree, --kill-on-bad-exit=1; a srun
#           that stays after its tasks all ended, SLURM ticket 16817, is cancelled and said)
# MPI stays on loopback (btl_tcp_if_include / oob_tcp_if_include 127.0.0.0/8). Needs root
# and the slurm packages (skipped, exit 77, without them).
#   bash tests/slurm/vcluster_e2e.sh BIN SOURCE_DIR SCENARIO
source "$(dirname "$0")/../e2e/lib.sh"
SCENARIO=${3:?scenario}
if [[ $(id -u) != 0 ]] || ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null \
   || ! command -v unshare > /dev/null; then
  echo "SKIP: needs root, unshare and the slurm-wlm and munge packages"; exit 77
fi
if ! unshare -u -m -p --fork --mount-proc --propagation private true 2> /dev/null; then
  echo "SKIP: this machine does not allow new hostname, mount and PID namespaces"; exit 77
fi
export CB_VC_STATE=$WORK/vc CB_BIN=$BIN CB_MAX_RESTARTS=4
VC=$SRC/slurm/virtual-cluster.sh
eval "$(bash "$VC" env)"
unset OMPI_MCA_pml OMPI_MCA_mtl
source "$(dirname "$0")/jobs.sh"
start_cluster "$VC" "$CB_VC_STATE/ctld/slurmctld.log"

hosts_of() { h5_value "$1/results.h5" meta/hosts; }

case $SCENARIO in
nodes)
  CONFIG=$SRC/configs/smoke.yaml
  expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/plain" --log-level warn > /dev/null
  for per_node in 1 2; do
    OUT=$WORK/n3x$per_node
    J=$(bash "$SRC/slurm/submit.sh" --ranks $((3 * per_node)) --nodes 3 --time 00:05:00 --signal 30 "$CONFIG" "$OUT")
    wait_done "$J" 150 || { show_logs "$OUT"; fail "job $J did not finish"; }
    [[ $(state "$J") == COMPLETED ]] || { show_logs "$OUT"; fail "job $J: $(state "$J")"; }
    [[ $(hosts_of "$OUT") == "node1,node2,node3" ]] || fail "hosts of $per_node rank(s) per node: $(hosts_of "$OUT")"
    "$BIN" compare "$WORK/plain/results.h5" "$OUT/results.h5" || fail "3 nodes x $per_node rank(s) differ from one node"
  done
  pass "smoke on 3 nodes, 1 and 2 ranks per node: results equal one node's; hosts node1..node3"
  ;;
crash)
  CONFIG=$WORK/long.yaml
  sed -e 's/range: \[0, 80\]/range: [0, 150]/' "$SRC/tests/configs/good/slurm.yaml" > "$CONFIG"
  expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/plain" --log-level warn > /dev/null
  OUT=$WORK/job
  J=$(bash "$SRC/slurm/submit.sh" --ranks 3 --nodes 3 --time 00:05:00 --signal 30 "$CONFIG" "$OUT")
  wait_state "$J" RUNNING 60 || fail "job $J never ran"
  for _ in $(seq 300); do
    (($(cat "$OUT/ledger.jsonl" 2> /dev/null | wc -l) >= 40)) && break
    sleep 0.2
  done
  # From outside the job, while it runs: its progress from the output folder.
  "$BIN" status "$OUT" > "$WORK/status.txt" || { cat "$WORK/status.txt"; fail "status failed"; }
  grep -q "running" "$WORK/status.txt" || { cat "$WORK/status.txt"; fail "status does not say running"; }
  before=$(wc -l < "$OUT/ledger.jsonl")
  cp "$OUT/ledger.jsonl" "$WORK/ledger.before"
  bash "$VC" crash node3 >> "$WORK/cluster.log"
  # The node comes back, as a repaired one would, once the job is off it: requeued and
  # pending (a node that returns while the job is still completing on it confuses the
  # controller's view of the job's nodes).
  for _ in $(seq 300); do
    st=$(state "$J"); node=$(sinfo -h -N -n node3 -o %T 2> /dev/null || true)
    [[ $st == PENDING || $st == FAILED || $st == COMPLETED ]] && break
    sleep 0.2
  done
  echo "after the crash: job $st, node3 $node" >&2
  bash "$VC" revive node3 >> "$WORK/cluster.log" 2>&1 || fail "node3 did not come back"
  wait_done "$J" 200 || { show_logs "$OUT"; fail "job $J did not finish after the crash"; }
  [[ $(state "$J") == COMPLETED ]] || { show_logs "$OUT"; fail "job $J: $(state "$J")"; }
  (($(field "$J" Restarts) >= 1)) || { show_logs "$OUT"; fail "job $J was not restarted"; }
  check_ledger_once "$OUT/ledger.jsonl" 156 || { show_logs "$OUT"; fail "the ledger is incomplete"; }
  "$PY" - "$WORK/ledger.before" "$OUT/ledger.jsonl" <<'PYEOF'
import json, sys
before = {r["id"] for r in map(json.loads, open(sys.argv[1])) if r["status"] == "done"}
after = [json.loads(l) for l in open(sys.argv[2])]
again = [r["id"] for r in after[len(open(sys.argv[1]).readlines()):] if r["id"] in before]
assert not again, f"done before the crash and run again: {again[:5]}"
print(f"{len(before)} tasks done before the crash, none run again")
PYEOF
  "$BIN" compare "$WORK/plain/results.h5" "$OUT/results.h5" || fail "results after the crash differ"
  pass "node3 crashed after $before tasks: requeued $(field "$J" Restarts) time(s), resumed, none run twice, results equal"
  ;;
array)
  # Leave-one-family-out: one run per vision family of the smoke config, each without that
  # family's encoder and everything that depends on it, one whole node each, then combine.
  CONFIG=$SRC/configs/smoke.yaml
  read -r J C < <(bash "$SRC/slurm/submit.sh" --ranks 1 --exclusive --time 00:05:00 --signal 30 \
                    --exclude-each "*sup_v_1* *clip_v_1* *raw_v_1*" "$CONFIG" "$WORK/lofo")
  wait_done "$C" 240 || { show_logs "$WORK/lofo"; fail "the combine job $C did not finish"; }
  [[ $(state "$C") == COMPLETED ]] || { show_logs "$WORK/lofo"; fail "combine job $C: $(state "$C")"; }
  hosts=$(for i in 1 2 3; do hosts_of "$WORK/lofo/without$i"; done | sort | tr '\n' ' ')
  [[ $hosts == "node1 node2 node3 " ]] || fail "the array's runs were not spread over the nodes: $hosts"
  "$PY" - "$WORK/lofo" <<'PYEOF'
import sys, h5py
for i, family in enumerate(["sup_v_1", "clip_v_1", "raw_v_1"], 1):
    f = h5py.File(f"{sys.argv[1]}/without{i}/results.h5", "r")
    assert f["meta/excluded"][()].decode() == f"*{family}*"
    ids = [t.decode() for t in f["tasks/id"][:]]
    assert not any(family in t for t in ids), family
    fits = [t.decode() for t in f["alignment/fits/task_id"][:]]
    assert fits and f["meta/status"][()] == b"complete", (family, fits)
c = h5py.File(sys.argv[1] + "/combined/combined.h5", "r")
s = {k: c["combine/spread"][k][:] for k in c["combine/spread"]}
r = (s["table"] == b"/alignment/analysis/correlations") & (s["column"] == b"pearson_r")
sources = c["combine/sources"]
assert len(sources[list(sources)[0]]) == 3, {k: sources[k][:] for k in sources}
# A run left with 2 alignment pairs has no correlation (NaN): 2 or 3 runs per statistic.
assert r.any() and (s["runs"][r] >= 2).all() and (s["runs"][r] <= 3).all(), s["runs"][r]
print(f"leave-one-family-out: 3 runs, each without one vision family; {int(r.sum())} correlations combined")
PYEOF
  pass "a leave-one-family-out job array, one run per node ($hosts), and its combine job"
  ;;
gpus)
  unset CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS SLURM_JOB_GPUS
  C=$(gpu_config perTask "" one:1:6 cpu:0:2)
  J=$(bash "$SRC/slurm/submit.sh" --ranks 2 --nodes 1 --gpus-per-task 1 --time 00:05:00 "$C" "$WORK/per_task")
  wait_done "$J" 120 || { show_logs "$WORK/per_task"; fail "job $J did not finish"; }
  [[ $(state "$J") == COMPLETED ]] || { show_logs "$WORK/per_task"; fail "job $J: $(state "$J")"; }
  pycheck gpus placed "$WORK/per_task" one "node1=0" "node1=1"
  pycheck gpus own_devices "$WORK/per_task"
  # A mixed allocation, as the README's heterogeneous job: one rank with node1's two GPUs,
  # one rank on each GPU-less node (which inherit the batch node's CUDA_VISIBLE_DEVICES).
  C=$(gpu_config mixed "cpu_tasks_on_gpu_ranks: false" two:2:3 cpu:0:6)
  mkdir -p "$WORK/mixed/logs"
  cat > "$WORK/mixed.sbatch" <<SBATCH
#!/bin/bash
#SBATCH --time=00:05:00 --output=$WORK/mixed/logs/slurm-%j.out
#SBATCH --nodes=1 --ntasks=1 --gpus-per-task=2
#SBATCH hetjob
#SBATCH --nodes=2 --ntasks-per-node=1
SLURM_PMIX_FENCE=tree srun -v --het-group=0,1 --mpi=pmix --kill-on-bad-exit=1 $BIN run $C --out $WORK/mixed --log-level warn
SBATCH
  J=$(sbatch --parsable "$WORK/mixed.sbatch")
  wait_het_done "$J" "$WORK/mixed/logs/slurm-$J.out" 3 120 || { show_logs "$WORK/mixed"; fail "job $J did not finish"; }
  [[ $(state "$J") == COMPLETED || $SRUN_STUCK == 1 ]] || { show_logs "$WORK/mixed"; fail "job $J: $(state "$J")"; }
  pycheck gpus placed "$WORK/mixed" two "node1=0,1"
  pycheck gpus placed "$WORK/mixed" cpu "node2=" "node3="
  pass "SLURM's gres: one GPU per rank with --gpus-per-task; a mixed allocation placed by need"
  ;;
*) fail "unknown scenario $SCENARIO" ;;
esac
