// The guard of a command task (docs/config.md "command"): a small program of its own,
// `compatbench-guard`, started by the rank between itself and `/bin/sh -c command`
// (core/child_process.h). It has no dependency beyond the C library, so it starts in a
// fraction of a millisecond:
//   compatbench-guard PARENT_PID GRACE_MS KEEP_BACKGROUND PROGRAM ARGS...
//   - it must lead a process group of its own, and it ends that whole group;
//   - it relays the program's exit: the same exit code, or the same signal;
//   - when the rank (PARENT_PID) dies, even by SIGKILL, the kernel tells it
//     (PR_SET_PDEATHSIG) and it ends the group: SIGTERM, SIGKILL after GRACE_MS;
//   - unless KEEP_BACKGROUND is 1, it is the program's subreaper (PR_SET_CHILD_SUBREAPER)
//     and ends every descendant left when the program ends, in the group or not.
#pragma once

#include <spawn.h>

namespace compatbench {

// The file name of the guard program, built beside compatbench.
inline constexpr const char* kGuardProgram = "compatbench-guard";

// The guard's whole life: returns only on bad arguments (exit code 2) or when the program
// cannot be started (127); otherwise it ends as the program ended.
int guard_main(int argc, char** argv);

// Spawn attributes for a child of the rank or the guard: its signal mask empty and the
// signals they handle (or ignore) back at their defaults; with `own_group`, a new group.
struct SpawnAttr {
    posix_spawnattr_t attr;
    explicit SpawnAttr(bool own_group);
    ~SpawnAttr();
    SpawnAttr(const SpawnAttr&) = delete;
    SpawnAttr& operator=(const SpawnAttr&) = delete;
};

}  // namespace compatbench
