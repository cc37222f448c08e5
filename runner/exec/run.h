// `compatbench run`: one experiment over all ranks of `comm`, from preflight to the closed
// results file. Every rank calls it with the same config.
#pragma once

#include <optional>
#include <string>

#include "comm/comm.h"
#include "exec/coordinator.h"
#include "exec/signals.h"
#include "graph/task_graph.h"

namespace compatbench {

struct RunOptions {
    std::string out;  // output folder
    bool resume = false;
    std::string log_level = "info";
    bool print_tables = true;  // print analysis tables at the end (coordinator)
    std::optional<std::string> devices =
        {};  // --devices: every node's devices, over runner.devices
};

struct RunSummary {
    int exit_code = kExitInternal;
    CoordinatorReport report;  // filled on rank 0
    double wall_seconds = 0.0;
};

// collective: all ranks, or it hangs. Returns the process exit code (the same on all ranks).
RunSummary run_experiment(const Config& config, const TaskGraph& graph, const RunOptions& options,
                          const comm::Comm& comm);

// Sets up the per-rank logger: <out>/logs/rank-<r>.log, plus the console on rank 0. The
// console log goes to stdout, like the tables printed at the end: mpirun forwards stdout and
// stderr separately, so one stream keeps the console in order.
void setup_logging(const std::string& out, int rank, const std::string& level, bool console);

}  // namespace compatbench
