# The SLURM scripts on a real single-node SLURM (slurm/local-cluster.sh), one scenario per
# test, each bounded in time:
#   submit    the smoke config as a 2-task job: completes, results equal a plain mpirun run
#   requeue   `scontrol requeue` in the middle: the job restarts, resumes from the ledger,
#             completes; no task done twice; results equal
#   timelimit a 1-minute limit with --signal=B:USR1@20: the runner stops before the limit,
#             the job requeues itself, completes
#   stop      SIGTERM, then SIGINT to the batch script (scancel --batch --signal): each
#             time the runner stops cleanly (75) and the job requeues itself; it completes
#   array     3 seeds as a job array and the dependent combine job
# Needs root and the slurm packages (skipped, exit 77, without them).
#   bash tests/slurm/slurm_e2e.sh BIN SOURCE_DIR SCENARIO
source "$(dirname "$0")/../e2e/lib.sh"
SCENARIO=${3:?scenario}
if [[ $(id -u) != 0 ]] || ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  echo "SKIP: needs root and the slurm-wlm and munge packages"; exit 77
fi
export CB_SLURM_STATE=$WORK/slurm-state CB_SLURM_CPUS=4
export CB_BIN=$BIN CB_MAX_RESTARTS=6
source "$(dirname "$0")/jobs.sh"
start_cluster "$SRC/slurm/local-cluster.sh" "$CB_SLURM_STATE/log/slurmctld.log"

case $SCENARIO in
submit)
  CONFIG=$SRC/configs/smoke.yaml
  expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/plain" --log-level warn > /dev/null
  J=$(bash "$SRC/slurm/submit.sh" --ranks 2 --time 00:05:00 "$CONFIG" "$WORK/job")
  wait_done "$J" 120 || { show_logs "$WORK/job"; fail "job $J did not finish"; }
  [[ $(state "$J") == COMPLETED ]] || { show_logs "$WORK/job"; fail "job $J: $(state "$J")"; }
  grep -q "runner exited 0" "$WORK/job/logs/slurm-$J.out" || fail "no runner exit line in the job log"
  "$BIN" compare "$WORK/plain/results.h5" "$WORK/job/results.h5" || fail "sbatch results differ from mpirun's"
  pass "sbatch on 2 tasks: completed, results equal a plain mpirun run"
  ;;
requeue)
  CONFIG=$SRC/tests/configs/good/slurm.yaml
  expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/plain" --log-level warn > /dev/null
  J=$(bash "$SRC/slurm/submit.sh" --ranks 2 --time 00:05:00 "$CONFIG" "$WORK/job")
  wait_state "$J" RUNNING 60 || fail "job $J never ran"
  for _ in $(seq 150); do
    (($(cat "$WORK/job/ledger.jsonl" 2> /dev/null | wc -l) >= 20)) && break
    sleep 0.2
  done
  before=$(wc -l < "$WORK/job/ledger.jsonl")
  scontrol requeue "$J"
  wait_done "$J" 180 || { show_logs "$WORK/job"; fail "job $J did not finish after the requeue"; }
  [[ $(state "$J") == COMPLETED ]] || { show_logs "$WORK/job"; fail "job $J: $(state "$J")"; }
  (($(field "$J" Restarts) >= 1)) || fail "job $J was not restarted"
  check_ledger_once "$WORK/job/ledger.jsonl" 86
  "$BIN" compare "$WORK/plain/results.h5" "$WORK/job/results.h5" || fail "requeued results differ"
  resumed=$(h5_value "$WORK/job/results.h5" meta/resumed_tasks)
  ((resumed >= before - 2)) || fail "only $resumed tasks resumed (the ledger had $before lines)"
  pass "requeued after $before tasks: restarted $(field "$J" Restarts) time(s), resumed $resumed, none twice, results equal"
  ;;
timelimit)
  CONFIG=$WORK/long.yaml
  sed -e 's/range: \[0, 80\]/range: [0, 180]/' "$SRC/tests/configs/good/slurm.yaml" > "$CONFIG"
  J=$(bash "$SRC/slurm/submit.sh" --ranks 2 --time 00:01:00 --signal 20 "$CONFIG" "$WORK/job")
  wait_done "$J" 280 || { show_logs "$WORK/job"; fail "job $J did not finish"; }
  cat "$WORK"/job/logs/slurm-*.out > "$WORK/log.txt"
  [[ $(state "$J") == COMPLETED ]] || { cat "$WORK/log.txt"; fail "job $J: $(state "$J")"; }
  grep -q "got SIGUSR1" "$WORK/log.txt" || { cat "$WORK/log.txt"; fail "no USR1 before the limit"; }
  grep -q "runner exited 75" "$WORK/log.txt" || fail "the runner did not stop cleanly (75)"
  grep -q "requeueing" "$WORK/log.txt" || fail "the job did not requeue itself"
  ! grep -q "DUE TO TIME LIMIT" "$WORK/log.txt" || fail "the time limit killed the job"
  check_ledger_once "$WORK/job/ledger.jsonl" 186 || { cat "$WORK/log.txt"; fail "the ledger is incomplete"; }
  pass "time limit: USR1 before it, clean stop (75), requeued by the job itself $(field "$J" Restarts) time(s), completed"
  ;;
stop)
  CONFIG=$WORK/long.yaml
  sed -e 's/range: \[0, 80\]/range: [0, 180]/' "$SRC/tests/configs/good/slurm.yaml" > "$CONFIG"
  J=$(bash "$SRC/slurm/submit.sh" --ranks 2 --time 00:05:00 "$CONFIG" "$WORK/job")
  ledger_lines() { cat "$WORK/job/ledger.jsonl" 2> /dev/null | wc -l || true; }
  clean_stops() { cat "$WORK"/job/logs/slurm-*.out 2> /dev/null | grep -c "runner exited 75" || true; }
  stops=0
  for sig in TERM INT; do
    wait_running "$J" 150 || { show_logs "$WORK/job"; fail "job $J is not running before SIG$sig"; }
    lines=$(ledger_lines)
    for _ in $(seq 150); do (($(ledger_lines) >= lines + 10)) && break; sleep 0.2; done
    # (A job that has just started or requeued may not take signals for a moment.)
    for _ in $(seq 20); do scancel --batch --signal="$sig" "$J" 2> /dev/null && break; sleep 0.5; done
    stops=$((stops + 1))
    for _ in $(seq 300); do (($(clean_stops) >= stops)) && break; sleep 0.2; done
    (($(clean_stops) >= stops)) || { show_logs "$WORK/job"; fail "SIG$sig: the runner did not stop cleanly (75)"; }
  done
  wait_done "$J" 240 || { show_logs "$WORK/job"; fail "job $J did not finish"; }
  cat "$WORK"/job/logs/slurm-*.out > "$WORK/log.txt"
  [[ $(state "$J") == COMPLETED ]] || { cat "$WORK/log.txt"; fail "job $J: $(state "$J")"; }
  grep -q "got SIGTERM" "$WORK/log.txt" && grep -q "got SIGINT" "$WORK/log.txt" \
    || { cat "$WORK/log.txt"; fail "a signal did not reach the batch script"; }
  check_ledger_once "$WORK/job/ledger.jsonl" 186 || { cat "$WORK/log.txt"; fail "the ledger is incomplete"; }
  pass "SIGTERM and SIGINT to the job: clean stops (75), requeued $(field "$J" Restarts) time(s), completed"
  ;;
array)
  CONFIG=$SRC/configs/smoke.yaml
  read -r J C < <(bash "$SRC/slurm/submit.sh" --ranks 1 --time 00:05:00 --seeds 3 "$CONFIG" "$WORK/seeds")
  wait_done "$C" 240 || { show_logs "$WORK/seeds"; fail "the combine job $C did not finish"; }
  [[ $(state "$C") == COMPLETED ]] || { show_logs "$WORK/seeds"; fail "combine job $C: $(state "$C")"; }
  for s in 1 2 3; do
    [[ $(h5_value "$WORK/seeds/seed$s/results.h5" meta/seed) == "$s" ]] || fail "seed$s ran with another seed"
  done
  "$PY" - "$WORK/seeds/combined/combined.h5" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
s = {k: f["combine/spread"][k][:] for k in f["combine/spread"]}
assert sorted(f["combine/sources/seed"][:]) == [1, 2, 3]
r = (s["table"] == b"/alignment/analysis/correlations") & (s["column"] == b"pearson_r")
assert r.sum() == 8 and all(s["runs"][r] == 3), s["runs"][r]
assert (s["sd"][r] > 0).all(), "three seeds gave identical correlations"
assert (s["min"][r] <= s["mean"][r]).all() and (s["mean"][r] <= s["max"][r]).all()
print(f"combined: {len(s['table'])} statistics over 3 seeds")
PYEOF
  pass "a 3-seed job array and its dependent combine job"
  ;;
*) fail "unknown scenario $SCENARIO" ;;
esac
