#include "store/ledger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace compatbench {

namespace {
std::runtime_error sys_error(const std::string& what, const std::string& path) {
    return std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

// Cuts a last line that has no newline (a write cut short by a kill).
void cut_torn_tail(const std::string& path, const std::function<void(const std::string&)>& warn) {
    const int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        off_t end = st.st_size;
        char c = 0;
        if (pread(fd, &c, 1, end - 1) == 1 && c != '\n') {
            off_t keep = end - 1;
            while (keep > 0) {
                if (pread(fd, &c, 1, keep - 1) != 1 || c == '\n') break;
                --keep;
            }
            if (ftruncate(fd, keep) == 0) {
                warn(path + ": cut a torn last line of " + std::to_string(end - keep) +
                     " bytes left by an interrupted run (its task will run again)");
            }
        }
    }
    ::close(fd);
}
}  // namespace

Ledger::Ledger(std::string path, double fsync_interval,
               const std::function<void(const std::string&)>& warn)
    : path_(std::move(path)),
      window_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(fsync_interval))),
      last_sync_(std::chrono::steady_clock::now()) {
    cut_torn_tail(path_, warn);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw sys_error("cannot open the ledger for appending", path_);
}

Ledger::~Ledger() {
    if (fd_ >= 0) {
        try {
            sync();
        } catch (...) {
        }
        ::close(fd_);
    }
}

void Ledger::append(const nlohmann::json& record) {
    buffer_ += record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    buffer_ += '\n';
}

void Ledger::write_pending() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw sys_error("cannot write the ledger", path_);
        }
        done += static_cast<std::size_t>(n);
    }
    if (done > 0) unsynced_ = true;
    buffer_.clear();
}

void Ledger::sync_if_due() {
    write_pending();
    if (unsynced_ && std::chrono::steady_clock::now() - last_sync_ >= window_) sync();
}

void Ledger::sync() {
    write_pending();
    if (!unsynced_) return;
    if (::fsync(fd_) != 0) throw sys_error("cannot fsync the ledger", path_);
    unsynced_ = false;
    last_sync_ = std::chrono::steady_clock::now();
}

std::vector<nlohmann::json> Ledger::read(const std::string& path,
                                         const std::function<void(const std::string&)>& warn) {
    std::vector<nlohmann::json> records;
    std::ifstream in(path);
    if (!in) return records;
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        try {
            auto j = nlohmann::json::parse(line);
            if (!j.is_object() || !j.contains("id") || !j.contains("status") ||
                !j.contains("config_hash")) {
                warn(path + ":" + std::to_string(number) +
                     ": not a ledger record (needs id, status, config_hash); skipped");
                continue;
            }
            records.push_back(std::move(j));
        } catch (const nlohmann::json::exception& e) {
            warn(path + ":" + std::to_string(number) + ": not JSON (" + e.what() + "); skipped");
        }
    }
    return records;
}

}  // namespace compatbench
