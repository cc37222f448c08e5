# GPU placement with simulated devices (docs/gpus.md): ranks are given CUDA_VISIBLE_DEVICES,
# and each command writes the devices it saw, and its rank, into its result.
source "$(dirname "$0")/lib.sh"
unset CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_CPUS_PER_TASK

# Two ranks on one node that both see devices 0,1 (as mpirun leaves them): one each.
C=$(gpu_config shared "" cpu:0:4 one:1:6)
CUDA_VISIBLE_DEVICES=0,1 expect_code 0 mpi 2 run "$C" --out "$WORK/shared" --log-level warn
pycheck gpus devices_by_rank "$WORK/shared" one "0=0" "1=1"
pycheck gpus devices_by_rank "$WORK/shared" cpu "0=" "1="
pass "two one-GPU ranks on a node each get their own device; CPU tasks see none"

# --devices over the environment, and the ledger and /tasks record host and devices.
C=$(gpu_config flag "" one:1:4)
CUDA_VISIBLE_DEVICES=7 expect_code 0 mpi 2 run "$C" --out "$WORK/flag" --devices 4,5 --log-level warn
pycheck gpus devices_by_rank "$WORK/flag" one "0=4" "1=5"
pycheck gpus facts_record_placement "$WORK/flag"
pass "--devices splits a node's list; the ledger and /tasks record host and devices"

# Ranks with lists of their own: a 2-GPU task runs only where two are held.
C=$(gpu_config own "" cpu:0:4 one:1:4 two:2:4)
expect_code 0 mpirun -n 1 -x CUDA_VISIBLE_DEVICES=0 "$BIN" run "$C" --out "$WORK/own" \
  --log-level warn : -n 1 -x CUDA_VISIBLE_DEVICES=1,2 "$BIN" run "$C" --out "$WORK/own" \
  --log-level warn
pycheck gpus devices_by_rank "$WORK/own" two "1=1,2"
pycheck gpus devices_within "$WORK/own" one "0=0" "1=1"
pycheck gpus devices_within "$WORK/own" cpu "0=" "1="
pass "a 2-GPU task runs only on the rank that holds two"

# A mixed allocation: two CPU-only ranks and one GPU rank that takes GPU work alone.
C=$(gpu_config mixed "cpu_tasks_on_gpu_ranks: false" cpu:0:6 one:1:3)
expect_code 0 mpirun -n 2 -x CUDA_VISIBLE_DEVICES= "$BIN" run "$C" --out "$WORK/mixed" \
  --log-level warn : -n 1 -x CUDA_VISIBLE_DEVICES=3 "$BIN" run "$C" --out "$WORK/mixed" \
  --log-level warn
pycheck gpus devices_by_rank "$WORK/mixed" one "2=3"
pycheck gpus devices_by_rank "$WORK/mixed" cpu "0=" "1="
pass "a mixed allocation places every task on a rank that can run it"

# An impossible request fails at start with one line, before any work.
C=$(gpu_config impossible "" cpu:0:2 big:4:2)
set +e
CUDA_VISIBLE_DEVICES=0,1 mpi 2 run "$C" --out "$WORK/impossible" > "$WORK/impossible.log" 2>&1
code=$?
set -e
[[ $code == 2 ]] || fail "an impossible request exited $code, expected 2"
grep -q "tasks.big: gpus: 4 needs 4 devices a task, more than any rank holds (rank 0 on .*: 1 \[0\], rank 1 on .*: 1 \[1\])" \
  "$WORK/impossible.log" || { cat "$WORK/impossible.log"; fail "no line naming the group, its need and the ranks"; }
[[ ! -e $WORK/impossible/ledger.jsonl ]] || fail "work started"
pass "an impossible request fails at start, naming the group, its need and what ranks hold"
