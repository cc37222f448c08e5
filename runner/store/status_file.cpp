#include "store/status_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace compatbench {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GroupStatus, name, kind, tasks, done, failed,
                                                skipped, running, pending, cost, expected_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunningTask, id, group, rank, attempt, since, host,
                                                devices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StatusSnapshot, experiment, config_path,
                                                config_hash, hosts, state, stop_signal, ranks, pid,
                                                started, updated, eta_seconds, eta_low_seconds,
                                                eta_high_seconds, eta_unmeasured_groups,
                                                progress_interval, groups, running)

void write_status_file(const std::string& path, const StatusSnapshot& s) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << nlohmann::json(s).dump(1) << '\n';
        out.flush();
        if (!out) throw std::runtime_error(tmp + ": cannot write the status file");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw std::runtime_error(path + ": cannot replace the status file: " + ec.message());
}

StatusSnapshot read_status_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    try {
        const auto j = nlohmann::json::parse(in);
        if (!j.is_object() || !j.contains("groups"))
            throw std::runtime_error("not a status file (no 'groups')");
        return j.get<StatusSnapshot>();
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ": not a status file: " + e.what());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

}  // namespace compatbench
