// The flow of tasks through the graph, shared by the coordinator's task book
// (exec/task_book.h) and `plan`'s simulation of it (exec/simulate.h), so that the two cannot
// drift apart: how many unfinished dependencies each task waits on, the ready queues per
// `gpus:` value, which queue a rank holding some devices takes from, and the dispatch rule
// that fills a rank (exec/dispatch_policy.h).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <queue>
#include <vector>

#include "exec/dispatch_policy.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

// What each rank holds: its number of devices (index = rank).
using RankDevices = std::vector<std::size_t>;
// Whether a rank holding `held` devices takes a task of a group needing `gpus`.
inline bool rank_can_run(std::size_t held, int gpus, bool cpu_tasks_on_gpu_ranks) {
    if (gpus > 0) return held >= static_cast<std::size_t>(gpus);
    return held == 0 || cpu_tasks_on_gpu_ranks;
}

// `n` ranks holding no devices (at least one).
inline RankDevices cpu_ranks(int n) {
    return RankDevices(n > 1 ? static_cast<std::size_t>(n) : 1, 0);
}
// The order in which ranks are offered work: those without devices first, then by devices
// held, so that CPU tasks fill CPU ranks before a GPU rank spares its time for them.
std::vector<int> dispatch_order(const RankDevices& ranks);

class TaskFlow {
  public:
    TaskFlow(const Config& config, const TaskGraph& graph);

    std::size_t waiting(std::size_t i) const { return waiting_[i]; }
    // One dependency of task `i` is finished; true when it waits on nothing more.
    bool satisfy(std::size_t i) { return --waiting_[i] == 0; }
    // Task `i` waits on one more thing (a restored task that holds it back).
    void hold(std::size_t i) { ++waiting_[i]; }

    void make_ready(std::size_t i);
    bool has_ready() const { return ready_count_ > 0; }
    std::size_t ready_count() const { return ready_count_; }
    // Whether a rank holding `held` devices has a ready task it may run (rank_can_run).
    bool has_ready_for(std::size_t held) const { return queue_for(held).has_value(); }
    // The group of the task that take(held) would hand out (has_ready_for must hold).
    std::size_t next_group(std::size_t held) const;
    // The next ready task for a rank holding `held` devices, no longer ready: GPU tasks
    // first, those needing the most devices the rank holds first; then CPU tasks; within
    // each, the order of exec/dispatch_policy.h (cost hint, group, spread order).
    std::size_t take(std::size_t held);

  private:
    using ReadyQueue = std::priority_queue<ReadyEntry>;
    // The `gpus:` value whose queue a rank holding `held` devices takes from next.
    std::optional<int> queue_for(std::size_t held) const;

    const Config& config_;
    const TaskGraph& graph_;
    std::vector<std::size_t> waiting_;  // unfinished dependencies
    std::map<int, ReadyQueue> ready_;   // by the group's gpus:
    std::size_t ready_count_ = 0;
};

// The dispatch rule: how many ready tasks a rank holding `held` devices, with `outstanding`
// tasks already sent to it, takes now, in batches as the policy sizes them from
// `timing(group)` (a GroupTiming). `take()` is called once per task and must take it from
// `flow`. A rank holding devices runs CPU tasks one at a time, unbatched and never queued
// ahead, so that GPU work finds it free soon (docs/gpus.md).
template <class Timing, class Take>
std::size_t fill_rank(const TaskFlow& flow, const Config& config, std::size_t held,
                      std::size_t outstanding, int ranks, Timing&& timing, Take&& take) {
    std::size_t taken = 0;
    while (flow.has_ready_for(held)) {
        const std::size_t group = flow.next_group(held);
        const bool spare_cpu_work = held > 0 && config.groups[group].gpus == 0;
        const GroupTiming& t = timing(group);
        const std::size_t target =
            spare_cpu_work ? 1 : policy_target_outstanding(t, flow.ready_count(), ranks);
        if (outstanding + taken >= target) break;
        const std::size_t limit =
            spare_cpu_work ? 1 : policy_batch_size(t, flow.ready_count(), ranks);
        for (std::size_t k = 0; k < limit && flow.has_ready_for(held); ++k, ++taken) take();
    }
    return taken;
}

}  // namespace compatbench
