# command tasks on 2 ranks: success on retry, a timeout, a failure that skips its
# dependents, and the statuses in /tasks and the ledger.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/cmd.yaml" <<'YAML'
experiment: {name: cmd, seed: 1}
tasks:
  - name: flaky          # fails on its first attempt, succeeds on the second
    kind: command
    grid: {n: [1, 2, 3]}
    retries: 1
    command: >-
      if [ ! -e {workdir}/tried ]; then touch {workdir}/tried; echo first try fails >&2; exit 9; fi;
      n={n}; echo '{{"square": '$((n * n))', "attempt": '{attempt}'}}' > {result}
    outputs: {square: int, attempt: int}
  - {name: slow, kind: command, command: "sleep 20", timeout: 0.5, retries: 0}
  - {name: broken, kind: command, command: "exit 4", retries: 2}
  - {name: after_broken, kind: noop, count: 2, after: [broken]}
  - {name: after_flaky, kind: noop, after: [flaky]}
YAML
expect_code 1 mpi 2 run "$WORK/cmd.yaml" --out "$WORK/out" --log-level warn
pycheck command_tasks failed_rows_keep_their_keys "$WORK/out"
# Resuming reruns only the failed ones (which fail again), never the done ones.
expect_code 1 mpi 2 run "$WORK/cmd.yaml" --out "$WORK/out" --resume --log-level warn
pycheck command_tasks resume_reruns_only_the_failed "$WORK/out/ledger.jsonl"
# Every process a task starts ends with it: a timed-out task's child that ignores SIGTERM
# is killed after the grace period, a finished task's background child is ended, and a
# group with keep_background: true keeps its daemon.
cat > "$WORK/procs.yaml" <<'YAML'
experiment: {name: procs, seed: 1}
runner: {log_limit_mb: 0.1}
tasks:
  - {name: chatty, kind: command,
     command: "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo the end; echo '{{}}' > {result}"}
  - {name: stubborn, kind: command, timeout: 0.5, retries: 0,
     command: "sh -c 'trap \"\" TERM; exec sleep 102' & wait"}
  - {name: bg, kind: command, command: "(sleep 3; touch {out}/bg_survived) & echo '{{}}' > {result}"}
  - {name: daemon, kind: command, keep_background: true,
     command: "(sleep 2; touch {out}/daemon_ran) & echo '{{}}' > {result}"}
YAML
expect_code 1 mpi 2 run "$WORK/procs.yaml" --out "$WORK/procs" --log-level error
sleep 3.5
! pgrep -f "sleep 102" > /dev/null || fail "a timed-out task's child outlived it: $(pgrep -af 'sleep 102')"
[[ ! -e $WORK/procs/bg_survived ]] || fail "a finished task's background child outlived it"
[[ -e $WORK/procs/daemon_ran ]] || fail "keep_background: the daemon did not run to its end"
# A chatty task's log keeps its head and tail within runner.log_limit_mb, saying what was cut.
log=$(ls "$WORK"/procs/logs/tasks/chatty-*.log)
(( $(stat -c %s "$log") < 101000 )) || fail "the chatty log is $(stat -c %s "$log") bytes"
grep -aq "bytes of output cut here" "$log" && tail -n 1 "$log" | grep -q "the end" \
  || fail "the chatty log lacks the cut note or its tail"
# When a rank dies by SIGKILL, every process of its command tasks dies too (the guard
# between them learns it from the kernel), even one that ignores SIGTERM.
cat > "$WORK/orphans.yaml" <<'YAML'
experiment: {name: orphans, seed: 1}
tasks:
  - {name: long, kind: command, count: 3,
     command: "(trap '' TERM; exec sleep 103) & sh -c \"trap '' TERM; sleep 104\"; echo '{{}}' > {result}"}
YAML
setsid bash -c 'exec mpirun -n 2 --oversubscribe "$0" run "$1" --out "$2" --log-level error' \
    "$BIN" "$WORK/orphans.yaml" "$WORK/orphans" > "$WORK/orphans.log" 2>&1 &
pid=$!
for _ in $(seq 100); do pgrep -f "sleep 104" > /dev/null && break; sleep 0.2; done
pgrep -f "sleep 104" > /dev/null || fail "the long tasks did not start: $(cat "$WORK/orphans.log")"
kill -KILL -- -"$pid" $(pgrep -f -- "--out $WORK/orphans" || true) 2>/dev/null || true
wait "$pid" 2>/dev/null || true
for _ in $(seq 40); do pgrep -f "sleep 10[34]" > /dev/null || break; sleep 0.2; done
! pgrep -f "sleep 10[34]" > /dev/null || fail "a killed rank's command children outlived it: $(pgrep -af 'sleep 10[34]')"
pass "command tasks: retry, timeout, failure, skips, resume, processes ended with their task and rank"
