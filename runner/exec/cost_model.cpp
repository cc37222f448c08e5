#include "exec/cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "exec/simulate.h"

namespace compatbench {

namespace {
// What a command group runs, as words: its `command` template's words that hold no
// placeholder and are no option (so `compatnets.finetune evaluate` of one template and of
// another with other arguments are one program).
std::string program_of(const TaskGroup& g) {
    const auto it = g.params.find("command");
    if (!g.runs_command || it == g.params.end()) return {};
    std::istringstream words(it->second.text);
    std::string program;
    for (std::string w; words >> w;)
        if (w.find('{') == std::string::npos && w[0] != '-') program += w + " ";
    return program;
}
}  // namespace

CostModel::CostModel(const Config& config)
    : timing_(config.groups.size()), remembered_(config.groups.size(), -1.0) {
    hint_.reserve(config.groups.size());
    for (const auto& g : config.groups) {
        hint_.push_back(g.cost);
        command_.push_back(g.runs_command);
        program_.push_back(program_of(g));
    }
}

CostModel::Kinship CostModel::kin(std::size_t group, std::size_t other) const {
    if (command_[group] != command_[other]) return Kinship::none;
    if (!program_[group].empty() && program_[group] == program_[other]) return Kinship::program;
    return Kinship::cls;
}

CostModel::Kinship CostModel::best_kin(std::size_t group) const {
    Kinship best = Kinship::none;
    for (std::size_t g = 0; g < timing_.size(); ++g)
        if (timing_[g].samples > 0 && hint_[g] > 0.0) best = std::max(best, kin(group, g));
    return best;
}

void CostModel::record(std::size_t group, double seconds) {
    if (!std::isfinite(seconds) || seconds < 0.0) return;
    timing_[group].seconds += seconds;
    ++timing_[group].samples;
}

void CostModel::remember(std::size_t group, double seconds) {
    if (std::isfinite(seconds) && seconds >= 0.0) remembered_[group] = seconds;
}

double CostModel::scale(std::size_t group) const {
    const Kinship best = best_kin(group);
    double log_sum = 0.0;
    std::size_t groups = 0;
    for (std::size_t g = 0; g < timing_.size(); ++g) {
        if (timing_[g].samples == 0 || hint_[g] <= 0.0 || best == Kinship::none ||
            kin(group, g) != best)
            continue;
        const double mean = timing_[g].seconds / static_cast<double>(timing_[g].samples);
        log_sum += std::log(std::max(mean, 1e-6) / hint_[g]);
        ++groups;
    }
    return groups ? std::exp(log_sum / static_cast<double>(groups)) : 1.0;
}

double CostModel::expected(std::size_t group, Estimate e) const {
    const GroupTiming& t = timing_[group];
    if (t.samples > 0) {
        const double mean = t.seconds / static_cast<double>(t.samples);
        return e == Estimate::mid   ? mean
               : e == Estimate::low ? mean / kMeasuredBand
                                    : mean * kMeasuredBand;
    }
    if (remembered(group)) {
        const double m = remembered_[group];
        return e == Estimate::mid ? m : e == Estimate::low ? m / 2.0 : m * 2.0;
    }
    const double point = hint_[group] * scale(group);
    if (e == Estimate::mid) return point;
    const Kinship best = best_kin(group);
    if (e == Estimate::high) return point * (best == Kinship::none ? 10.0 : 4.0);
    if (!command_[group]) return point / (best == Kinship::none ? 10.0 : 4.0);
    return point / (best == Kinship::program ? 4.0 : 50.0);
}

std::vector<double> CostModel::expected_durations(const TaskGraph& graph, Estimate e) const {
    std::vector<double> per_group(timing_.size());
    for (std::size_t g = 0; g < timing_.size(); ++g) per_group[g] = expected(g, e);
    std::vector<double> out;
    out.reserve(graph.tasks().size());
    for (const auto& t : graph.tasks()) out.push_back(per_group[t.group]);
    return out;
}

double late_remaining(double mid, double expected, double elapsed, Estimate e) {
    if (elapsed < mid) return std::max(0.0, expected - elapsed);
    return e == Estimate::low ? 0.0 : e == Estimate::mid ? kLateShare * elapsed : elapsed;
}

namespace {
// The tasks that have been running: a rank runs its batch in order, so only the one it was
// given first (the longest in flight) has; the others of its batch wait whole.
std::vector<RunState::Running> in_flight(const RunState& state) {
    std::vector<RunState::Running> running = state.running;
    std::stable_sort(running.begin(), running.end(), [](const auto& a, const auto& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.elapsed > b.elapsed;
    });
    std::vector<RunState::Running> first;
    for (std::size_t k = 0; k < running.size(); ++k)
        if (k == 0 || running[k - 1].rank != running[k].rank) first.push_back(running[k]);
    return first;
}
}  // namespace

double remaining_seconds(const TaskGraph& graph, const Config& config, const CostModel& model,
                         const RunState& state, const RankDevices& ranks, Estimate e) {
    std::vector<double> duration = model.expected_durations(graph, e);
    SimulationStart start;
    start.finished = state.finished;
    start.timing = model.timings();
    for (std::size_t i = 0; i < duration.size(); ++i)
        if (state.finished[i]) duration[i] = 0.0;
    for (const auto& r : in_flight(state)) {
        const double mid = model.expected(graph.tasks()[r.task].group, Estimate::mid);
        duration[r.task] = late_remaining(mid, duration[r.task], r.elapsed, e);
    }
    for (const auto& r : state.running) start.running.emplace_back(r.rank, r.task);
    return simulate_dispatch(graph, config, duration, ranks, 0.0, &start).makespan;
}

EtaRange remaining_range(const TaskGraph& graph, const Config& config, const CostModel& measured,
                         const RunState& state, const RankDevices& ranks) {
    EtaRange r;
    r.known = false;
    for (std::size_t g = 0; g < config.groups.size(); ++g)
        r.known = r.known || measured.measured(g) || measured.remembered(g);
    std::vector<bool> left(config.groups.size(), false);
    for (std::size_t i = 0; i < graph.tasks().size(); ++i)
        if (!state.finished[i]) left[graph.tasks()[i].group] = true;
    for (std::size_t g = 0; g < left.size(); ++g) {
        if (!left[g] || measured.measured(g)) continue;
        ++r.unmeasured;
        if (measured.remembered(g)) ++r.remembered;
    }
    // A task in flight past its group's expected time is a sample of at least that time.
    CostModel model = measured;
    for (const auto& t : in_flight(state)) {
        const std::size_t g = graph.tasks()[t.task].group;
        if (t.elapsed > measured.expected(g)) model.record(g, t.elapsed);
    }
    r.mid = remaining_seconds(graph, config, model, state, ranks, Estimate::mid);
    r.low = remaining_seconds(graph, config, model, state, ranks, Estimate::low);
    r.high = remaining_seconds(graph, config, model, state, ranks, Estimate::high);
    return r;
}

}  // namespace compatbench
