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
# Daemons that leave the task's group (setsid; a new session from Python) end with their
# task; with keep_background they are kept.
cat > "$WORK/daemons.yaml" <<'YAML'
experiment: {name: daemons, seed: 1}
tasks:
  - {name: d, kind: command, count: 2,
     command: "setsid sleep 111 & /usr/bin/python3 -c 'import subprocess; subprocess.Popen([\"sleep\", \"112\"], start_new_session=True)'; echo '{{}}' > {result}"}
  - {name: kept, kind: command, keep_background: true, command: "setsid sleep 113 & echo '{{}}' > {result}"}
YAML
expect_code 0 mpi 2 run "$WORK/daemons.yaml" --out "$WORK/daemons" --log-level warn
! pgrep -f "sleep 11[12]" > /dev/null || fail "a daemon outlived its task: $(pgrep -af 'sleep 11[12]')"
pgrep -f "sleep 113" > /dev/null || fail "keep_background: the daemon was ended"
pkill -f "sleep 113" || true
# A timeout ends what the task left outside its group too, even when the shell ignores
# SIGTERM (the guard sweeps before it ends) and with keep_background: plain, 1 and 2 ranks.
cat > "$WORK/late.yaml" <<'YAML'
experiment: {name: late, seed: 1}
tasks:
  - {name: deaf, kind: command, timeout: 2, retries: 0, command: "trap '' TERM; setsid sleep 431 & sleep 1000"}
  - {name: kept, kind: command, timeout: 2, retries: 0, keep_background: true, command: "setsid sleep 432 & sleep 1000"}
YAML
for n in 0 1 2; do
  expect_code 1 mpi "$n" run "$WORK/late.yaml" --out "$WORK/late$n" --log-level error
  ! pgrep -f "sleep 43[12]" > /dev/null || fail "a timed-out task's daemon outlived it ($n ranks): $(pgrep -af 'sleep 43[12]')"
done
# Hostile values in every context a placeholder may stand in (a bare word, a command
# substitution, after a comment with an apostrophe, after a here-document) run no code;
# the contexts where the shell would read a value as code are refused by name.
H=$WORK/hostile
mkdir -p "$H"
cat > "$H/ok.yaml" <<YAML
experiment: {name: hostile, seed: 1}
tasks:
  - name: h
    kind: command
    grid: {v: ["\$(touch $H/pwned1)", "\`touch $H/pwned2\`", "x'; touch $H/pwned3; echo '", "a\nb"]}
    command: |
      # it's a comment with an apostrophe, then a here-document with none
      cat <<EOF > {workdir}/doc
      a body, \$HOME and all
      EOF
      printf %s {v} > {workdir}/bare; printf %s "\$(printf %s {v})" > {workdir}/sub
      echo '{{}}' > {result}
YAML
expect_code 0 mpi 2 run "$H/ok.yaml" --out "$H/out" --log-level warn
ls "$H"/pwned* 2> /dev/null && fail "a value ran as code"
"$PY" - "$H/out/work" <<'PY'
import glob, sys
bare = sorted(open(p).read() for p in glob.glob(sys.argv[1] + "/*/bare"))
sub = sorted(open(p).read() for p in glob.glob(sys.argv[1] + "/*/sub"))
assert len(bare) == 4 and bare == sub, (bare, sub)
assert any(v.startswith("$(touch") for v in bare) and any("\n" in v for v in bare), bare
PY
for context in "cat <<EOF > {result}\n{v}\nEOF|in a here-document" \
               "echo \$(( {v} + 1 )) > {result}|inside \$(( ))" \
               "echo '{{}}' > {result} # {v}|in a comment" "echo \"{v}\" > {result}|inside quotes"; do
  printf 'experiment: {name: bad, seed: 1}\ntasks:\n  - {name: h, kind: command, grid: {v: [1]}, command: "%s"}\n' \
    "$(printf '%s' "${context%%|*}" | sed 's/"/\\"/g')" > "$H/bad.yaml"
  expect_code 2 "$BIN" validate "$H/bad.yaml" > "$H/bad.txt" 2>&1
  grep -qF "${context##*|}" "$H/bad.txt" || { cat "$H/bad.yaml" "$H/bad.txt"; fail "not refused: ${context%%|*}"; }
done
pass "command tasks: retry, timeout, failure, skips, resume, processes ended with their task and rank, no value run as code"
