// The guard of a command task (docs/config.md "command"): a small program of its own,
// `compatbench-guard` (app/guard.cpp), started by the rank between itself and
// `/bin/sh -c command` (core/child_process.h). It depends on nothing but the kernel, so it
// starts in less than a tenth of a millisecond:
//   compatbench-guard PARENT_PID GRACE_MS KEEP_BACKGROUND PROGRAM ARGS...
//   - it exits 2 on bad arguments, and 127 (as a shell) when the program cannot start;
//   - it must lead a process group of its own, and it ends that whole group;
//   - it relays the program's exit: the same exit code, or the same signal;
//   - it is the program's subreaper (PR_SET_CHILD_SUBREAPER): a descendant that leaves the
//     group (setsid) stays its descendant;
//   - when the rank (PARENT_PID) dies, even by SIGKILL, the kernel tells it
//     (PR_SET_PDEATHSIG, SIGUSR2), and when the rank ends the task (a timeout, a cancel) it
//     sends SIGUSR2: either way it ends every descendant, in the group or not, kept
//     background or not (SIGTERM, SIGKILL after GRACE_MS), then itself;
//   - unless KEEP_BACKGROUND is 1, it ends every descendant left when the program ends;
//     with it, they pass to init when the guard ends.
#pragma once

namespace compatbench {

// The file name of the guard program, built beside compatbench.
inline constexpr const char* kGuardProgram = "compatbench-guard";

}  // namespace compatbench
