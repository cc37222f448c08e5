#include "exec/task_flow.h"

#include <algorithm>
#include <numeric>

namespace compatbench {

std::vector<int> dispatch_order(const RankDevices& ranks) {
    std::vector<int> order(ranks.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return ranks[static_cast<std::size_t>(a)] < ranks[static_cast<std::size_t>(b)];
    });
    return order;
}

TaskFlow::TaskFlow(const Config& config, const TaskGraph& graph) : config_(config), graph_(graph) {
    waiting_.reserve(graph.tasks().size());
    for (const Task& t : graph.tasks()) waiting_.push_back(t.deps.size());
}

void TaskFlow::make_ready(std::size_t i) {
    const TaskGroup& group = config_.groups[graph_.tasks()[i].group];
    ready_[group.gpus].push(policy_entry(config_, graph_, i));
    ++ready_count_;
}

std::optional<int> TaskFlow::queue_for(std::size_t held) const {
    for (auto it = ready_.rbegin(); it != ready_.rend(); ++it)
        if (!it->second.empty() &&
            rank_can_run(held, it->first, config_.runner.cpu_tasks_on_gpu_ranks))
            return it->first;
    return std::nullopt;
}

std::size_t TaskFlow::next_group(std::size_t held) const {
    return graph_.tasks()[ready_.at(*queue_for(held)).top().index].group;
}

std::size_t TaskFlow::take(std::size_t held) {
    ReadyQueue& queue = ready_.at(*queue_for(held));
    const std::size_t i = queue.top().index;
    queue.pop();
    --ready_count_;
    return i;
}

}  // namespace compatbench
