# SIGUSR1 / SIGTERM: stop dispatching, finish or abandon tasks in flight, close the file,
# exit 75; a second signal exits at once with 76; --resume completes with equal results.
source "$(dirname "$0")/lib.sh"
CONFIG=$SRC/tests/configs/good/resume.yaml
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/ref" --log-level warn

start_job() {  # start_job OUT CONFIG [ARGS...]: mpirun in its own process group
  local out=$1 config=$2; shift 2
  setsid bash -c 'exec mpirun -n 2 --oversubscribe "$0" run "$1" --out "$2" --log-level info "${@:3}"' \
      "$BIN" "$config" "$out" "$@" > "$out.log" 2>&1 &
  JOB=$!
}
rank_pids() { pgrep -f -- "--out $1 " | while read -r p; do [[ $(ps -o comm= -p "$p") == compatbench ]] && echo "$p"; done; }

# 1. SIGUSR1 to mpirun (forwarded to the ranks), finish policy.
start_job "$WORK/usr1" "$CONFIG"
sleep 1.0
kill -USR1 "$JOB"
set +e; wait "$JOB"; code=$?; set -e
[[ $code == 75 ]] || { cat "$WORK/usr1.log"; fail "SIGUSR1: exit $code, want 75"; }
[[ $(h5_value "$WORK/usr1/results.h5" meta/status) == interrupted ]] || fail "SIGUSR1: status not interrupted"
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/usr1" --resume --log-level warn
check_ledger_once "$WORK/usr1/ledger.jsonl" 540
"$BIN" compare "$WORK/ref/results.h5" "$WORK/usr1/results.h5" || fail "SIGUSR1: resumed results differ"
pass "SIGUSR1 -> 75, resume completes, results equal"

# 2. SIGTERM straight to every rank (what SLURM does at a time limit).
start_job "$WORK/term" "$CONFIG"
sleep 1.0
pids=$(rank_pids "$WORK/term")
[[ -n $pids ]] || fail "no rank processes found"
kill -TERM $pids
set +e; wait "$JOB"; code=$?; set -e
[[ $code == 75 ]] || { cat "$WORK/term.log"; fail "SIGTERM: exit $code, want 75"; }
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/term" --resume --log-level warn
"$BIN" compare "$WORK/ref/results.h5" "$WORK/term/results.h5" || fail "SIGTERM: resumed results differ"
pass "SIGTERM to the ranks -> 75, resume completes, results equal"

# 3. abandon policy with long tasks: the stop does not wait for them.
cat > "$WORK/long.yaml" <<YAML
experiment: {name: long, seed: 1}
runner: {on_signal: abandon}
tasks:
  - {name: quick, kind: noop, count: 4}
  - {name: long, kind: sleep, seconds: 30, count: 4, after: [quick]}
YAML
start_job "$WORK/abandon" "$WORK/long.yaml"
sleep 1.5
t0=$(date +%s%N)
kill -TERM $(rank_pids "$WORK/abandon")
set +e; wait "$JOB"; code=$?; set -e
took_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[[ $code == 75 ]] || { cat "$WORK/abandon.log"; fail "abandon: exit $code, want 75"; }
(( took_ms < 8000 )) || fail "abandon took $took_ms ms"
check_ledger_once "$WORK/abandon/ledger.jsonl" 4
pass "abandon: stopped in $took_ms ms with 4 quick tasks recorded, 4 long ones left for --resume"

# 4. a second signal exits at once (finish policy would otherwise wait 30 s).
sed 's/abandon/finish/' "$WORK/long.yaml" > "$WORK/long-finish.yaml"
start_job "$WORK/twice" "$WORK/long-finish.yaml"
sleep 1.5
pids=$(rank_pids "$WORK/twice")
kill -TERM $pids; sleep 0.5; kill -TERM $pids
set +e; wait "$JOB"; code=$?; set -e
[[ $code == 76 ]] || { cat "$WORK/twice.log"; fail "second signal: exit $code, want 76"; }
check_ledger_once "$WORK/twice/ledger.jsonl" 4
pass "second signal -> 76 at once; the ledger is intact"

# 5. SIGTERM or SIGINT to mpirun itself: Open MPI ends the job, its ranks stop cleanly, and
# mpirun exits 1 whatever they returned. `status --exit-code` gives the run's own code (75).
for sig in TERM INT; do
  start_job "$WORK/mpirun-$sig" "$CONFIG"
  sleep 1.0
  kill -"$sig" "$JOB"
  set +e; wait "$JOB"; code=$?; set -e
  [[ $code == 1 ]] || echo "note: mpirun exited $code on SIG$sig (Open MPI 4.1 exits 1)"
  expect_code 75 "$BIN" status "$WORK/mpirun-$sig" --exit-code > /dev/null
  expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/mpirun-$sig" --resume --log-level warn
  "$BIN" compare "$WORK/ref/results.h5" "$WORK/mpirun-$sig/results.h5" || fail "SIG$sig: resumed results differ"
done
expect_code 0 "$BIN" status "$WORK/mpirun-TERM" --exit-code > /dev/null
pass "SIGTERM/SIGINT to mpirun: the run stopped cleanly (status --exit-code 75), resume completes"

# 6. The same with tasks that outlast mpirun's one second between passing SIGTERM on and
# killing the ranks: the tasks in flight are lost, but the ranks had recorded the signal at
# once, so `status --exit-code` still gives 75 (stopped by a signal) and says what was lost;
# --resume completes.
sed 's/seconds: 30/seconds: 4/' "$WORK/long-finish.yaml" > "$WORK/long4.yaml"
# Until the 4 quick tasks are in the ledger (the long ones then in flight), not a fixed
# sleep: a busy machine starts the ranks late.
wait_quick() {
  for _ in $(seq 300); do (($(cat "$1/ledger.jsonl" 2> /dev/null | wc -l) >= 4)) && break; sleep 0.2; done
  sleep 0.5
}
start_job "$WORK/mpirun-long" "$WORK/long4.yaml"
wait_quick "$WORK/mpirun-long"
kill -TERM "$JOB"
set +e; wait "$JOB"; set -e
expect_code 75 "$BIN" status "$WORK/mpirun-long" --exit-code > /dev/null
"$BIN" status "$WORK/mpirun-long" | grep -q "tasks in flight were lost" \
  || fail "mpirun killed the ranks: status does not say what was lost"
expect_code 0 mpi 2 run "$WORK/long4.yaml" --out "$WORK/mpirun-long" --resume --log-level warn
check_ledger_once "$WORK/mpirun-long/ledger.jsonl" 8
pass "SIGTERM to mpirun with long tasks: status --exit-code 75, the loss named, resume completes"

# 7. scripts/launch.sh: Ctrl-C, SIGTERM or a dropped session reach the ranks as SIGUSR1, so
# the tasks in flight finish and the run exits 75 itself.
for sig in INT TERM HUP; do
  out=$WORK/launch-$sig
  # (A background job of a script starts with SIGINT ignored: launch.sh resets it itself.)
  setsid bash "$SRC/scripts/launch.sh" -n 2 --oversubscribe "$BIN" run "$WORK/long4.yaml" \
    --out "$out" --log-level info > "$out.log" 2>&1 &
  JOB=$!
  wait_quick "$out"
  kill -"$sig" "$JOB"
  [[ $sig == HUP ]] && { sleep 0.2; kill -HUP "$JOB"; }  # a dropped session: one stop
  set +e; wait "$JOB"; code=$?; set -e
  [[ $code == 75 ]] || { cat "$out.log"; fail "launch.sh, SIG$sig: exit $code, want 75"; }
  check_ledger_once "$out/ledger.jsonl" 6  # 4 quick tasks and the 2 long ones in flight
  expect_code 0 mpi 2 run "$WORK/long4.yaml" --out "$out" --resume --log-level warn
  check_ledger_once "$out/ledger.jsonl" 8
done
pass "scripts/launch.sh: SIGINT, SIGTERM or SIGHUP (twice) -> tasks in flight finish, exit 75, resume completes"
