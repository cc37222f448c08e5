// The watchdog over a collective step on results.h5 (docs/cluster.md "Exit codes").
#pragma once

#include <string>

#include "core/watchdog.h"

namespace compatbench {

// Arms the watchdog over a collective step on results.h5 (on 2 or more ranks). HDF5 may
// not return at all when a write fails on one rank inside it (a quota: rank 0's metadata
// write fails in H5Fflush, it goes on to the truncation's barrier while the others wait in
// the metadata's): a step that leaves the file unchanged for runner.stall_timeout seconds
// ends its rank, and with it the job (exit 3). A rank on which MPI-IO reported an error (the
// write a quota refused) waits 5 s instead: it stops the job within seconds.
// `limit`: runner.stall_timeout; `step` names the step in the message ("the creation").
Watchdog stall_guard(double limit, const std::string& path, int size, int rank,
                     const std::string& step);

}  // namespace compatbench
