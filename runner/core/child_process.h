// A shell command run as a child of a rank (docs/commands.md "Processes"):
//   - in a process group of its own, so that it is ended whole: SIGTERM, then SIGKILL after
//     a grace period, however long its shell lives;
//   - through a guard: a small program of its own (`compatbench-guard`, core/guard.h,
//     built beside compatbench), which starts the shell, relays its exit status, and ends
//     the group when the rank that started it dies, even by SIGKILL (the kernel tells the
//     guard: PR_SET_PDEATHSIG);
//   - the guard is the children's subreaper (PR_SET_CHILD_SUBREAPER): a daemon that left
//     the group (setsid, a new session) is still its descendant, and when the shell ends
//     the guard ends every descendant left, unless `keep_background`;
//   - with its output moved into a log of at most `limit` bytes (head and tail kept).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace compatbench {

// A wait() status as words: "exit code N" or "killed by signal N".
std::string exit_status_text(int status);

// The last `max_bytes` of a file, without its final line breaks ("" when it cannot be read).
std::string tail_of_file(const std::filesystem::path& path, std::size_t max_bytes);

// A command's output into its log, `limit` bytes at most: the first half as it comes, the
// last half kept in memory and written at the end, after a note of what was cut between.
class CappedLog {
  public:
    CappedLog(const std::filesystem::path& path, std::uint64_t limit);
    void add(const char* p, std::size_t n);
    void finish();

  private:
    std::ofstream out_;
    std::uint64_t limit_, head_, tail_cap_, written_ = 0, after_head_ = 0;
    std::string tail_;
};

// Environment variables set for a command, over those of the rank (name, value).
using EnvOverrides = std::vector<std::pair<std::string, std::string>>;

// Runs `argv` (argv[0] found on PATH; no shell) in the foreground with this process's
// standard streams and environment, `env` set over it, and waits: its wait() status, or -1
// when it could not be started (errno set).
int run_program(const std::vector<std::string>& argv, const EnvOverrides& env = {});

// `/bin/sh -c command` under a guard, in its own process group; its output goes through a
// pipe into a CappedLog, or (limit 0) straight into the log file. `env` is set over the
// rank's environment; `pass_fd` (when >= 0) is this process's descriptor that the command
// gets as descriptor 3 (a command server's socket, commands/command_server.h). With
// `keep_background`, what the shell leaves running outlives it (daemons kept on purpose).
class ChildProcess {
  public:
    ChildProcess(const std::string& command, const std::filesystem::path& log_path,
                 std::uint64_t limit, std::chrono::milliseconds grace, const EnvOverrides& env = {},
                 int pass_fd = -1, bool keep_background = false);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Waits up to `slice`; true once the shell has exited (status in `status()`).
    bool wait_for(std::chrono::milliseconds slice);
    // Moves what the command wrote into the log; with `to_end`, until every writer is gone
    // (at most the grace period more), then writes the log's tail.
    void drain(bool to_end = false);
    // Whether any process of the group lives on (the shell's background children).
    bool group_alive() const;
    // Ends every process of the group and every descendant that left it: the guard sweeps
    // (SIGTERM, then SIGKILL to whatever is left after the grace period) and ends; the rank
    // SIGKILLs the group only if the guard outlives two grace periods more. The guard is
    // reaped.
    void end_group();
    int status() const { return status_; }

  private:
    void kill_group(int sig) const;

    pid_t pid_ = -1;             // the guard: the group's leader
    int pidfd_ = -1, out_ = -1;  // out_: the pipe's read end (none: output to the file)
    std::chrono::milliseconds grace_;
    std::optional<CappedLog> log_;
    int status_ = 0;
    bool reaped_ = false;
};

}  // namespace compatbench
