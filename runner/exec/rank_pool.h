// The ranks as the coordinator sees them: what each holds (exec/placement.h), the order in
// which they are offered work (exec/task_flow.h dispatch_order), how many tasks each has
// outstanding, which have sent their last results, and where and since when each running
// task runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "core/resources.h"
#include "exec/executor.h"
#include "exec/task_flow.h"
#include "store/task_fact.h"

namespace compatbench {

class RankPool {
  public:
    // `ranks`: what each of the `size` ranks holds (missing ones hold nothing); `tasks`: the
    // graph's task count.
    RankPool(std::vector<RankResources> ranks, int size, std::size_t tasks);

    int size() const { return static_cast<int>(ranks_.size()); }
    const std::vector<int>& order() const { return order_; }
    std::size_t held(int r) const { return at(r).devices.size(); }
    RankDevices devices() const;  // devices held per rank, for the simulation
    const std::string& host(int r) const { return at(r).host; }

    std::size_t outstanding(int r) const { return outstanding_[static_cast<std::size_t>(r)]; }
    std::size_t in_flight() const;  // summed over the ranks
    bool idle() const { return in_flight() == 0; }

    // `batch` went out to rank r now.
    void sent(int r, const std::vector<Assignment>& batch);
    // Task i's result came back from rank r.
    void returned(int r, std::size_t i);
    int rank_of(std::size_t i) const { return running_rank_[i]; }  // -1: not running
    double sent_epoch(std::size_t i) const { return sent_epoch_[i]; }
    double running_seconds(std::size_t i) const;  // since it went out

    void mark_final(int r) { final_[static_cast<std::size_t>(r)] = true; }
    bool all_final() const;

    // Where a task needing `gpus` devices runs on rank r: its host and devices.
    void place(TaskFact& f, int r, int gpus) const;

  private:
    const RankResources& at(int r) const { return ranks_[static_cast<std::size_t>(r)]; }

    std::vector<RankResources> ranks_;
    std::vector<int> order_;
    std::vector<std::size_t> outstanding_;
    std::vector<bool> final_;         // sent its last results
    std::vector<int> running_rank_;   // per task, while it runs
    std::vector<double> sent_epoch_;  // per task: when it went out, Unix seconds
    std::vector<std::chrono::steady_clock::time_point> sent_at_;  // the same, steady
};

}  // namespace compatbench
