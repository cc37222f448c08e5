#!/usr/bin/env bash
# A single-node SLURM on this machine from the distribution's packages (munge, slurmctld,
# slurmd), without systemd: started as daemons whose PIDs are kept under the state folder,
# stopped by PID; its own munged on a socket in the state folder (the machine's munged, if
# any, is left alone). For trying the job scripts and for the tests; needs root.
#   slurm/local-cluster.sh install   apt-get the packages (slurm-wlm, slurm-client, munge)
#   slurm/local-cluster.sh start     munged + slurmctld + slurmd; waits for the node to be idle
#   slurm/local-cluster.sh stop      cancels every job, stops the daemons by PID
#   slurm/local-cluster.sh status
# CB_SLURM_STATE (default /tmp/compatbench-slurm) holds state, spool, logs and PIDs;
# CB_SLURM_CPUS overrides the CPU count the node advertises (e.g. 4 on a 2-core machine).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${CB_SLURM_STATE:-/tmp/compatbench-slurm}
PIDS=$STATE/pids
HOST=$(hostname -s)
log() { printf '[local-cluster %s] %s\n' "$(date +%T)" "$*"; }
# shellcheck source=daemons.sh
source "$HERE/daemons.sh"

do_install() {
  command -v slurmctld > /dev/null && command -v munged > /dev/null && return 0
  # No service starts at install time (there is no init system to own them).
  local policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends slurm-wlm slurm-client munge > /dev/null
  ((policy)) && rm -f /usr/sbin/policy-rc.d
  log "installed slurm and munge"
}

write_conf() {
  local mem node
  mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p'); mem=$((mem * 9 / 10))
  if [[ -n ${CB_SLURM_CPUS:-} ]]; then
    node="NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CB_SLURM_CPUS RealMemory=$mem State=UNKNOWN"
    node+=$'\nSlurmdParameters=config_overrides'
  else
    node="NodeName=$HOST NodeAddr=127.0.0.1 $(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //' \
      -e "s/RealMemory=[0-9]*/RealMemory=$mem/") State=UNKNOWN"
  fi
  mkdir -p /etc/slurm
  awk -v h="$HOST" -v s="$STATE" -v n="$node" \
    '{gsub(/@HOST@/, h); gsub(/@STATE@/, s); if ($0 == "@NODE@") $0 = n; print}' \
    "$HERE/local/slurm.conf.in" > /etc/slurm/slurm.conf
}

do_start() {
  mkdir -p "$STATE"/{state,spool,log} "$PIDS"
  start_munged "$STATE/munge"
  write_conf
  running slurmctld || /usr/sbin/slurmctld -i < /dev/null >> "$STATE/log/daemons.out" 2>&1
  for _ in $(seq 150); do scontrol ping 2> /dev/null | grep -q 'is UP' && break; sleep 0.2; done
  scontrol ping | grep -q 'is UP' || { log "slurmctld did not start"; tail -n 20 "$STATE/log/slurmctld.log"; return 1; }
  running slurmd || /usr/sbin/slurmd -N "$HOST" < /dev/null >> "$STATE/log/daemons.out" 2>&1
  local st=""
  for _ in $(seq 150); do
    st=$(sinfo -h -N -n "$HOST" -o %T 2> /dev/null || true)
    case $st in
      idle* | mixed* | allocated*) break ;;
      down* | drain*) scontrol update NodeName="$HOST" State=RESUME 2> /dev/null || true ;;
    esac
    sleep 0.2
  done
  case $st in idle* | mixed* | allocated*) ;; *) log "node is '$st'"; tail -n 20 "$STATE/log/slurmd.log"; return 1 ;; esac
  log "up: munged $(pid_of munged), slurmctld $(pid_of slurmctld), slurmd $(pid_of slurmd)"
}

do_stop() {
  cancel_jobs
  stop_one slurmd; stop_one slurmctld; stop_one munged
  log "stopped"
}

do_status() {
  for n in munged slurmctld slurmd; do
    printf '%-10s %s\n' "$n" "$(running $n && echo "running (pid $(pid_of $n))" || echo stopped)"
  done
}

case ${1:-} in
  install) do_install ;;
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "usage: slurm/local-cluster.sh install|start|stop|status" >&2; exit 2 ;;
esac
