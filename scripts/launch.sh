#!/usr/bin/env bash
# mpirun ARGS..., with a clean stop: Ctrl-C (SIGINT), SIGTERM and a dropped session (SIGHUP)
# reach the ranks as SIGUSR1, which mpirun passes on as it is. The ranks then finish their
# tasks in flight, close results.h5 and exit 75 (requeue with --resume); a second Ctrl-C or
# SIGTERM stops them at once (76). mpirun itself, given SIGINT or SIGTERM, would kill the
# ranks a second after passing the signal on, losing the tasks in flight (docs/cluster.md
# "Signals").
#   bash scripts/launch.sh -n 2 build/release/runner/compatbench run CONFIG --out OUT
# mpirun runs in a session of its own, so that the terminal's signals reach this script only.
set -u
# A script's background job starts with SIGINT ignored, and bash cannot trap a signal that
# was ignored on entry: start again with SIGINT at its default. A SIGHUP ignored on entry
# (nohup) stays ignored, as nohup asks: the run then goes on when the session drops.
if [[ -z ${COMPATBENCH_LAUNCH_SIGNALS:-} ]] && env --default-signal=INT true 2> /dev/null; then
  COMPATBENCH_LAUNCH_SIGNALS=1 exec env --default-signal=INT bash "$0" "$@"
fi
setsid mpirun "$@" < /dev/null &
job=$!
hups=0
stop() {
  if [[ $1 == HUP ]]; then  # a dropped session may send it more than once: one stop
    hups=$((hups + 1))
    ((hups == 1)) || return 0
  fi
  echo "launch.sh: SIG$1: asking the ranks to stop (tasks in flight finish; a second" \
       "Ctrl-C stops them at once)" >&2 2> /dev/null || true
  kill -USR1 "$job" 2> /dev/null || true
}
trap 'stop INT' INT
trap 'stop TERM' TERM
trap 'stop HUP' HUP
while kill -0 "$job" 2> /dev/null; do  # a trap interrupts the wait: wait again
  wait "$job"
done
wait "$job"  # bash keeps the status of a child it has reaped
exit $?
