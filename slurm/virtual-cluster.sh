#!/usr/bin/env bash
# A virtual 3-node SLURM cluster on this machine (needs root), from the distribution's
# packages: its own munged, one slurmctld and three slurmd (node1..node3), each slurmd in its
# own hostname (UTS) and PID namespace so that a node can crash as a whole. All listen on
# 127.0.0.1 on ports of their own, with their own state folder, so this runs beside
# slurm/local-cluster.sh. Daemons are stopped by the PIDs kept here, never by name.
#   slurm/virtual-cluster.sh start          the daemons; waits for the 3 nodes to be idle
#   slurm/virtual-cluster.sh stop           cancels every job, stops the daemons by PID
#   slurm/virtual-cluster.sh status
#   slurm/virtual-cluster.sh crash NODE     kills NODE's PID namespace: every process on it
#   slurm/virtual-cluster.sh revive NODE    starts NODE's slurmd again, its /tmp emptied
#   slurm/virtual-cluster.sh env            the variables clients and MPI need (eval it)
# CB_VC_STATE (default /tmp/compatbench-vc) holds the config, state, spools, logs and PIDs.
# MPI stays on loopback: `env` sets Open MPI's TCP and out-of-band interfaces to
# 127.0.0.0/8, and jobs submitted with it set inherit them.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${CB_VC_STATE:-/tmp/compatbench-vc}
PIDS=$STATE/pids
NODES=(node1 node2 node3)
export SLURM_CONF=$STATE/slurm.conf
log() { printf '[virtual-cluster %s] %s\n' "$(date +%T)" "$*"; }
# shellcheck source=daemons.sh
source "$HERE/daemons.sh"

client_env() {
  cat <<ENV
export SLURM_CONF=$STATE/slurm.conf
export OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=127.0.0.0/8 OMPI_MCA_oob_tcp_if_include=127.0.0.0/8
ENV
}

write_conf() {
  local mem
  mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p'); mem=$((mem / 4))
  awk -v s="$STATE" -v m="$mem" '{gsub(/@STATE@/, s); gsub(/@MEM@/, m); print}' \
    "$HERE/virtual/slurm.conf.in" > "$STATE/slurm.conf"
  # node1's two simulated GPUs: character devices named as NVIDIA's (major 195), which
  # slurmd only checks exist; nothing opens them.
  mkdir -p "$STATE/dev"
  for i in 0 1; do [[ -e $STATE/dev/nvidia$i ]] || mknod "$STATE/dev/nvidia$i" c 195 "$i"; done
  printf 'AutoDetect=off\nNodeName=node1 Name=gpu File=%s/dev/nvidia[0-1]\n' "$STATE" > "$STATE/gres.conf"
}

# A node: a new PID namespace under the node's hostname, whose init (a shell that waits,
# and so reaps the job steps' daemons that end up its children) runs slurmd in the
# foreground. --kill-child: when unshare dies, so does the namespace. The PID kept is
# unshare's: killing it takes down every process of the node at once.
start_node() {
  local n=$1
  running "$n" && return 0
  mkdir -p "$STATE/$n/spool" "$STATE/$n/tmp"
  setsid unshare -u -m -p --fork --kill-child=SIGKILL --mount-proc --propagation private \
    sh -c "hostname $n; /usr/sbin/slurmd -D -f '$STATE/slurm.conf' & wait" \
    < /dev/null >> "$STATE/$n/daemon.out" 2>&1 &
  echo $! > "$PIDS/$n.pid"
}

# Until every node is idle (or running jobs), at most 30 s. A node that was down returns
# by itself when its slurmd registers (ReturnToService=2): forcing it back before would let
# a job start on a node whose slurmd is not there yet.
wait_nodes() {
  local st
  for _ in $(seq 150); do
    st=$(sinfo -h -N -o '%N %T' 2> /dev/null | sort)
    if [[ $(awk '$2 ~ /^(idle|mixed|allocated)/' <<< "$st" | wc -l) == "${#NODES[@]}" ]]; then return 0; fi
    sleep 0.2
  done
  log "nodes not idle:"; echo "$st"; tail -n 5 "$STATE"/node*/slurmd.log; return 1
}

do_start() {
  mkdir -p "$STATE"/{ctld/state,munge} "$PIDS"
  start_munged "$STATE/munge"
  write_conf
  if ! running slurmctld; then
    setsid unshare -u sh -c "hostname vchead && exec /usr/sbin/slurmctld -D -f '$STATE/slurm.conf'" \
      < /dev/null >> "$STATE/ctld/daemon.out" 2>&1 &
    echo $! > "$PIDS/slurmctld.pid"
  fi
  for _ in $(seq 150); do scontrol ping 2> /dev/null | grep -q 'is UP' && break; sleep 0.2; done
  scontrol ping | grep -q 'is UP' || { log "slurmctld did not start"; tail -n 20 "$STATE/ctld/slurmctld.log"; return 1; }
  for n in "${NODES[@]}"; do start_node "$n"; done
  wait_nodes
  log "up: munged $(pid_of munged), slurmctld $(pid_of slurmctld), nodes $(for n in "${NODES[@]}"; do printf '%s ' "$n=$(pid_of "$n")"; done)"
}

do_stop() {
  cancel_jobs
  # A node's unshare ignores TERM while it waits: KILL takes the namespace down at once.
  for n in "${NODES[@]}"; do stop_one "$n" KILL; done
  stop_one slurmctld; stop_one munged
  log "stopped"
}

do_status() {
  for n in munged slurmctld "${NODES[@]}"; do
    printf '%-10s %s\n' "$n" "$(running "$n" && echo "running (pid $(pid_of "$n"))" || echo stopped)"
  done
  running slurmctld && sinfo -N 2> /dev/null || true
}

do_crash() {
  local n=${1:?crash NODE}
  running "$n" || { log "$n is not running"; return 1; }
  kill -KILL "$(pid_of "$n")"   # the namespace's init goes, and with it every process of the node
  rm -f "$PIDS/$n.pid"
  log "$n crashed"
}

# A crashed node comes back without what its dead job steps left: its temporary folder
# (TmpFS) and the steps' UNIX sockets and PMIx folders in its spool, as a reboot would clear them (a tmpfs,
# /run). Left over, PMIx's socket of the requeued job (same job and step id) would fail the
# launch on that node: "Cannot bind() UNIX socket …: Address already in use".
revive_node() {
  rm -rf "$STATE/$1/tmp"
  [[ -d $STATE/$1/spool ]] && find "$STATE/$1/spool" -mindepth 1 -maxdepth 1 \( -type s -o -name "pmix.*" \) -exec rm -rf {} +
  start_node "$1"
  wait_nodes
}

case ${1:-} in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  crash) do_crash "${2:-}" ;;
  revive) revive_node "${2:?revive NODE}" ;;
  env) client_env ;;
  *) echo "usage: slurm/virtual-cluster.sh start|stop|status|crash NODE|revive NODE|env" >&2; exit 2 ;;
esac
