// What tasks are expected to cost, in seconds: one model for the progress ETA, for
// `compatbench status` and for `compatbench plan`.
//   - A group with finished tasks (in this run, or in an earlier one of the same output
//     folder, from the ledger): the mean duration of those tasks.
//   - A group without, whose cost an earlier run in another folder left in the cost cache
//     (exec/cost_cache.h): that cost, with bounds of half and twice it.
//   - A group without either: its `cost` hint times a scale, the geometric mean of (measured mean /
//     hint) over the measured groups most like it: those that run the same program (their
//     commands' words, placeholders and options aside: compatnets.finetune evaluate), else
//     those of its class. There are two classes: groups that run a user's command
//     (kind/task_kind.h runs_command; hint kCommandCost when the config gives none) and the
//     others, so that a measured native kernel says nothing of an unmeasured script, nor the
//     reverse. With neither the scale is 1, so a hint reads as seconds on one core.
//   - Bounds for a measured group: its mean ÷ and × kMeasuredBand (1.25). The mean of the
//     tasks finished so far is not the mean of those left (a group's cost drifts as it runs;
//     the dispatch round trips and a shared machine add their part): on real.yaml the point
//     was off by −14% to +13% from 10% of the tasks on, every group measured
//     (bench/README.md).
//   - Bounds for an unmeasured group: a quarter and four times that when a group like it was
//     measured, a tenth and ten times when none was; but for a command group whose program
//     has not been measured, a fiftieth (a training script says little of an evaluation
//     served in milliseconds).
// The time left is the coordinator's own dispatch (exec/dispatch_policy.h) simulated over
// the unfinished part of the task graph on the run's ranks (exec/simulate.h), with these
// expected durations and what is left of each running task. A task in flight longer than
// its expected time is late: it counts as a sample of its time so far (raising its group's
// mean and, through the scale, its kin's), and is expected to run a quarter of that time
// more (low bound: none; high bound: as long again), so the estimate rises while it runs.
// Only the first task of a rank's batch has been running. Until some group has a finished
// task or is remembered, the time left is not known (EtaRange::known), late tasks or not.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "exec/task_flow.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

// Which estimate of an unmeasured group's tasks: the low bound, the point, the high bound.
enum class Estimate { low, mid, high };

inline constexpr double kMeasuredBand = 1.25;  // a measured group's bounds: mean ÷ and × this
inline constexpr double kLateShare = 0.25;  // a late task's expected time left ÷ its time so far

// What is left, at estimate `e`, of a task expected to take `mid` seconds (point) and
// `expected` (at `e`) after `elapsed`: late once `elapsed` reaches `mid` (see above).
double late_remaining(double mid, double expected, double elapsed, Estimate e);

class CostModel {
  public:
    explicit CostModel(const Config& config);

    void record(std::size_t group, double seconds);  // a finished task's duration
    // What the group's tasks cost in an earlier run elsewhere (mean seconds per task).
    void remember(std::size_t group, double seconds);
    bool remembered(std::size_t group) const { return remembered_[group] >= 0.0; }
    const GroupTiming& timing(std::size_t group) const { return timing_[group]; }
    const std::vector<GroupTiming>& timings() const { return timing_; }
    bool measured(std::size_t group) const { return timing_[group].samples > 0; }
    // Seconds per unit of cost hint, for the class of `group`.
    double scale(std::size_t group) const;
    // Seconds per task of the group.
    double expected(std::size_t group, Estimate e = Estimate::mid) const;
    std::vector<double> expected_durations(const TaskGraph& graph,
                                           Estimate e = Estimate::mid) const;  // per task

  private:
    std::vector<double> hint_;
    // The measured groups like `group` (same program, else same class), and how alike.
    enum class Kinship { none, cls, program };
    Kinship kin(std::size_t group, std::size_t other) const;
    Kinship best_kin(std::size_t group) const;

    std::vector<bool> command_;         // the group's class
    std::vector<std::string> program_;  // its command's program ("" for native groups)
    std::vector<GroupTiming> timing_;
    std::vector<double> remembered_;  // < 0: nothing remembered
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

// Seconds until the last unfinished task ends, on `ranks` (devices held per rank), with unmeasured
// groups at the estimate `e`.
double remaining_seconds(const TaskGraph& graph, const Config& config, const CostModel& model,
                         const RunState& state, const RankDevices& ranks,
                         Estimate e = Estimate::mid);

// The time left as a point and a range; `unmeasured`: how many groups with tasks left have no
// measured task, `remembered`: how many of those the cost cache prices.
struct EtaRange {
    double low = 0.0, mid = 0.0, high = 0.0;
    std::size_t unmeasured = 0, remembered = 0;
    bool known = true;  // false: no group measured, none remembered (hints alone)
};
EtaRange remaining_range(const TaskGraph& graph, const Config& config, const CostModel& model,
                         const RunState& state, const RankDevices& ranks);

}  // namespace compatbench
