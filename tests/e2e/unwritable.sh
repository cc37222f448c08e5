# A file the run writes turns unwritable while it runs (chattr +i: every write fails, for
# root too): the ledger (rank 0 appends to it) or results.h5 (every rank writes its rows;
# HDF5 reports the error). On 1, 2 and 3 ranks the run stops within seconds with exit 3
# and the reason, whichever rank meets it; the ledger holds whole records only; status
# sees a stopped run; no rank is left. Once the file is writable again, --resume ends the
# run with the results of an uninterrupted one. Skipped (77) where chattr cannot work.
source "$(dirname "$0")/lib.sh"
touch "$WORK/probe" && chattr +i "$WORK/probe" 2> /dev/null \
  || { echo "SKIP: chattr +i does not work here (needs root on ext4, xfs or btrfs)"; exit 77; }
chattr -i "$WORK/probe"
trap 'chattr -R -i "$WORK" 2> /dev/null; rm -rf "$WORK"' EXIT
cat > "$WORK/slow.yaml" <<'YAML'
experiment: {name: slow, seed: 3}
runner: {row_flush_interval: 0.1, fsync_interval: 0}
tasks:
  - {name: work, kind: sleep, count: 200, seconds: 0.04}
YAML
expect_code 0 mpi 2 run "$WORK/slow.yaml" --out "$WORK/ref" --log-level error
for target in ledger.jsonl results.h5; do
  for n in 1 2 3; do
    OUT=$WORK/$target-$n
    mpirun -n "$n" --oversubscribe "$BIN" run "$WORK/slow.yaml" --out "$OUT" --log-level error \
      > "$WORK/out.txt" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
      [[ -f $OUT/$target && $(wc -l < "$OUT/ledger.jsonl" 2> /dev/null || echo 0) -ge 20 ]] && break
      sleep 0.05
    done
    chattr +i "$OUT/$target"
    start=$(date +%s)
    set +e; wait "$pid"; code=$?; set -e
    took=$(( $(date +%s) - start ))
    chattr -i "$OUT/$target"
    [[ $code == 3 ]] || { tail -n 5 "$WORK/out.txt"; fail "$target, $n rank(s): exit $code, expected 3"; }
    ((took < 15)) || fail "$target, $n rank(s): took $took s to stop"
    grep -q "Operation not permitted\|HDF5\|cannot write" "$WORK/out.txt" \
      || { cat "$WORK/out.txt"; fail "$target, $n rank(s): no reason given"; }
    check_stopped "$OUT" "$target, $n rank(s)" stopped
    expect_code 0 mpi "$n" run "$WORK/slow.yaml" --out "$OUT" --resume --log-level error
    "$BIN" compare "$WORK/ref/results.h5" "$OUT/results.h5" > /dev/null \
      || fail "$target, $n rank(s): resumed results differ from an uninterrupted run"
    echo "$target unwritable on $n rank(s): exit 3 after $took s; resumed to equal results"
  done
done
pass "an unwritable ledger or results.h5 stops the run (exit 3) within seconds on 1, 2 and 3 ranks; nothing finished is lost"
