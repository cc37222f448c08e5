# Results on N ranks equal those of a plain single process, byte for byte.
source "$(dirname "$0")/lib.sh"
N=${3:?ranks}
CONFIG=$SRC/tests/configs/good/dag.yaml
expect_code 0 mpi 0 run "$CONFIG" --out "$WORK/plain" --log-level warn
expect_code 0 mpi "$N" run "$CONFIG" --out "$WORK/n$N" --log-level warn
"$BIN" compare "$WORK/plain/results.h5" "$WORK/n$N/results.h5" || fail "results on $N ranks differ"
[[ $(h5_value "$WORK/n$N/results.h5" meta/ranks) == "$N" ]] || fail "/meta/ranks is not $N"
[[ $(h5_value "$WORK/n$N/results.h5" meta/status) == complete ]] || fail "status not complete"
"$PY" - "$WORK/n$N/results.h5" "$N" <<'PYEOF'
import h5py, sys
f = h5py.File(sys.argv[1], "r")
ranks = set(f["tasks/rank"][:].tolist())
assert ranks == set(range(int(sys.argv[2]))), f"not every rank ran tasks: {ranks}"
assert all(s == b"done" for s in f["tasks/status"][:]), "not every task done"
assert list(f["flaky/attempt"][:]) == [2] * 5, "flaky tasks should succeed on attempt 2"
assert f["dag/analysis/correlations/n"][0] == 100
PYEOF
pass "dag on $N ranks == plain process; every rank worked"
