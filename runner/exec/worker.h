// A worker rank (rank > 0): runs what the coordinator assigns on its task thread, writes
// the rows of its finished tasks to results.h5, and reports results back in batches.
#pragma once

#include "comm/comm.h"
#include "exec/executor.h"
#include "store/results_file.h"

namespace compatbench {

void run_worker(const Config& config, const TaskGraph& graph, const comm::Comm& comm,
                ResultsFile& results, Executor& executor);

}  // namespace compatbench
