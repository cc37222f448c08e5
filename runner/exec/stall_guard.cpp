#include "exec/stall_guard.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "comm/comm.h"
#include "exec/signals.h"

namespace compatbench {

namespace {
// Seconds a step that met an MPI-IO error may stand still before its rank ends the job.
constexpr double kStallAfterError = 5.0;
}  // namespace

Watchdog stall_guard(double limit, const std::string& path, int size, int rank,
                     const std::string& step) {
    const auto fingerprint = [path] {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return std::string("missing");
        return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
    };
    // Only an error met during this step shortens its wait.
    const std::size_t errors_before = comm::file_errors().count;
    const auto failed = [errors_before] { return comm::file_errors().count > errors_before; };
    const auto expire = [rank, step, limit, path, failed] {
        const std::string error = failed() ? comm::file_errors().last : std::string();
        std::cerr << "compatbench: rank " << rank << ": " << step << " of " << path;
        if (!error.empty())
            std::cerr << ": MPI-IO failed here (" << error << ") and the step made no progress for "
                      << std::min(limit, kStallAfterError)
                      << " s: a full disk or a quota (the run stops; the ledger keeps every "
                         "finished task: make room and continue with --resume)\n";
        else
            std::cerr << " made no progress for " << limit
                      << " s (runner.stall_timeout): a write that failed on another rank inside "
                         "HDF5, such as a full disk or a quota, leaves the ranks waiting (the run "
                         "stops; the ledger keeps every finished task: fix the cause and continue "
                         "with --resume)\n";
        spdlog::default_logger()->flush();
        std::_Exit(kExitInternal);
    };
    return Watchdog(size > 1 ? limit : 0.0, fingerprint, expire, 1.0, failed, kStallAfterError);
}

}  // namespace compatbench
