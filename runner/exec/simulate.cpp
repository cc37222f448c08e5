#include "exec/simulate.h"

#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>

#include "exec/task_flow.h"

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

namespace {
// The coordinator's loop in simulated time: the task book's flow (exec/task_flow.h), ranks
// with queues, completion events.
class DispatchSim {
  public:
    DispatchSim(const TaskGraph& graph, const Config& config, const std::vector<double>& duration,
                const RankDevices& ranks, double overhead)
        : tasks_(graph.tasks()),
          config_(config),
          duration_(duration),
          held_(ranks),
          order_(dispatch_order(ranks)),
          overhead_(overhead),
          n_(tasks_.size()),
          flow_(config, graph),
          timing_(config.groups.size()),
          queue_(ranks.size()),
          outstanding_(ranks.size(), 0),
          running_(ranks.size(), n_) {}

    // Marks finished tasks, queues running ones, and readies what waits on nothing. A
    // finished task never runs (a skipped one may still wait on unfinished tasks); a running
    // one is not ready again, and its dependents wait for its completion.
    void start(const SimulationStart* from) {
        placed_.assign(n_, false);
        std::size_t finished = 0;
        if (from) {
            if (from->finished.size() != n_)
                throw std::invalid_argument("simulation start: finished has the wrong size");
            if (!from->timing.empty()) timing_ = from->timing;
            for (std::size_t i = 0; i < n_; ++i) {
                placed_[i] = from->finished[i];
                finished += from->finished[i] ? 1 : 0;
            }
            for (const auto& [rank, i] : from->running) {
                if (rank < 0 || static_cast<std::size_t>(rank) >= held_.size() || i >= n_ ||
                    placed_[i])
                    throw std::invalid_argument("simulation start: a running task out of range");
                queue_[static_cast<std::size_t>(rank)].push_back(i);
                ++outstanding_[static_cast<std::size_t>(rank)];
                placed_[i] = true;
            }
            for (std::size_t i = 0; i < n_; ++i)
                if (from->finished[i])
                    for (std::size_t d : tasks_[i].dependents) flow_.satisfy(d);
        }
        for (std::size_t i = 0; i < n_; ++i)
            if (!placed_[i] && flow_.waiting(i) == 0) push_ready(i);
        left_ = n_ - finished;
        for (std::size_t r = 0; r < queue_.size(); ++r) start_next(r);
        dispatch();
    }

    // Runs to the end; the makespan, +inf when some task can run on no rank (a `gpus:` more
    // than any rank holds; exec/placement.h placement_problem refuses such runs first).
    double run() {
        while (left_ > 0 && !events_.empty()) {
            const auto [t, r] = events_.top();
            events_.pop();
            now_ = t;
            const std::size_t i = running_[r];
            running_[r] = n_;
            --outstanding_[r];
            --left_;
            timing_[tasks_[i].group].seconds += duration_[i];
            ++timing_[tasks_[i].group].samples;
            for (std::size_t d : tasks_[i].dependents)
                if (flow_.satisfy(d) && !placed_[d]) push_ready(d);
            start_next(r);
            dispatch();
        }
        return left_ > 0 ? std::numeric_limits<double>::infinity() : now_;
    }

  private:
    void push_ready(std::size_t i) {
        placed_[i] = true;
        flow_.make_ready(i);
    }

    void start_next(std::size_t r) {
        if (running_[r] != n_ || queue_[r].empty()) return;
        running_[r] = queue_[r].front();
        queue_[r].pop_front();
        events_.push({now_ + overhead_ + duration_[running_[r]], r});
    }

    // The coordinator's dispatch (Coordinator::dispatch): the ranks in dispatch order, each
    // filled by the dispatch rule.
    void dispatch() {
        const int ranks = static_cast<int>(held_.size());
        for (int rank : order_) {
            if (!flow_.has_ready()) break;
            const auto r = static_cast<std::size_t>(rank);
            outstanding_[r] += fill_rank(
                flow_, config_, held_[r], outstanding_[r], ranks,
                [&](std::size_t group) -> const GroupTiming& { return timing_[group]; },
                [&] { queue_[r].push_back(flow_.take(held_[r])); });
            start_next(r);
        }
    }

    const std::vector<Task>& tasks_;
    const Config& config_;
    const std::vector<double>& duration_;
    const RankDevices& held_;
    std::vector<int> order_;
    double overhead_;
    std::size_t n_, left_ = 0;
    TaskFlow flow_;
    std::vector<bool> placed_;  // finished, running or once made ready: never ready again
    std::vector<GroupTiming> timing_;
    std::vector<std::deque<std::size_t>> queue_;
    std::vector<std::size_t> outstanding_, running_;
    // Completion events: (time, rank), earliest first, then the lowest rank.
    using Event = std::pair<double, std::size_t>;
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
    double now_ = 0.0;
};
}  // namespace

Simulation simulate_dispatch(const TaskGraph& graph, const Config& config,
                             const std::vector<double>& duration, const RankDevices& ranks,
                             double overhead, const SimulationStart* start) {
    if (ranks.empty()) throw std::invalid_argument("simulation: no ranks");
    Simulation sim;
    sim.ranks = static_cast<int>(ranks.size());
    for (std::size_t i = 0; i < duration.size(); ++i)
        if (!start || !start->finished[i]) sim.work += duration[i];
    for (std::size_t i : duration_critical_path(graph, duration)) sim.critical_path += duration[i];
    DispatchSim run(graph, config, duration, ranks, overhead);
    run.start(start);
    sim.makespan = run.run();
    return sim;
}

}  // namespace compatbench
