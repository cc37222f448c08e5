# Exit codes and what the CLI refuses: bad configs write nothing, a ledger is never
# overwritten without --resume.
source "$(dirname "$0")/lib.sh"
BAD=$SRC/tests/configs/bad/08-cycle.yaml
expect_code 2 "$BIN" validate "$BAD"
expect_code 2 mpi 2 run "$BAD" --out "$WORK/bad"
[[ ! -e $WORK/bad ]] || fail "a rejected config wrote to --out"
msg=$("$BIN" validate "$BAD" 2>&1 || true)
[[ $(printf '%s\n' "$msg" | wc -l) == 1 ]] || fail "error is not one line: $msg"
expect_code 0 "$BIN" validate "$SRC/configs/demo.yaml"
"$BIN" plan "$SRC/tests/configs/good/dag.yaml" > "$WORK/plan.txt"
grep -q "critical path: 4 tasks, cost 6" "$WORK/plan.txt" || { cat "$WORK/plan.txt"; fail "plan's critical path"; }
grep -q "tasks per kind:   fail: 5  noop: 201  sleep: 100" "$WORK/plan.txt" || fail "plan's counts"
# plan --ranks simulates devices as a run places them: GPU tasks only where devices are.
cat > "$WORK/gpu.yaml" <<'EOF'
experiment: {name: g, seed: 1}
tasks:
  - {name: cpu, kind: noop, count: 4, cost: 1}
  - {name: gpu, kind: noop, count: 2, cost: 3, gpus: 1}
EOF
"$BIN" plan "$WORK/gpu.yaml" --ranks 2 > "$WORK/plan_nodev.txt" 2>&1 && fail "plan of GPU work on ranks without devices passed"
grep -q "cannot run: tasks.gpu: gpus: 1 needs 1 device" "$WORK/plan_nodev.txt" || { cat "$WORK/plan_nodev.txt"; fail "plan without devices: no reason"; }
"$BIN" plan "$WORK/gpu.yaml" --ranks 1,2 --devices 0 > "$WORK/plan_gpu.txt"
grep -Eq "^ +1 +10\.00 s" "$WORK/plan_gpu.txt" && grep -Eq "^ +2 +6\.00 s +6\.00 s +1\.67" "$WORK/plan_gpu.txt" \
  || { cat "$WORK/plan_gpu.txt"; fail "plan --devices: one GPU rank and one CPU rank take 6 s"; }
msg=$("$BIN" plan "$WORK/gpu.yaml" --devices "0,0" 2>&1) && fail "plan took a device named twice"
[[ $msg == *"--devices '0,0': device '0' is named twice"* ]] || fail "plan --devices 0,0: $msg"
expect_code 0 mpi 0 run "$SRC/configs/demo.yaml" --out "$WORK/demo" --log-level warn
expect_code 2 mpi 0 run "$SRC/configs/demo.yaml" --out "$WORK/demo" --log-level warn
expect_code 2 "$BIN" compare "$WORK/demo/results.h5" "$WORK/nonexistent.h5"
expect_code 0 "$BIN" compare "$WORK/demo/results.h5" "$WORK/demo/results.h5" --all
sed 's/seed: 20261130/seed: 7/' "$SRC/configs/demo.yaml" > "$WORK/demo7.yaml"
expect_code 0 mpi 0 run "$WORK/demo7.yaml" --out "$WORK/demo7" --log-level warn
expect_code 1 "$BIN" compare "$WORK/demo/results.h5" "$WORK/demo7/results.h5"
# The count of differing datasets is out of every dataset of either file.
mv "$WORK/demo7/results.h5" "$WORK/demo7.h5"; cp "$WORK/demo7.h5" "$WORK/demo7/results.h5"
"$PY" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); [f.move(k, 'x_' + k) for k in list(f.keys())]" "$WORK/demo7/results.h5"
line=$("$BIN" compare "$WORK/demo/results.h5" "$WORK/demo7/results.h5" | tail -1 || true)
read -r x _ y _ <<< "$line"
((x <= y)) || fail "compare counts $line"
mv "$WORK/demo7.h5" "$WORK/demo7/results.h5"
# A folder belongs to one experiment: --resume of another config is refused, the folder
# untouched; a change of runner: keys alone keeps the hash and resumes.
sums=$(cd "$WORK/demo" && sha256sum results.h5 ledger.jsonl .lock)
expect_code 2 mpi 0 run "$WORK/demo7.yaml" --out "$WORK/demo" --resume --log-level warn
[[ $(cd "$WORK/demo" && sha256sum results.h5 ledger.jsonl .lock) == "$sums" ]] \
  || fail "--resume of another config changed the folder"
sed 's/progress_interval: 2/progress_interval: 3/' "$SRC/configs/demo.yaml" > "$WORK/demo_runner.yaml"
expect_code 0 mpi 0 run "$WORK/demo_runner.yaml" --out "$WORK/demo" --resume --log-level warn
# One flipped byte in one ledger line's config hash: still this experiment's folder (most of
# its records say so); that record is not reused.
cp -r "$WORK/demo" "$WORK/flipped"
"$PY" - "$WORK/flipped/ledger.jsonl" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
at = lines[0].index('"config_hash":"') + len('"config_hash":"')
lines[0] = lines[0][:at] + ("0" if lines[0][at] != "0" else "1") + lines[0][at + 1:]
open(sys.argv[1], "w").write("".join(lines))
PY
expect_code 0 mpi 0 run "$WORK/demo_runner.yaml" --out "$WORK/flipped" --resume --log-level warn 2> "$WORK/flipped.err"
grep -q "1 record(s) carry another config hash" "$WORK/flipped.err" || { cat "$WORK/flipped.err"; fail "no warning on the flipped line"; }
# One flipped byte in status.json's config hash: the ledger's records decide, not status.json.
"$PY" - "$WORK/flipped/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["config_hash"] = ("0" if s["config_hash"][0] != "0" else "1") + s["config_hash"][1:]
json.dump(s, open(sys.argv[1], "w"))
PY
expect_code 0 mpi 0 run "$WORK/demo_runner.yaml" --out "$WORK/flipped" --resume --log-level warn 2> /dev/null
rm "$WORK/flipped/status.json"  # without it, the ledger's majority decides
expect_code 0 mpi 0 run "$WORK/demo_runner.yaml" --out "$WORK/flipped" --resume --log-level warn 2> /dev/null
# status of a file, and of a run whose results.h5 was removed.
expect_code 2 "$BIN" status "$WORK/demo/results.h5"
mv "$WORK/demo/results.h5" "$WORK/demo.h5"
"$BIN" status "$WORK/demo" | grep -q "^state: incomplete" || fail "status of a run without results.h5"
mv "$WORK/demo.h5" "$WORK/demo/results.h5"
expect_code 2 "$BIN" run
# A bad config is refused before MPI starts, as validate refuses it: with an MPI that could
# not start at all, the config's own error still comes back (exit 2).
{ cat "$SRC/configs/demo.yaml"; echo "frobnicate: 1"; } > "$WORK/unknown_key.yaml"
set +e; OMPI_MCA_pml=nonexistent "$BIN" run "$WORK/unknown_key.yaml" --out "$WORK/unknown_key" > "$WORK/unknown_key.txt" 2>&1; code=$?; set -e
[[ $code == 2 ]] && grep -q "frobnicate: unknown key" "$WORK/unknown_key.txt" && [[ ! -e $WORK/unknown_key ]] \
  || { cat "$WORK/unknown_key.txt"; fail "run of a config with an unknown key: exit $code"; }
expect_code 2 "$BIN" frobnicate
pass "CLI exit codes"
