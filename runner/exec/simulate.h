// `compatbench plan --ranks`: the coordinator's dispatch simulated over the task graph with
// given task durations, for any number of ranks holding any number of devices. It runs the
// task book's own flow and dispatch rule (exec/task_flow.h), so `gpus:` counts as in a run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "exec/task_flow.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

struct Simulation {
    int ranks = 0;
    double makespan = 0.0;       // first dispatch to last task's end, seconds
    double work = 0.0;           // summed task durations
    double critical_path = 0.0;  // longest chain of durations through the dependencies
};

// Where a simulation starts when a run is part-way through (exec/cost_model.h).
struct SimulationStart {
    std::vector<bool> finished;                        // per task: nothing left to run
    std::vector<std::pair<int, std::size_t>> running;  // (rank, task) at time 0, in rank order
    std::vector<GroupTiming> timing;                   // what the policy has learnt per group
};

// Runs the policy on `ranks` (devices held per rank): ready tasks by cost hint, group, spread
// order, each to a rank that can run it; batches and prefetch as the coordinator sizes them
// from the durations it has seen; each rank runs its queue in order;
// `overhead` seconds are added to every task (the round trip). From `start` when given:
// finished tasks are skipped and a running task takes what `duration` says is left of it. A
// task that no rank can run makes the makespan +inf.
Simulation simulate_dispatch(const TaskGraph& graph, const Config& config,
                             const std::vector<double>& duration, const RankDevices& ranks,
                             double overhead, const SimulationStart* start = nullptr);

// The longest duration-weighted dependency chain: its task indices in execution order.
std::vector<std::size_t> duration_critical_path(const TaskGraph& graph,
                                                const std::vector<double>& duration);

}  // namespace compatbench
