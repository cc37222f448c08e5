#include "commands/command_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kind/task_kind.h"

namespace compatbench {

namespace {
constexpr std::size_t kMaxLine = 1 << 20;  // a reply longer than this is not the protocol

}  // namespace

CommandServer::CommandServer(const std::string& command, std::filesystem::path log,
                             const EnvOverrides& env, std::chrono::milliseconds grace)
    : log_(std::move(log)), grace_(grace) {
    int pair[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::runtime_error(std::string("cannot make a socket pair: ") + std::strerror(errno));
    socket_ = pair[0];
    EnvOverrides with_fd = env;
    with_fd.emplace_back("COMPATBENCH_SERVER_FD", "3");
    try {
        child_ = std::make_unique<ChildProcess>(command, log_, 0, grace_, with_fd, pair[1]);
    } catch (...) {
        close(pair[0]);
        close(pair[1]);
        throw;
    }
    close(pair[1]);  // the server holds the other end now
}

CommandServer::~CommandServer() {
    if (socket_ >= 0) close(socket_);  // the server reads end-of-file and should end
    if (!child_) return;
    const auto until = Clock::now() + grace_;
    while (Clock::now() < until && !child_->wait_for(std::chrono::milliseconds(10))) {
    }
    child_->end_group();
}

void CommandServer::died(const std::string& what) {
    usable_ = false;
    if (socket_ >= 0) close(socket_);
    socket_ = -1;
    // Give an exiting server a moment to be reaped, so that its status can be named.
    bool exited = false;
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (!exited && Clock::now() < until)
        exited = child_->wait_for(std::chrono::milliseconds(10));
    const std::string status = exited ? exit_status_text(child_->status()) : "still running: ended";
    child_->end_group();
    throw std::runtime_error("the server " + what + " (" + status + "; server log " +
                             log_.string() + "): " + tail_of_file(log_, 300));
}

nlohmann::json CommandServer::read_line(std::optional<Clock::time_point> deadline,
                                        const std::atomic<bool>& cancel) {
    while (true) {
        if (const auto end = buffer_.find('\n'); end != std::string::npos) {
            const std::string line = buffer_.substr(0, end);
            buffer_.erase(0, end + 1);
            try {
                return nlohmann::json::parse(line);
            } catch (const nlohmann::json::exception&) {
                died("wrote a line that is not JSON on its socket: '" + line.substr(0, 80) + "'");
            }
        }
        if (buffer_.size() > kMaxLine) died("wrote more than 1 MB without a newline");
        if (cancel.load(std::memory_order_relaxed)) {
            usable_ = false;
            child_->end_group();
            throw TaskCancelled{};
        }
        if (deadline && Clock::now() >= *deadline) {
            usable_ = false;
            child_->end_group();
            throw ServerTimeout("timed out");
        }
        pollfd p{socket_, POLLIN, 0};
        const int ready = poll(&p, 1, 10);
        if (ready < 0 && errno != EINTR)
            died("socket failed: " + std::string(std::strerror(errno)));
        if (ready <= 0) {
            // Its pid, not end-of-file, says the server died: a child it forked may hold
            // the socket open.
            if (!child_->wait_for(std::chrono::milliseconds(0))) continue;
            char chunk[65536];  // a reply sent just before it exited is still read
            const ssize_t n = recv(socket_, chunk, sizeof chunk, MSG_DONTWAIT);
            if (n > 0) {
                buffer_.append(chunk, static_cast<std::size_t>(n));
                continue;
            }
            died(ready_ ? "exited during the task" : "exited before it was ready");
        }
        char chunk[65536];
        const ssize_t n = recv(socket_, chunk, sizeof chunk, 0);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            died(ready_ ? "exited during the task" : "exited before it was ready");
        }
    }
}

int CommandServer::run(const nlohmann::json& request, std::optional<Clock::time_point> deadline,
                       const std::atomic<bool>& cancel) {
    const std::string line = request.dump() + "\n";
    std::size_t sent = 0;
    while (sent < line.size()) {
        const ssize_t n = send(socket_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) died(ready_ ? "closed its socket" : "exited before it was ready");
        sent += static_cast<std::size_t>(n);
    }
    if (!ready_) {
        const auto hello = read_line(deadline, cancel);
        if (!hello.is_object() || hello.value("ready", false) != true)
            died("did not say {\"ready\": true} first");
        ready_ = true;
    }
    const auto reply = read_line(deadline, cancel);
    if (!reply.is_object() || !reply.contains("exit_code") ||
        !reply["exit_code"].is_number_integer())
        died("replied without an integer exit_code: " + reply.dump().substr(0, 120));
    const auto& code = reply["exit_code"];  // an exit status: 0..255, never truncated to one
    if (code.is_number_unsigned() ? code.get<std::uint64_t>() > 255
                                  : code.get<std::int64_t>() < 0 || code.get<std::int64_t>() > 255)
        died("replied exit_code " + code.dump() + ", outside an exit status's 0..255");
    if (reply.value("id", std::string()) != request.value("id", std::string()))
        died("replied for task '" + reply.value("id", std::string()) + "', not '" +
             request.value("id", std::string()) + "'");
    return reply["exit_code"].get<int>();
}

CommandServer& ServerPool::get(const std::string& command, const std::filesystem::path& log,
                               const EnvOverrides& env) {
    std::string key = command;
    for (const auto& [name, value] : env) key += "\n" + name + "=" + value;
    auto& slot = servers_[key];
    if (!slot || !slot->usable())
        slot = std::make_unique<CommandServer>(command, log, env, std::chrono::milliseconds(2000));
    return *slot;
}

void ServerPool::prune() {
    std::erase_if(servers_, [](const auto& kv) { return !kv.second || !kv.second->usable(); });
}

}  // namespace compatbench
