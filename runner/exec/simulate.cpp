#include "exec/simulate.h"

#include <deque>
#include <queue>

#include "exec/dispatch_policy.h"

namespace compatbench {

namespace {
// Tasks in an order where every dependency comes first.
std::vector<std::size_t> topological(const TaskGraph& graph) {
    const auto& tasks = graph.tasks();
    std::vector<std::size_t> waiting(tasks.size()), order;
    std::deque<std::size_t> ready;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        waiting[i] = tasks[i].deps.size();
        if (waiting[i] == 0) ready.push_back(i);
    }
    while (!ready.empty()) {
        const std::size_t i = ready.front();
        ready.pop_front();
        order.push_back(i);
        for (std::size_t d : tasks[i].dependents)
            if (--waiting[d] == 0) ready.push_back(d);
    }
    return order;
}
}  // namespace

std::vector<std::size_t> duration_critical_path(const TaskGraph& graph,
                                                const std::vector<double>& duration) {
    const auto& tasks = graph.tasks();
    std::vector<double> finish(tasks.size(), 0.0);
    std::vector<std::size_t> via(tasks.size(), tasks.size());
    std::size_t last = tasks.size();
    for (std::size_t i : topological(graph)) {
        for (std::size_t d : tasks[i].deps)
            if (via[i] == tasks.size() || finish[d] > finish[via[i]]) via[i] = d;
        finish[i] = (via[i] == tasks.size() ? 0.0 : finish[via[i]]) + duration[i];
        if (last == tasks.size() || finish[i] > finish[last]) last = i;
    }
    std::vector<std::size_t> path;
    for (std::size_t i = last; i < tasks.size(); i = via[i]) path.insert(path.begin(), i);
    return path;
}

Simulation simulate_dispatch(const TaskGraph& graph, const Config& config,
                             const std::vector<double>& duration, int ranks, double overhead) {
    const auto& tasks = graph.tasks();
    const std::size_t n = tasks.size();
    Simulation sim;
    sim.ranks = ranks;
    for (double d : duration) sim.work += d;
    {
        double cp = 0.0;
        for (std::size_t i : duration_critical_path(graph, duration)) cp += duration[i];
        sim.critical_path = cp;
    }
    struct Ready {
        double cost;
        std::size_t index;
        bool operator<(const Ready& o) const {
            return cost != o.cost ? cost < o.cost : index > o.index;
        }
    };
    std::priority_queue<Ready> ready;
    std::vector<std::size_t> waiting(n);
    for (std::size_t i = 0; i < n; ++i) {
        waiting[i] = tasks[i].deps.size();
        if (waiting[i] == 0) ready.push({config.groups[tasks[i].group].cost, i});
    }
    std::vector<GroupTiming> timing(config.groups.size());
    const auto r_count = static_cast<std::size_t>(ranks);
    std::vector<std::deque<std::size_t>> queue(r_count);
    std::vector<std::size_t> outstanding(r_count, 0), running(r_count, n);
    // Completion events: (time, rank), earliest first, then the lowest rank.
    using Event = std::pair<double, std::size_t>;
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    double now = 0.0;
    std::size_t finished = 0;
    const auto start_next = [&](std::size_t r) {
        if (running[r] != n || queue[r].empty()) return;
        running[r] = queue[r].front();
        queue[r].pop_front();
        events.push({now + overhead + duration[running[r]], r});
    };
    const auto dispatch = [&] {
        for (std::size_t r = 0; r < r_count && !ready.empty(); ++r) {
            std::size_t batch = 0;
            while (!ready.empty()) {
                const std::size_t g = tasks[ready.top().index].group;
                if (outstanding[r] + batch >=
                    policy_target_outstanding(timing[g], ready.size(), ranks))
                    break;
                const std::size_t limit = policy_batch_size(timing[g], ready.size(), ranks);
                for (std::size_t k = 0; k < limit && !ready.empty(); ++k) {
                    queue[r].push_back(ready.top().index);
                    ready.pop();
                    ++batch;
                }
            }
            outstanding[r] += batch;
            start_next(r);
        }
    };
    dispatch();
    while (finished < n && !events.empty()) {
        const auto [t, r] = events.top();
        events.pop();
        now = t;
        const std::size_t i = running[r];
        running[r] = n;
        --outstanding[r];
        ++finished;
        timing[tasks[i].group].seconds += duration[i];
        ++timing[tasks[i].group].samples;
        for (std::size_t d : tasks[i].dependents)
            if (--waiting[d] == 0) ready.push({config.groups[tasks[d].group].cost, d});
        start_next(r);
        dispatch();
    }
    sim.makespan = now;
    return sim;
}

}  // namespace compatbench
