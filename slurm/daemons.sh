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

# start_munged DIR: a munged of this cluster's own on DIR/munge.socket.2 (slurm.conf's
# AuthInfo=socket=...), never the machine's /run/munge. Open MPI's PMIx authenticates each
# rank with munge whenever the default socket answers, so a munged started and stopped there
# while an mpirun starts fails the rank in MPI_Init ("OPAL ERROR: Unreachable") and leaves
# that mpirun deadlocked (docs/cluster.md, "MPI_Init under a restarted munged").
start_munged() {
  local dir=$1
  running munged && return 0
  mkdir -p "$dir"
  [[ -s /etc/munge/munge.key ]] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chmod 0400 /etc/munge/munge.key
  # -f: run as root with the key munge owns.
  /usr/sbin/munged -f --socket="$dir/munge.socket.2" --key-file=/etc/munge/munge.key \
    --log-file="$dir/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" \
    < /dev/null >> "$dir/daemon.out" 2>&1
  for _ in $(seq 100); do [[ -S $dir/munge.socket.2 && -s $dir/munged.pid ]] && break; sleep 0.1; done
  cp "$dir/munged.pid" "$PIDS/munged.pid"
  munge -S "$dir/munge.socket.2" -n | unmunge -S "$dir/munge.socket.2" > /dev/null \
    || { log "munge does not work"; return 1; }
}

cancel_jobs() {  # every job of this user, waiting up to 30 s for the queue to empty
  running slurmctld || return 0
  scancel --user="$(id -un)" 2> /dev/null || true
  for _ in $(seq 60); do squeue -h 2> /dev/null | grep -q . || break; sleep 0.5; done
}
