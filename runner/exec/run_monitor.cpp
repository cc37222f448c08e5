#include "exec/run_monitor.h"

#include <spdlog/spdlog.h>

#include <cmath>

#include "core/duration.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

RunMonitor::RunMonitor(const Config& config, const TaskGraph& graph, const TaskBook& book,
                       const CostModel& model, const RankPool& pool)
    : config_(config), graph_(graph), book_(book), model_(model), pool_(pool) {}

void RunMonitor::start() {
    start_ = last_progress_ = Clock::now();
    run_epoch_ = now_epoch();
}

void RunMonitor::stopping(int signal) {
    status_header_.stop_signal = signal;  // at once: a launcher may kill us soon
    write_status("stopping");
}

void RunMonitor::progress(bool force) {
    const double interval = config_.runner.progress_interval;
    if (!force && seconds_since(last_progress_) < interval) return;
    last_progress_ = Clock::now();
    const double elapsed = seconds_since(start_);
    const double rate = elapsed > 0 ? static_cast<double>(book_.ran()) / elapsed : 0.0;
    const std::size_t total = book_.size(), done = book_.done_count();
    const EtaRange e = book_.all_terminal() ? EtaRange{} : eta();
    std::string eta_text = format_duration(e.mid);
    if (!e.known)
        eta_text =
            "not known yet (no task has ended and no earlier run's costs are remembered: "
            "runner.cost_cache)";
    else if (e.unmeasured > 0)
        eta_text += fmt::format(
            " (between {} and {}: {} group{} not measured yet{})", format_duration(e.low),
            format_duration(e.high), e.unmeasured, e.unmeasured == 1 ? "" : "s",
            e.remembered ? fmt::format(", {} priced from earlier runs", e.remembered) : "");
    spdlog::info("progress {}/{} ({:.1f}%) done, {} failed, {} skipped | {:.1f} tasks/s | ETA {}",
                 done, total,
                 total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0,
                 book_.failed_count(), book_.skipped_count(), rate, eta_text);
    if (!book_.all_terminal()) write_status("running");
}

// The cost-weighted time left (exec/cost_model.h). The simulation is rerun when at least 50
// times its own cost has passed since the last one, so that large graphs do not slow the
// dispatch; in between the last estimate counts down.
EtaRange RunMonitor::eta() {
    if (eta_.mid >= 0.0 && seconds_since(eta_at_) < 50.0 * eta_cost_) {
        const double gone = seconds_since(eta_at_);
        EtaRange r = eta_;
        for (double* v : {&r.low, &r.mid, &r.high}) *v = std::max(0.0, *v - gone);
        return r;
    }
    const auto t0 = Clock::now();
    RunState state;
    state.finished.resize(book_.size());
    for (std::size_t i = 0; i < book_.size(); ++i) {
        using State = TaskBook::State;
        const State s = book_.state(i);
        state.finished[i] = s == State::done || s == State::failed || s == State::skipped;
        if (s == State::running)
            state.running.push_back({pool_.rank_of(i), i, pool_.running_seconds(i)});
    }
    eta_ = remaining_range(graph_, config_, model_, state, pool_.devices());
    eta_at_ = Clock::now();
    eta_cost_ = seconds_since(t0);
    return eta_;
}

void RunMonitor::publish_status(std::string path, StatusSnapshot header) {
    status_path_ = std::move(path);
    status_header_ = std::move(header);
    write_status("running");
}

void RunMonitor::write_status(const std::string& state) {
    if (status_path_.empty()) return;
    StatusSnapshot s = status_header_;
    s.state = state == "running" && s.stop_signal != 0 ? "stopping" : state;
    s.updated = now_epoch();
    const EtaRange left = book_.all_terminal() ? EtaRange{} : eta();
    s.eta_seconds = std::isfinite(left.mid) && left.known ? left.mid : -1.0;
    s.eta_low_seconds = std::isfinite(left.low) && left.known ? left.low : -1.0;
    s.eta_high_seconds = std::isfinite(left.high) && left.known ? left.high : -1.0;
    s.eta_unmeasured_groups = left.unmeasured;
    s.progress_interval = config_.runner.progress_interval;
    for (std::size_t g = 0; g < config_.groups.size(); ++g) {
        GroupStatus gs;
        gs.name = config_.groups[g].name;
        gs.kind = std::string(config_.groups[g].kind->name());
        gs.tasks = graph_.group_end(g) - graph_.group_begin(g);
        gs.cost = config_.groups[g].cost;
        gs.expected_seconds = model_.expected(g);
        for (std::size_t i = graph_.group_begin(g); i < graph_.group_end(g); ++i) {
            using State = TaskBook::State;
            switch (book_.state(i)) {
                case State::done:
                    ++gs.done;
                    break;
                case State::failed:
                    ++gs.failed;
                    break;
                case State::skipped:
                    ++gs.skipped;
                    break;
                case State::running: {
                    ++gs.running;
                    TaskFact where;
                    pool_.place(where, pool_.rank_of(i), config_.groups[g].gpus);
                    s.running.push_back({graph_.tasks()[i].id, gs.name, pool_.rank_of(i),
                                         book_.attempt(i), pool_.sent_epoch(i), where.host,
                                         where.devices});
                    break;
                }
                default:
                    ++gs.pending;
            }
        }
        s.groups.push_back(std::move(gs));
    }
    try {
        write_status_file(status_path_, s);
    } catch (const std::exception& e) {
        spdlog::warn("{} (the run goes on; `compatbench status` shows the ledger only)", e.what());
        status_path_.clear();
    }
}

void RunMonitor::log_rank_load() const {
    // Load balance of this run: tasks and busy seconds per rank (from the task facts).
    const double wall = seconds_since(start_);
    const int size = pool_.size();
    std::vector<std::size_t> count(static_cast<std::size_t>(size), 0);
    std::vector<double> busy(static_cast<std::size_t>(size), 0.0);
    for (const auto& f : book_.facts()) {
        if (f.rank < 0 || f.rank >= size || f.start < run_epoch_) continue;  // earlier runs
        ++count[static_cast<std::size_t>(f.rank)];
        busy[static_cast<std::size_t>(f.rank)] += f.duration;
    }
    std::string line;
    for (int r = 0; r < size; ++r) {
        const auto ur = static_cast<std::size_t>(r);
        line += fmt::format("{}r{}: {} tasks, {:.2f} s busy ({:.0f}%)", r ? "; " : "", r, count[ur],
                            busy[ur], wall > 0 ? 100.0 * busy[ur] / wall : 0.0);
    }
    spdlog::info("ranks: {}", line);
}

}  // namespace compatbench
