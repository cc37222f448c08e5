// Long-lived command servers (docs/servers.md): a group's `server:` command is started once
// per rank, on first use, and then runs that rank's tasks of the group one at a time,
// instead of a process per task. The task's rendered arguments go to it over a socket, and
// its result file and log follow the contract of a spawned command.
//
// Protocol, one JSON object per line on the socket the server gets as descriptor 3 (named
// in COMPATBENCH_SERVER_FD):
//   server -> runner  {"ready": true}                          once, when it can take tasks
//   runner -> server  {"id", "argv": [...], "result", "workdir", "log", "attempt", "seed"}
//   server -> runner  {"id", "exit_code": 0}                   when the task is done
// The server writes the task's output into "log" while it runs and its result into
// "result", as a command would; exit code 0 is success. It ends when the socket closes.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/child_process.h"

namespace compatbench {

// A task the server did not finish in time (its process group has been ended).
struct ServerTimeout : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class CommandServer {
  public:
    using Clock = std::chrono::steady_clock;
    // Starts `command` (/bin/sh -c, under a guard, in its own process group) with `env`
    // over the rank's; its own output goes to `log`.
    CommandServer(const std::string& command, std::filesystem::path log, const EnvOverrides& env,
                  std::chrono::milliseconds grace);
    // Closes the socket (the server's cue to end), waits up to the grace period, then ends
    // its process group.
    ~CommandServer();
    CommandServer(const CommandServer&) = delete;
    CommandServer& operator=(const CommandServer&) = delete;

    // Sends one task and returns the exit code it replied. Throws std::runtime_error when the
    // server exits or breaks the protocol (its exit status and the tail of its log in the
    // message), ServerTimeout at `deadline`, TaskCancelled when `cancel` is set; after any
    // throw the server has been ended and must be replaced.
    int run(const nlohmann::json& request, std::optional<Clock::time_point> deadline,
            const std::atomic<bool>& cancel);
    bool usable() const { return usable_; }
    const std::filesystem::path& log() const { return log_; }

  private:
    // The next line from the server, waiting as run() does.
    nlohmann::json read_line(std::optional<Clock::time_point> deadline,
                             const std::atomic<bool>& cancel);
    [[noreturn]] void died(const std::string& what);

    std::filesystem::path log_;
    std::chrono::milliseconds grace_;
    int socket_ = -1;  // this end of the pair
    std::unique_ptr<ChildProcess> child_;
    std::string buffer_;
    bool ready_ = false, usable_ = true;
};

// A rank's servers, one per server command and environment, started on first use and
// replaced after one fails. Used from the rank's task thread only.
class ServerPool {
  public:
    CommandServer& get(const std::string& command, const std::filesystem::path& log,
                       const EnvOverrides& env);
    // Forgets the servers that can no longer be used (ended by a failure).
    void prune();
    // Ends every server.
    void clear() { servers_.clear(); }

  private:
    std::map<std::string, std::unique_ptr<CommandServer>> servers_;
};

}  // namespace compatbench
