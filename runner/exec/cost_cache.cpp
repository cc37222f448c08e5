#include "exec/cost_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/hash.h"
#include "core/duration.h"

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

std::filesystem::path recall_costs(const Config& config, CostModel& model) {
    const std::filesystem::path dir = std::filesystem::absolute(config.path).parent_path();
    const std::filesystem::path path = cost_cache_path(config.runner, dir);
    if (path.empty()) return path;
    try {
        const auto remembered = load_cost_cache(path);
        std::size_t found = 0;
        for (std::size_t g = 0; g < config.groups.size(); ++g) {
            const auto it = remembered.find(group_fingerprint(config.groups[g]));
            if (it == remembered.end()) continue;
            model.remember(g, it->second.seconds);
            ++found;
        }
        spdlog::info("cost cache {}: {} of {} groups' costs from earlier runs", path.string(),
                     found, config.groups.size());
    } catch (const std::exception& e) {
        spdlog::warn("cost cache: {} (the ETA starts without it; it is rewritten at the end)",
                     e.what());
    }
    return path;
}

void remember_costs(const std::filesystem::path& path, const Config& config, const CostModel& model,
                    const std::string& host) {
    if (path.empty()) return;
    std::map<std::string, RememberedCost> entries;
    const double now = now_epoch();
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
        const GroupTiming& t = model.timing(g);
        if (t.samples == 0) continue;
        entries[group_fingerprint(config.groups[g])] = {t.seconds / static_cast<double>(t.samples),
                                                        t.samples, config.groups[g].name, host,
                                                        now};
    }
    try {
        if (!entries.empty()) store_cost_cache(path, entries);
    } catch (const std::exception& e) {
        spdlog::warn("cost cache: {} (this run's costs are not remembered)", e.what());
    }
}

}  // namespace compatbench
