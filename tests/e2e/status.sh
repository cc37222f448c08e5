# `compatbench status` on a run folder while the run holds it, after the run was killed
# (with a ledger cut mid-line), once the resumed run has finished (a failed command task
# with its log, skipped dependents), after a run that ended in its final writes, and on
# folders that are not runs.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/status.yaml" <<'YAML'
experiment: {name: status, seed: 1}
runner: {progress_interval: 0.2}
tasks:
  - {name: slow, kind: sleep, count: 8, seconds: 1.0, cost: 1}
  - {name: quick, kind: sleep, count: 40, seconds: 0.05, cost: 0.05, after: [slow]}
  - {name: broken, kind: command, command: "echo disk full >&2; exit 4", cost: 0.01}
  - {name: after_broken, kind: noop, count: 3, after: [broken]}
YAML
OUT=$WORK/out
setsid bash -c 'exec mpirun -n 2 --oversubscribe "$0" run "$1" --out "$2" --log-level warn' \
    "$BIN" "$WORK/status.yaml" "$OUT" > "$WORK/run.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [[ -s $OUT/ledger.jsonl && -f $OUT/status.json ]] && break
  sleep 0.1
done
sleep 1.2
# While it runs: from outside the run, in text and as JSON.
"$BIN" status "$OUT" > "$WORK/live.txt" || fail "status on a running run: exit $?"
grep -q "a run holds the folder" "$WORK/live.txt" || { cat "$WORK/live.txt"; fail "not seen as running"; }
grep -q "^ETA " "$WORK/live.txt" || { cat "$WORK/live.txt"; fail "no ETA"; }
"$BIN" status "$OUT" --json > "$WORK/live.json"
pycheck status live_status "$WORK/live.json"
# Killed mid-run, its ledger cut mid-line: status says so and lists what was running.
kill -KILL -- -"$pid" $(pgrep -f -- "--out $OUT" || true) 2>/dev/null || true
wait "$pid" 2>/dev/null || true
# A hand-edited record with fields of the wrong types, then a line cut mid-write.
hash=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['config_hash'])" "$OUT/status.json")
printf '{"id":"quick/1","status":"failed","config_hash":"%s","rank":"one","attempt":null,"error":7}\n' \
    "$hash" >> "$OUT/ledger.jsonl"
printf '{"id":"quick/3","status":"do' >> "$OUT/ledger.jsonl"
"$BIN" status "$OUT" > "$WORK/killed.txt" || fail "status on a killed run: exit $?"
grep -q "^state: stopped" "$WORK/killed.txt" || { cat "$WORK/killed.txt"; fail "a killed run not seen as stopped"; }
grep -q "last line is cut off" "$WORK/killed.txt" || { cat "$WORK/killed.txt"; fail "no word of the torn line"; }
grep -q "were running when the run stopped" "$WORK/killed.txt" || { cat "$WORK/killed.txt"; fail "no interrupted tasks"; }
grep -q "a resume would take about" "$WORK/killed.txt" || { cat "$WORK/killed.txt"; fail "no resume estimate"; }
# Resumed to the end: complete but for the broken command and what hangs on it.
expect_code 1 mpi 2 run "$WORK/status.yaml" --out "$OUT" --resume --log-level error > /dev/null
"$BIN" status "$OUT" --json > "$WORK/done.json"
"$BIN" status "$OUT" > "$WORK/done.txt"
pycheck status finished_status "$WORK/done.json"
grep -q "last errors:" "$WORK/done.txt" || fail "no errors listed"
# status.json's own final state, written once results.h5 was closed.
"$PY" -c "import json,sys; s=json.load(open(sys.argv[1]))['state']; assert s == 'failed', s" "$OUT/status.json" ||
  fail "status.json does not end 'failed'"
# A run that ended in its final writes (status.json still says "finishing"): stopped, exit 3,
# whatever results.h5 holds.
cp -r "$OUT" "$WORK/finishing"
"$PY" -c "import json,sys; p=sys.argv[1]; s=json.load(open(p)); s['state']='finishing'; json.dump(s, open(p,'w'))" \
  "$WORK/finishing/status.json"
expect_code 3 "$BIN" status "$WORK/finishing" --exit-code > "$WORK/finishing.txt"
grep -q "ended while writing results.h5" "$WORK/finishing.txt" || { cat "$WORK/finishing.txt"; fail "no note on the final writes"; }
# A run of the same config in another folder starts from the costs that the runs before left
# in the cost cache (exec/cost_cache.h; lib.sh gives each test its own).
expect_code 1 mpi 2 run "$WORK/status.yaml" --out "$WORK/again" --log-level info > "$WORK/again.log" 2>&1
grep -q "cost cache $COMPATBENCH_COST_CACHE: 2 of 4 groups' costs from earlier runs" "$WORK/again.log" ||
  { cat "$WORK/again.log"; fail "the cost cache was not read"; }
grep -q "2 priced from earlier runs)" "$WORK/again.log" || { cat "$WORK/again.log"; fail "no ETA from the cache"; }
# Not a run folder, no folder, and a damaged status.json.
mkdir "$WORK/empty"
expect_code 2 "$BIN" status "$WORK/empty"
msg=$("$BIN" status "$WORK/empty" 2>&1 || true)
[[ $msg == *"not a compatbench run folder"* ]] || fail "empty folder message: $msg"
expect_code 2 "$BIN" status "$WORK/missing"
echo "{ not json" > "$OUT/status.json"
"$BIN" status "$OUT" > "$WORK/damaged.txt" || fail "status with a damaged status.json: exit $?"
grep -q "not a status file" "$WORK/damaged.txt" || { cat "$WORK/damaged.txt"; fail "damaged status.json not named"; }
pass "status: running, killed with a torn ledger line, finished with errors, costs remembered, not a run"
