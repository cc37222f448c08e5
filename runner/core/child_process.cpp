#include "core/child_process.h"

#include "core/guard.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace compatbench {

namespace {

using Clock = std::chrono::steady_clock;

// Spawn attributes for the guard: a group of its own, its signal mask empty and the signals
// the rank handles (or ignores) back at their defaults.
struct SpawnAttr {
    posix_spawnattr_t attr;
    SpawnAttr() {
        posix_spawnattr_init(&attr);
        sigset_t empty, defaults;
        sigemptyset(&empty);
        sigemptyset(&defaults);
        for (int sig : {SIGTERM, SIGUSR1, SIGUSR2, SIGINT, SIGPIPE, SIGCHLD})
            sigaddset(&defaults, sig);
        posix_spawnattr_setsigmask(&attr, &empty);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    }
    ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
    SpawnAttr(const SpawnAttr&) = delete;
    SpawnAttr& operator=(const SpawnAttr&) = delete;
};

// The guard program (core/guard.h): $COMPATBENCH_GUARD, else beside this binary. It is
// opened once and started through /proc/self/fd, so every command of this process runs
// under the same guard file even if the build replaces it meanwhile. The descriptor sits
// above 3 (a command's file actions set 0 to 3). Throws when there is none.
std::string guard_exec_path() {
    static const int fd = [] {
        std::filesystem::path path;
        if (const char* env = std::getenv("COMPATBENCH_GUARD"); env && *env) {
            path = env;
        } else {
            std::error_code ec;
            path =
                std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / kGuardProgram;
        }
        const int opened = open(path.c_str(), O_PATH | O_CLOEXEC);
        if (opened < 0) return -1;
        const int high = fcntl(opened, F_DUPFD_CLOEXEC, 10);
        close(opened);
        return high;
    }();
    if (fd < 0)
        throw std::runtime_error(std::string("cannot start commands: ") + kGuardProgram +
                                 " is not beside this program and $COMPATBENCH_GUARD does not "
                                 "name it (copy the two together)");
    return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

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

int run_program(const std::vector<std::string>& argv, const EnvOverrides& env) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::vector<std::string> entries = environment_with(env);
    std::vector<char*> envp;
    for (const auto& e : entries) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    pid_t pid = -1;
    if (const int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data())) {
        errno = rc;
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

ChildProcess::ChildProcess(const std::string& command, const std::filesystem::path& log_path,
                           std::uint64_t limit, std::chrono::milliseconds grace,
                           const EnvOverrides& env, int pass_fd, bool keep_background)
    : grace_(grace) {
    const std::string guard = guard_exec_path();
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
    const SpawnAttr attr;
    const std::string parent = std::to_string(getpid());
    const std::string grace_ms = std::to_string(grace.count());
    const char* argv[] = {
        kGuardProgram, parent.c_str(), grace_ms.c_str(), keep_background ? "1" : "0",
        "/bin/sh",     "-c",           command.c_str(),  nullptr};
    const std::vector<std::string> entries = environment_with(env);
    std::vector<char*> envp;
    for (const auto& e : entries) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, guard.c_str(), &actions, &attr.attr,
                               const_cast<char* const*>(argv), env.empty() ? environ : envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (fds[1] >= 0) close(fds[1]);
    out_ = fds[0];
    if (out_ >= 0) fcntl(out_, F_SETFL, O_NONBLOCK);
    if (rc != 0) {
        if (out_ >= 0) close(out_);
        throw std::runtime_error(std::string("cannot start ") + kGuardProgram + ": " +
                                 std::strerror(rc));
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
    // A guard still running sweeps (SIGUSR2, core/guard.h): SIGTERM to the group and to every
    // descendant, in the group or not, SIGKILL after the grace period, then it ends. SIGUSR2
    // alone: a SIGTERM from here could end the shell first, and the guard would take that for
    // the program's own end (keeping what keep_background keeps). A guard already gone (or
    // gone before it read the SIGUSR2) leaves the rank to SIGTERM what is left of the group.
    // The rank SIGKILLs the group when that takes three grace periods (a stuck guard), and
    // stops waiting a grace period later (a process stuck in the kernel).
    bool termed = reaped_;
    if (reaped_)
        kill_group(SIGTERM);
    else
        ::kill(pid_, SIGUSR2);
    auto until = Clock::now() + (reaped_ ? grace_ : 3 * grace_);
    bool killed = false;
    while (!reaped_ || group_alive()) {
        if (!reaped_)
            wait_for(std::chrono::milliseconds(10));
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (reaped_ && !termed && group_alive()) {
            kill_group(SIGTERM);
            termed = true;
            until = std::min(until, Clock::now() + grace_);
        }
        if (!killed && Clock::now() >= until) {
            kill_group(SIGKILL);
            killed = true;
        }
        if (killed && Clock::now() >= until + grace_) return;
    }
}

}  // namespace compatbench
