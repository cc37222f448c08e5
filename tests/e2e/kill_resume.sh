# SIGKILL the whole job at several points, resume each time; at the end every task ran to
# completion exactly once (by the ledger) and results equal an uninterrupted run.
source "$(dirname "$0")/lib.sh"
CONFIG=$SRC/tests/configs/good/resume.yaml
expect_code 0 mpi 2 run "$CONFIG" --out "$WORK/ref" --log-level warn
OUT=$WORK/killed
kills=0
for delay in 0.5 0.7 0.9 1.1; do
  flag=(); [[ -f $OUT/ledger.jsonl ]] && flag=(--resume)
  setsid bash -c 'exec mpirun -n 2 --oversubscribe "$0" run "$1" --out "$2" --log-level warn "${@:3}"' \
      "$BIN" "$CONFIG" "$OUT" "${flag[@]}" > "$WORK/run.log" 2>&1 &
  pid=$!
  sleep "$delay"
  if kill -0 "$pid" 2>/dev/null; then
    # The launcher and every rank at once (Open MPI gives ranks process groups of their
    # own; a batch system kills the job's whole cgroup).
    kill -KILL -- -"$pid" $(pgrep -f -- "--out $OUT " || true) 2>/dev/null || true
    kills=$((kills + 1))
  fi
  wait "$pid" 2>/dev/null || true
  echo "after ${delay} s: $(cat "$OUT/ledger.jsonl" 2>/dev/null | wc -l) ledger lines"
  sleep 0.2
done
(( kills >= 4 )) || fail "the job finished before it could be killed four times ($kills kills)"
[[ -f $OUT/ledger.jsonl ]] || fail "no ledger after the kills"
before=$(wc -l < "$OUT/ledger.jsonl")
expect_code 0 mpi 2 run "$CONFIG" --out "$OUT" --resume --log-level warn
check_ledger_once "$OUT/ledger.jsonl" 540
"$BIN" compare "$WORK/ref/results.h5" "$OUT/results.h5" || fail "resumed results differ"
resumed=$(h5_value "$OUT/results.h5" meta/resumed_tasks)
(( resumed > 0 && resumed < 540 )) || fail "resumed_tasks=$resumed"
pass "$kills kills, $before ledger lines before the last resume, $resumed tasks resumed; results equal"
