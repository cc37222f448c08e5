#include "exec/cost_model.h"

#include <algorithm>
#include <cmath>

#include "exec/simulate.h"

namespace compatbench {

CostModel::CostModel(const Config& config) : timing_(config.groups.size()) {
    hint_.reserve(config.groups.size());
    for (const auto& g : config.groups) hint_.push_back(g.cost);
}

void CostModel::record(std::size_t group, double seconds) {
    if (!std::isfinite(seconds) || seconds < 0.0) return;
    timing_[group].seconds += seconds;
    ++timing_[group].samples;
}

double CostModel::scale() const {
    double log_sum = 0.0;
    std::size_t groups = 0;
    for (std::size_t g = 0; g < timing_.size(); ++g) {
        if (timing_[g].samples == 0 || hint_[g] <= 0.0) continue;
        const double mean = timing_[g].seconds / static_cast<double>(timing_[g].samples);
        log_sum += std::log(std::max(mean, 1e-6) / hint_[g]);
        ++groups;
    }
    return groups ? std::exp(log_sum / static_cast<double>(groups)) : 1.0;
}

double CostModel::expected(std::size_t group) const {
    const GroupTiming& t = timing_[group];
    if (t.samples > 0) return t.seconds / static_cast<double>(t.samples);
    return hint_[group] * scale();
}

std::vector<double> CostModel::expected_durations(const TaskGraph& graph) const {
    std::vector<double> per_group(timing_.size());
    for (std::size_t g = 0; g < timing_.size(); ++g) per_group[g] = expected(g);
    std::vector<double> out;
    out.reserve(graph.tasks().size());
    for (const auto& t : graph.tasks()) out.push_back(per_group[t.group]);
    return out;
}

double remaining_seconds(const TaskGraph& graph, const Config& config, const CostModel& model,
                         const RunState& state, int ranks) {
    std::vector<double> duration = model.expected_durations(graph);
    SimulationStart start;
    start.finished = state.finished;
    start.timing = model.timings();
    for (std::size_t i = 0; i < duration.size(); ++i)
        if (state.finished[i]) duration[i] = 0.0;
    // A rank runs its tasks in order: only the one dispatched first has been running; the
    // others of its batch wait whole.
    std::vector<RunState::Running> running = state.running;
    std::stable_sort(running.begin(), running.end(), [](const auto& a, const auto& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.elapsed > b.elapsed;
    });
    for (std::size_t k = 0; k < running.size(); ++k) {
        const auto& r = running[k];
        if (k == 0 || running[k - 1].rank != r.rank)
            duration[r.task] = std::max(0.0, duration[r.task] - r.elapsed);
        start.running.emplace_back(r.rank, r.task);
    }
    return simulate_dispatch(graph, config, duration, std::max(ranks, 1), 0.0, &start).makespan;
}

}  // namespace compatbench
