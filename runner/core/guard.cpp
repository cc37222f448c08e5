#include "core/guard.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace compatbench {

namespace {

using Clock = std::chrono::steady_clock;

void say(const std::string& text) {
    const std::string line = "compatbench-guard: " + text + "\n";
    [[maybe_unused]] const ssize_t n = write(2, line.data(), line.size());
}

void pause_ms(long ms) {
    const timespec t{ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, nullptr);
}

// Ends the guard as the program it ran ended: the same exit code, or the same signal.
[[noreturn]] void end_as(int status) {
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the program's own core, if any, is written already
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
}

// The guard's children now: the program, and as its subreaper the program's orphans.
std::vector<pid_t> guard_children() {
    std::vector<pid_t> out;
    const std::string path = "/proc/self/task/" + std::to_string(getpid()) + "/children";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(fd);
    for (const char* p = text.c_str(); *p;) {
        char* end = nullptr;
        const long pid = std::strtol(p, &end, 10);
        if (end == p) break;
        out.push_back(static_cast<pid_t>(pid));
        p = end;
    }
    return out;
}

bool contains(const std::vector<pid_t>& v, pid_t p) {
    for (pid_t q : v)
        if (q == p) return true;
    return false;
}

// Ends every descendant the program left, in its group or not: SIGTERM to the group and once
// to each of the guard's children (and the group it leads), SIGKILL after half the grace
// period, until none is left (the orphans of those it ends reach the guard in turn) or a
// grace period after the SIGKILLs (a process that cannot be signalled or is stuck in the
// kernel does not hold the guard for good).
void end_descendants(std::chrono::milliseconds grace) {
    kill(0, SIGTERM);  // the guard ignores it
    const auto kill_at = Clock::now() + grace / 2, give_up = kill_at + grace;
    std::vector<pid_t> termed;
    while (Clock::now() < give_up) {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        const std::vector<pid_t> left = guard_children();
        if (left.empty()) return;
        const bool late = Clock::now() >= kill_at;
        for (pid_t p : left) {
            if (!late && contains(termed, p)) continue;
            if (!late) termed.push_back(p);
            const int sig = late ? SIGKILL : SIGTERM;
            kill(p, sig);
            kill(-p, sig);  // a daemon in a session of its own leads its group
        }
        pause_ms(20);
    }
}

// The rank that started the group is gone: end the group as the rank would have, SIGTERM
// and SIGKILL after the grace period; the last signal ends the guard too.
[[noreturn]] void end_orphaned_group(std::chrono::milliseconds grace) {
    kill(0, SIGTERM);  // the guard ignores it
    const auto until = Clock::now() + grace;
    while (Clock::now() < until) {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        pause_ms(20);
    }
    kill(0, SIGKILL);
    _exit(128 + SIGKILL);
}

pid_t start(char** argv) {
    const SpawnAttr attr(false);
    pid_t child = -1;
    const int rc = posix_spawn(&child, argv[0], nullptr, &attr.attr, argv, environ);
    if (rc != 0) {
        say(std::string("cannot start ") + argv[0] + ": " + std::strerror(rc));
        return -1;
    }
    return child;
}

}  // namespace

SpawnAttr::SpawnAttr(bool own_group) {
    posix_spawnattr_init(&attr);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int sig : {SIGTERM, SIGUSR1, SIGUSR2, SIGINT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_group) {
        posix_spawnattr_setpgroup(&attr, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr, flags);
}

SpawnAttr::~SpawnAttr() { posix_spawnattr_destroy(&attr); }

int guard_main(int argc, char** argv) {
    // It ends its whole group: only ever as the leader of a group of its own.
    if (argc < 5 || getpgrp() != getpid()) {
        say("internal use only: started by compatbench for a command task");
        return 2;
    }
    const pid_t parent = static_cast<pid_t>(std::atoll(argv[1]));
    const std::chrono::milliseconds grace{std::atoll(argv[2])};
    // Signals to the group are for the program; the guard follows its fate.
    for (int sig : {SIGTERM, SIGINT, SIGUSR1}) signal(sig, SIG_IGN);
    sigset_t waited;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    sigaddset(&waited, SIGUSR2);
    sigprocmask(SIG_BLOCK, &waited, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGUSR2);
    if (getppid() != parent) end_orphaned_group(grace);  // died before prctl
    const bool keep_background = std::strcmp(argv[3], "1") == 0;
    if (!keep_background) prctl(PR_SET_CHILD_SUBREAPER, 1);
    const pid_t child = start(argv + 4);
    if (child < 0) return 127;
    while (true) {
        siginfo_t info;
        const int sig = sigwaitinfo(&waited, &info);
        if (sig == SIGUSR2) {
            if (!keep_background) end_descendants(grace);
            end_orphaned_group(grace);
        }
        int status = 0;  // the program's; orphans reaped as the subreaper are not waited for
        for (pid_t r; sig == SIGCHLD && (r = waitpid(-1, &status, WNOHANG)) > 0;) {
            if (r != child) continue;
            if (!keep_background) end_descendants(grace);
            end_as(status);
        }
    }
}

}  // namespace compatbench
