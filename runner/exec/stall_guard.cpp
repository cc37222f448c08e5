#include "exec/stall_guard.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>

#include "exec/signals.h"

namespace compatbench {

Watchdog stall_guard(double limit, const std::string& path, int size, int rank,
                     const std::string& step) {
    const auto fingerprint = [path] {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return std::string("missing");
        return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
    };
    const auto expire = [rank, step, limit, path] {
        std::cerr << "compatbench: rank " << rank << ": " << step << " of " << path
                  << " made no progress for " << limit
                  << " s (runner.stall_timeout): a write that failed on another rank inside "
                     "HDF5, such as a full disk or a quota, leaves the ranks waiting (the run "
                     "stops; the ledger keeps every finished task: fix the cause and continue "
                     "with --resume)\n";
        spdlog::default_logger()->flush();
        std::_Exit(kExitInternal);
    };
    return Watchdog(size > 1 ? limit : 0.0, fingerprint, expire);
}

}  // namespace compatbench
