# Sourced by local-cluster.sh and virtual-cluster.sh: daemons tracked by the PIDs kept in
# $PIDS/<name>.pid, never by name (another cluster may be running beside).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [[ -n $s && $s != Z* ]]; }
pid_of() { [[ -s $PIDS/$1.pid ]] && cat "$PIDS/$1.pid"; }
running() { local p; p=$(pid_of "$1") && alive "$p"; }

stop_one() {  # NAME [SIGNAL]: the signal (TERM), then KILL after 10 s
  local p; p=$(pid_of "$1") || return 0
  if alive "$p"; then
    kill "-${2:-TERM}" "$p" 2> /dev/null || true
    for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -KILL "$p" 2> /dev/null || true
  fi
  rm -f "$PIDS/$1.pid"
}

cancel_jobs() {  # every job of this user, waiting up to 30 s for the queue to empty
  running slurmctld || return 0
  scancel --user="$(id -un)" 2> /dev/null || true
  for _ in $(seq 60); do squeue -h 2> /dev/null | grep -q . || break; sleep 0.5; done
}
