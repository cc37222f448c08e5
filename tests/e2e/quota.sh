# A user over quota never hangs a run. The quota is played by a shim (tests/faults/failwrite.c,
# LD_PRELOAD) that fails writes to results.h5 with EDQUOT while the file system reports room,
# so the free-space checks pass. On 1, 2 and 3 ranks:
#  - failing from the first write: the results file's creation fails on rank 0 (or, on several
#    ranks, a worker's first row write may fail first), which ends the job (exit 3) at once,
#    naming what failed; no rank waits in H5Fclose;
#  - failing in the final writes: HDF5 itself leaves the ranks in different barriers; the
#    stall watchdog (runner.stall_timeout, 5 s here) ends the job with exit 3, saying why;
#    with the default 120 s, the rank that met the error ends it 5 s after (MPI-IO tells it);
#  - failing on one worker alone in its mid-run row writes (2 and 3 ranks): the coordinator
#    ends the job at the worker's word, and status says stopped, not interrupted.
# After each, the ledger is whole, status sees a run that is over, no rank is left, and
# --resume without the shim gives the results of a clean run, byte for byte.
source "$(dirname "$0")/lib.sh"
SHIM=${3:?failwrite shim}
sed 's/^runner:$/runner:\n  min_free_mb: 0\n  stall_timeout: 5/' "$SRC/configs/smoke.yaml" \
  > "$WORK/smoke.yaml"
sed 's/^runner:$/runner:\n  row_flush_interval: 0.2/' "$WORK/smoke.yaml" > "$WORK/flush.yaml"
config=$WORK/smoke.yaml
expect_code 0 mpi 2 run "$WORK/smoke.yaml" --out "$WORK/clean" --log-level error
# quota_run N AFTER WANT_REASON [SHIM_RANK]: a run whose results.h5 writes fail after AFTER
# bytes a rank (on rank SHIM_RANK alone when given: mpirun with one app context per rank).
quota_run() {
  local n=$1 after=$2 reason=$3 only=${4:-} out=$WORK/run$1_$2${4:+_r$4}
  local shim=(-x LD_PRELOAD="$SHIM" -x FAILWRITE_SUFFIX=results.h5 -x FAILWRITE_AFTER="$after")
  local args=("$BIN" run "$config" --out "$out" --log-level error) launch=() r
  if [[ -z $only ]]; then launch=(-n "$n" "${shim[@]}" "${args[@]}"); else
    for ((r = 0; r < n; r++)); do
      ((r == 0)) || launch+=(:)
      if ((r == only)); then launch+=(-n 1 "${shim[@]}" "${args[@]}"); else launch+=(-n 1 "${args[@]}"); fi
    done
  fi
  local start; start=$(date +%s)
  set +e; timeout 120 mpirun --oversubscribe "${launch[@]}" > "$WORK/out.txt" 2>&1; local code=$?; set -e
  local took=$(( $(date +%s) - start ))
  [[ $code == 3 ]] || { tail -n 5 "$WORK/out.txt"; fail "$n ranks, quota at $after B: exit $code after $took s, expected 3"; }
  ((took < 40)) || fail "$n ranks, quota at $after B: took $took s to stop"
  grep -q "$reason" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "$n ranks, quota at $after B: no reason"; }
  ! grep -q "internal error" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "$n ranks, quota at $after B: called an internal error"; }
  if [[ -f $out/ledger.jsonl ]]; then
    check_stopped "$out" "$n ranks, quota at $after B" "stopped\|failed"
  else  # stopped before any task: nothing to keep; status says so with exit 3, not 2
    ! pgrep -f -- "--out $out " > /dev/null || fail "$n ranks, quota at $after B: a rank is still running"
    expect_code 3 "$BIN" status "$out" --exit-code > /dev/null
  fi
  expect_code 0 mpi "$n" run "$config" --out "$out" --resume --log-level error
  "$BIN" compare "$WORK/clean/results.h5" "$out/results.h5" \
    || fail "$n ranks, quota at $after B: the resumed results differ from a clean run's"
}
for n in 1 2 3; do
  # On several ranks, a worker that finished creating the file may reach its first row write
  # before rank 0's failed creation has ended the job: either failure is a right reason.
  created="rank 0: .*results.h5: HDF5: .* failed while creating it"
  if ((n == 1)); then quota_run 1 0 "$created"; else quota_run "$n" 0 "$created\|rank [0-9]: .*HDF5: write rows .* failed"; fi
  # One rank has no one to wait for: HDF5's error comes back to it.
  # Several: the ranks wait in different barriers until the watchdog ends the job, or, when
  # the quota is met by one rank's own writes first (how many rows went out during the
  # run is a matter of timing), that rank's error ends it.
  if ((n == 1)); then final="rank 0: .*HDF5: .* failed"; else final="made no progress for 5 s (runner.stall_timeout)\|rank [0-9]: HDF5: .* failed"; fi
  quota_run "$n" 300000 "$final"
  # A worker's own row write failing mid-run, on that worker alone: it tells the coordinator,
  # which ends the job from its loop. mpirun's SIGTERM to the ranks then is no user's signal:
  # status says stopped (3), never interrupted (75).
  config=$WORK/flush.yaml  # rows written every 0.2 s
  ((n == 1)) || quota_run "$n" 0 "rank 0: rank $((n - 1)) stopped the run: HDF5: write rows" $((n - 1))
  config=$WORK/smoke.yaml
done
# With the default stall_timeout (120 s): the rank whose write MPI-IO refused in the final
# writes ends the job within seconds (5 s without progress after the error), not 120 s.
sed 's/^runner:$/runner:\n  min_free_mb: 0/' "$SRC/configs/smoke.yaml" > "$WORK/default_watch.yaml"
config=$WORK/default_watch.yaml
quota_run 2 300001 "MPI-IO failed here\|rank [0-9]: HDF5: .* failed"
pass "quota: creation, final and one worker's row writes failing end 1, 2 and 3 ranks with exit 3 within seconds; ledger whole; --resume equals a clean run"
