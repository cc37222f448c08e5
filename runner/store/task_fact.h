// The run facts of one task, for results.h5's /tasks: what the task book keeps per task and
// the results file writes. Free of MPI and HDF5, so that the task book needs neither.
#pragma once

#include <cstdint>
#include <string>

namespace compatbench {

struct TaskFact {
    std::string status = "pending";  // done, failed, skipped, pending
    std::int64_t rank = -1;
    std::int64_t attempt = 0;
    double start = 0.0;
    double duration = 0.0;
    std::string error;
    std::string host;     // where it ran
    std::string devices;  // the devices it was given ("0,1"; "" for none)
};

}  // namespace compatbench
