// What tasks are expected to cost, in seconds: one model for the progress ETA, for
// `compatbench status` and for `compatbench plan`.
//   - A group with finished tasks: the mean duration of those tasks.
//   - A group without: its `cost` hint times the machine's scale, the geometric mean over
//     measured groups of (measured mean / hint). Before any task has finished the scale
//     is 1, so a hint reads as seconds on one core.
// The time left is the coordinator's own dispatch (exec/dispatch_policy.h) simulated over
// the unfinished part of the task graph on the run's ranks (exec/simulate.h), with these
// expected durations and what is left of each running task.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/dispatch_policy.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

class CostModel {
  public:
    explicit CostModel(const Config& config);

    void record(std::size_t group, double seconds);  // a finished task's duration
    const GroupTiming& timing(std::size_t group) const { return timing_[group]; }
    const std::vector<GroupTiming>& timings() const { return timing_; }
    double scale() const;                      // seconds per unit of cost hint
    double expected(std::size_t group) const;  // seconds per task of the group
    std::vector<double> expected_durations(const TaskGraph& graph) const;  // per task

  private:
    std::vector<double> hint_;
    std::vector<GroupTiming> timing_;
};

// A run part-way through, as the ETA sees it.
struct RunState {
    std::vector<bool> finished;  // per task: done, failed for good or skipped
    struct Running {
        int rank;
        std::size_t task;
        double elapsed;  // seconds since it was dispatched
    };
    std::vector<Running> running;
};

// Seconds until the last unfinished task ends, on `ranks` ranks.
double remaining_seconds(const TaskGraph& graph, const Config& config, const CostModel& model,
                         const RunState& state, int ranks);

}  // namespace compatbench
