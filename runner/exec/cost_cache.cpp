#include "exec/cost_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/hash.h"

namespace compatbench {

namespace fs = std::filesystem;

namespace {
const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

// An exclusive lock on `path`.lock while it lives.
class FileLock {
  public:
    explicit FileLock(const fs::path& path) {
        const std::string lock = path.string() + ".lock";
        fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
            throw std::runtime_error(lock + ": cannot lock: " + std::strerror(errno));
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);  // closing releases the lock
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_ = -1;
};
}  // namespace

std::string group_fingerprint(const TaskGroup& group) {
    nlohmann::json keys = group.entry;
    for (const char* k : {"name", "table", "cost", "after", "retries", "timeout", "print"})
        keys.erase(k);
    keys["kind"] = std::string(group.kind_name);
    char buffer[17];
    return std::string(hex64(fnv1a64(keys.dump()), buffer));
}

fs::path cost_cache_path(const RunnerSettings& runner, const fs::path& config_dir) {
    if (runner.cost_cache == "none") return {};
    if (!runner.cost_cache.empty()) return config_dir / runner.cost_cache;
    if (const char* e = env("COMPATBENCH_COST_CACHE"))
        return std::string(e) == "none" ? fs::path() : fs::absolute(e);
    if (const char* xdg = env("XDG_CACHE_HOME")) return fs::path(xdg) / "compatbench/costs.json";
    if (const char* home = env("HOME")) return fs::path(home) / ".cache/compatbench/costs.json";
    return {};
}

std::map<std::string, RememberedCost> load_cost_cache(const fs::path& path) {
    std::map<std::string, RememberedCost> out;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (errno == ENOENT) return out;
        throw std::runtime_error(path.string() + ": cannot open: " + std::strerror(errno));
    }
    try {
        const auto j = nlohmann::json::parse(in);
        for (const auto& [key, e] : j.at("groups").items()) {
            RememberedCost c;
            c.seconds = e.at("seconds").get<double>();
            c.samples = e.at("samples").get<std::size_t>();
            c.group = e.value("group", "");
            c.host = e.value("host", "");
            c.updated = e.value("updated", 0.0);
            if (c.samples > 0 && c.seconds >= 0.0) out[key] = c;
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path.string() + ": not a cost cache: " + e.what());
    }
    return out;
}

void store_cost_cache(const fs::path& path, const std::map<std::string, RememberedCost>& entries) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) throw std::runtime_error(path.parent_path().string() + ": " + ec.message());
    FileLock lock(path);
    std::map<std::string, RememberedCost> all;
    try {
        all = load_cost_cache(path);
    } catch (const std::runtime_error&) {
        // An unreadable cache is replaced by this run's entries (the caller warned on load).
    }
    for (const auto& [key, c] : entries) all[key] = c;
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [key, c] : all)
        groups[key] = {{"group", c.group},
                       {"seconds", c.seconds},
                       {"samples", c.samples},
                       {"host", c.host},
                       {"updated", c.updated}};
    const fs::path tmp = path.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << nlohmann::json{{"version", 1}, {"groups", groups}}.dump(1) << '\n';
        out.flush();
        if (!out) throw std::runtime_error(tmp.string() + ": cannot write the cost cache");
    }
    fs::rename(tmp, path, ec);
    if (ec) throw std::runtime_error(path.string() + ": cannot replace: " + ec.message());
}

}  // namespace compatbench
