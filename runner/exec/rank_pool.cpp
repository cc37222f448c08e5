#include "exec/rank_pool.h"

#include <algorithm>
#include <numeric>

#include "core/duration.h"
#include "exec/placement.h"

namespace compatbench {

RankPool::RankPool(std::vector<RankResources> ranks, int size, std::size_t tasks)
    : ranks_(std::move(ranks)) {
    ranks_.resize(static_cast<std::size_t>(std::max(size, 1)));
    order_ = dispatch_order(devices());
    outstanding_.assign(ranks_.size(), 0);
    final_.assign(ranks_.size(), false);
    running_rank_.assign(tasks, -1);
    sent_epoch_.assign(tasks, 0.0);
    sent_at_.resize(tasks);
}

RankDevices RankPool::devices() const { return held_devices(ranks_); }

std::size_t RankPool::in_flight() const {
    return std::accumulate(outstanding_.begin(), outstanding_.end(), std::size_t{0});
}

void RankPool::sent(int r, const std::vector<Assignment>& batch) {
    const double epoch = now_epoch();
    const auto now = std::chrono::steady_clock::now();
    for (const Assignment& a : batch) {
        running_rank_[a.index] = r;
        sent_epoch_[a.index] = epoch;
        sent_at_[a.index] = now;
    }
    outstanding_[static_cast<std::size_t>(r)] += batch.size();
}

void RankPool::returned(int r, std::size_t i) {
    --outstanding_[static_cast<std::size_t>(r)];
    running_rank_[i] = -1;
}

double RankPool::running_seconds(std::size_t i) const { return seconds_since(sent_at_[i]); }

bool RankPool::all_final() const {
    return std::all_of(final_.begin(), final_.end(), [](bool f) { return f; });
}

void RankPool::place(TaskFact& f, int r, int gpus) const {
    f.host = at(r).host;
    f.devices = join_devices(task_devices(at(r).devices, gpus));
}

}  // namespace compatbench
