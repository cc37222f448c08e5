# Results on N ranks equal those of a plain single process, byte for byte.
source "$(dirname "$0")/lib.sh"
N=${3:?ranks}
CONFIG=$SRC/tests/configs/good/dag.yaml
expect_code 0 mpi 0 run "$CONFIG" --out "$WORK/plain" --log-level warn
expect_code 0 mpi "$N" run "$CONFIG" --out "$WORK/n$N" --log-level warn
"$BIN" compare "$WORK/plain/results.h5" "$WORK/n$N/results.h5" || fail "results on $N ranks differ"
[[ $(h5_value "$WORK/n$N/results.h5" meta/ranks) == "$N" ]] || fail "/meta/ranks is not $N"
[[ $(h5_value "$WORK/n$N/results.h5" meta/status) == complete ]] || fail "status not complete"
pycheck determinism every_rank_worked "$WORK/n$N/results.h5" "$N"
pass "dag on $N ranks == plain process; every rank worked"
