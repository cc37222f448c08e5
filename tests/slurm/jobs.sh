# What the SLURM tests share: a job's state and fields, waiting for it, its logs.
state() { scontrol show job -o "$1" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | head -1 | cut -d= -f2; }
field() { scontrol show job -o "$1" 2> /dev/null | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }
final_state() { [[ $1 =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$ ]]; }
# wait_done JOB SECONDS: until SLURM lists the job in a final state on 3 polls in a row (a
# job that requeues itself can pass through a final-looking state on its way back to
# pending); a requeued job's start (held ~2 minutes by SLURM) is brought forward. Each
# change of state is printed on stderr, so a failure shows the job's path.
wait_done() {
  local j=$1 to=$2 t0=$SECONDS st last="" final=0
  while :; do
    st=$(state "$j")
    [[ $st == "$last" ]] || { echo "[$((SECONDS - t0)) s] job $j: $st, restarts $(field "$j" Restarts)" >&2; last=$st; }
    if [[ $st == PENDING ]]; then
      final=0; scontrol update JobId="$j" StartTime=now 2> /dev/null || true
    elif final_state "$st"; then
      ((++final < 3)) || return 0
    else
      final=0
    fi
    ((SECONDS - t0 < to)) || { echo "job $j still $st after $to s"; job_diagnostics "$j"; return 1; }
    sleep 1
  done
}
# wait_het_done JOB LOG TASKS SECONDS: wait_done for a heterogeneous job whose srun runs with -v
# (LOG: the job's output; one task per node, as srun then reports each as "task N"). srun of
# SLURM before 24.11 can stay after every task of a heterogeneous step ended: each component
# starts a PMIx abort agent, the second overwrites the first's thread id, and srun waits
# forever to join the one it never stopped (SLURM's NEWS for 24.11.0: "mpi/pmix - Fix
# potential deadlock and races with het jobs", ticket 16817). When all TASKS tasks have ended
# with code 0 and the job still runs 15 s later, the job is cancelled, SRUN_STUCK set to 1
# and that is said; any other outcome is wait_done's.
wait_het_done() {
  local j=$1 log=$2 n=$3 to=$4 t0=$SECONDS since="" st ended
  SRUN_STUCK=0
  while :; do
    st=$(state "$j")
    if final_state "$st"; then wait_done "$j" 10; return; fi
    ended=$(grep -cE '_task_finish: .*: task [0-9]+: Completed' "$log" 2> /dev/null) || true
    if [[ $st == RUNNING ]] && ((${ended:-0} == n)); then
      since=${since:-$SECONDS}
      if ((SECONDS - since >= 15)); then
        echo "job $j: its $n tasks ended with code 0 but srun did not return after 15 s" \
             "(SLURM before 24.11, ticket 16817): cancelled" >&2
        SRUN_STUCK=1; scancel "$j"; wait_done "$j" 30; return
      fi
    elif ((SECONDS - t0 >= to)); then
      wait_done "$j" 1; return 1
    fi
    sleep 1
  done
}
# What a job that did not finish was doing: its record, its steps and the nodes' states.
job_diagnostics() {
  { scontrol show job "$1"; squeue -s -j "$1"; sinfo -N -o '%N %T %E'; } 2>&1 | sed 's/^/  | /'
  local p
  for p in $(pgrep -x srun); do
    echo "  | srun $p: $(tr '\0' ' ' < /proc/$p/cmdline)"
    if command -v gdb > /dev/null; then
      timeout 60 gdb -p "$p" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(#|Thread)' | sed 's/^/  | /'
    fi
  done
}
wait_state() {
  local j=$1 want=$2 to=$3 t0=$SECONDS
  until [[ $(state "$j") == "$want" ]]; do
    ((SECONDS - t0 < to)) || return 1
    sleep 0.2
  done
}
# wait_running JOB SECONDS: until the job runs; a requeued job's start is brought forward.
wait_running() {
  local j=$1 to=$2 t0=$SECONDS st
  while st=$(state "$j"); [[ $st != RUNNING ]]; do
    [[ $st == PENDING ]] && { scontrol update JobId="$j" StartTime=now 2> /dev/null || true; }
    ((SECONDS - t0 < to)) || return 1
    sleep 0.5
  done
}
show_logs() { tail -n 60 "$1"/logs/slurm-*.out 2> /dev/null || true; }

# start_cluster SCRIPT CONTROLLER_LOG: starts the cluster SCRIPT manages (stopping a stale one
# first); at exit it is stopped and $WORK removed, and on a failure the controller's log is
# printed first. The trap is set before the start, so a failed start leaves no daemons.
start_cluster() {
  CLUSTER=$1 CONTROLLER_LOG=$2
  trap stop_cluster EXIT
  bash "$CLUSTER" stop > /dev/null 2>&1 || true
  bash "$CLUSTER" start > "$WORK/cluster.log" 2>&1 || { cat "$WORK/cluster.log"; fail "no cluster ($CLUSTER)"; }
}
stop_cluster() {
  local rc=$?
  if ((rc != 0 && rc != 77)); then
    echo "--- slurmctld.log (last 40 lines)"; tail -n 40 "$CONTROLLER_LOG" 2> /dev/null || true
  fi
  bash "$CLUSTER" stop > /dev/null 2>&1 || true
  if ((rc != 0 && rc != 77)) && [[ -n ${CB_KEEP_FAILED:-} ]]; then
    cp -a "$WORK" "$CB_KEEP_FAILED.$$" || echo "CB_KEEP_FAILED: could not copy $WORK" >&2
  fi
  rm -rf "$WORK"
}
