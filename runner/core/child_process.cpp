#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace compatbench {

namespace {

using Clock = std::chrono::steady_clock;

// Spawn attributes for a child of this process: its signal mask empty and the signals this
// process handles (or ignores) back at their defaults; with `own_group`, a new group.
struct SpawnAttr {
    posix_spawnattr_t attr;
    explicit SpawnAttr(bool own_group) {
        posix_spawnattr_init(&attr);
        sigset_t empty, defaults;
        sigemptyset(&empty);
        sigemptyset(&defaults);
        for (int sig : {SIGTERM, SIGUSR1, SIGUSR2, SIGINT, SIGPIPE, SIGCHLD})
            sigaddset(&defaults, sig);
        posix_spawnattr_setsigmask(&attr, &empty);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
        if (own_group) {
            posix_spawnattr_setpgroup(&attr, 0);
            flags |= POSIX_SPAWN_SETPGROUP;
        }
        posix_spawnattr_setflags(&attr, flags);
    }
    ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
    SpawnAttr(const SpawnAttr&) = delete;
    SpawnAttr& operator=(const SpawnAttr&) = delete;
};

// Ends the guard as the program it ran ended: the same exit code, or the same signal.
[[noreturn]] void end_as(int status) {
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the program's own core, if any, is written already
    std::signal(sig, SIG_DFL);
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
    std::ifstream in("/proc/self/task/" + std::to_string(getpid()) + "/children");
    for (pid_t p = 0; in >> p;) out.push_back(p);
    return out;
}

// Ends every descendant the program left, in its group or not: SIGTERM to the group and once
// to each of the guard's children (and the group it leads), SIGKILL after half the grace
// period, until none is left (the orphans of those it ends reach the guard in turn) or a
// grace period after the SIGKILLs (a process that cannot be signalled or is stuck in the
// kernel does not hold the guard for good).
void end_descendants(std::chrono::milliseconds grace) {
    kill(0, SIGTERM);  // the guard ignores it
    const auto kill_at = Clock::now() + grace / 2, give_up = kill_at + grace;
    std::set<pid_t> termed;
    while (Clock::now() < give_up) {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        const std::vector<pid_t> left = guard_children();
        if (left.empty()) return;
        const bool late = Clock::now() >= kill_at;
        for (pid_t p : left) {
            if (!late && !termed.insert(p).second) continue;
            const int sig = late ? SIGKILL : SIGTERM;
            kill(p, sig);
            kill(-p, sig);  // a daemon in a session of its own leads its group
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// The rank that started the group is gone: end the group as the rank would have, SIGTERM
// and SIGKILL after the grace period; the last signal ends the guard too.
[[noreturn]] void end_orphaned_group(std::chrono::milliseconds grace) {
    kill(0, SIGTERM);  // the guard ignores it
    const auto until = Clock::now() + grace;
    while (Clock::now() < until) {
        int status = 0;
        while (waitpid(-1, &status, WNOHANG) > 0) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(0, SIGKILL);
    _exit(128 + SIGKILL);
}

bool g_can_guard = false;  // main() called guard_main: this binary serves as a guard

}  // namespace

int guard_main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) != kGuardVerb) {
        g_can_guard = true;
        return -1;
    }
    // It ends its whole group: only ever as the leader of a group of its own.
    if (argc < 6 || getpgrp() != getpid()) {
        std::cerr << "compatbench " << kGuardVerb << ": internal use only\n";
        return 2;
    }
    const pid_t parent = static_cast<pid_t>(std::atoll(argv[2]));
    const std::chrono::milliseconds grace{std::atoll(argv[3])};
    // Signals to the group are for the program; the guard follows its fate.
    for (int sig : {SIGTERM, SIGINT, SIGUSR1}) std::signal(sig, SIG_IGN);
    sigset_t waited;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    sigaddset(&waited, SIGUSR2);
    sigprocmask(SIG_BLOCK, &waited, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGUSR2);
    if (getppid() != parent) end_orphaned_group(grace);  // died before prctl
    const bool keep_background = std::string(argv[4]) == "1";
    if (!keep_background) prctl(PR_SET_CHILD_SUBREAPER, 1);

    pid_t child = -1;
    const SpawnAttr attr(false);
    const int rc = posix_spawn(&child, argv[5], nullptr, &attr.attr, argv + 5, environ);
    if (rc != 0) {
        std::cerr << "compatbench: cannot start " << argv[5] << ": " << std::strerror(rc) << "\n";
        return 127;
    }
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

std::string exit_status_text(int status) {
    if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "wait status " + std::to_string(status);
}

std::string tail_of_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(in.tellg());
    const std::size_t from = size > max_bytes ? size - max_bytes : 0;
    in.seekg(static_cast<std::streamoff>(from));
    std::string text(size - from, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
}

CappedLog::CappedLog(const std::filesystem::path& path, std::uint64_t limit)
    : out_(path, std::ios::app | std::ios::binary),
      limit_(limit),
      head_(limit / 2),
      tail_cap_(limit - limit / 2) {}

void CappedLog::add(const char* p, std::size_t n) {
    const auto h = static_cast<std::size_t>(std::min<std::uint64_t>(n, head_ - written_));
    out_.write(p, static_cast<std::streamsize>(h));
    written_ += h;
    after_head_ += n - h;
    tail_.append(p + h, n - h);
    if (tail_.size() > 2 * tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
}

void CappedLog::finish() {
    if (tail_.size() > tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
    if (after_head_ > tail_.size())
        out_ << "\n[compatbench: " << after_head_ - tail_.size()
             << " bytes of output cut here; the log keeps the first and the last " << limit_ / 2
             << " bytes (runner.log_limit_mb)]\n";
    out_.write(tail_.data(), static_cast<std::streamsize>(tail_.size()));
    out_.flush();
    tail_.clear();
    after_head_ = 0;
}

namespace {
// The rank's environment with `env` set over it, as "NAME=value" texts.
std::vector<std::string> environment_with(const EnvOverrides& env) {
    std::vector<std::string> out;
    for (char** e = environ; *e; ++e) {
        const std::string entry(*e);
        const std::string name = entry.substr(0, entry.find('='));
        if (std::none_of(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; }))
            out.push_back(entry);
    }
    for (const auto& [name, value] : env) out.push_back(name + "=" + value);
    return out;
}
}  // namespace

ChildProcess::ChildProcess(const std::string& command, const std::filesystem::path& log_path,
                           std::uint64_t limit, std::chrono::milliseconds grace,
                           const EnvOverrides& env, int pass_fd, bool keep_background)
    : grace_(grace) {
    if (!g_can_guard)
        throw std::logic_error(
            "this program's main() does not call guard_main(): it cannot "
            "start commands (core/child_process.h)");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    int fds[2] = {-1, -1};
    if (limit > 0 && pipe2(fds, O_CLOEXEC) == 0) {
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
        log_.emplace(log_path, limit);
    } else {
        posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(),
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
    }
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (pass_fd >= 0) posix_spawn_file_actions_adddup2(&actions, pass_fd, 3);  // clears CLOEXEC
    const SpawnAttr attr(true);
    const std::string parent = std::to_string(getpid());
    const std::string grace_ms = std::to_string(grace.count());
    const char* argv[] = {
        "compatbench", kGuardVerb, parent.c_str(),  grace_ms.c_str(), keep_background ? "1" : "0",
        "/bin/sh",     "-c",       command.c_str(), nullptr};
    const std::vector<std::string> entries = environment_with(env);
    std::vector<char*> envp;
    for (const auto& e : entries) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, "/proc/self/exe", &actions, &attr.attr,
                               const_cast<char* const*>(argv), env.empty() ? environ : envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (fds[1] >= 0) close(fds[1]);
    out_ = fds[0];
    if (out_ >= 0) fcntl(out_, F_SETFL, O_NONBLOCK);
    if (rc != 0) {
        if (out_ >= 0) close(out_);
        throw std::runtime_error(std::string("cannot start /bin/sh: ") + std::strerror(rc));
    }
    pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
        kill_group(SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    if (pidfd_ >= 0) close(pidfd_);
    if (out_ >= 0) close(out_);
}

void ChildProcess::drain(bool to_end) {
    if (out_ < 0) return;
    char buf[65536];
    const auto until = Clock::now() + grace_;
    while (!to_end || Clock::now() < until) {
        const ssize_t n = read(out_, buf, sizeof buf);
        if (n > 0) {
            log_->add(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && to_end) {
            pollfd p{out_, POLLIN, 0};
            poll(&p, 1, 100);
            continue;
        }
        break;  // EOF, or nothing more for now
    }
    if (to_end) log_->finish();
}

bool ChildProcess::wait_for(std::chrono::milliseconds slice) {
    if (reaped_) return true;  // reaped already: a second waitpid would find no child
    if (pidfd_ >= 0) {
        pollfd p[2] = {{pidfd_, POLLIN, 0}, {out_, POLLIN, 0}};
        poll(p, out_ >= 0 ? 2 : 1, static_cast<int>(slice.count()));
    }
    drain();
    const pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
        reaped_ = true;
        return true;
    }
    if (pidfd_ < 0) std::this_thread::sleep_for(std::min(slice, std::chrono::milliseconds(1)));
    return false;
}

void ChildProcess::kill_group(int sig) const { ::kill(-pid_, sig); }

bool ChildProcess::group_alive() const { return ::kill(-pid_, 0) == 0; }

void ChildProcess::end_group() {
    kill_group(SIGTERM);
    const auto until = Clock::now() + grace_;
    bool killed = false;
    while (!reaped_ || group_alive()) {
        if (!reaped_)
            wait_for(std::chrono::milliseconds(10));
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!killed && Clock::now() >= until) {
            kill_group(SIGKILL);
            killed = true;
        }
    }
}

}  // namespace compatbench
