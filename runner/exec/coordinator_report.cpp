// The coordinator's reporting: the progress line and its ETA, status.json, the ranks' load
// and the tables printed at the end.
#include <spdlog/spdlog.h>

#include <cmath>

#include "core/duration.h"
#include "exec/coordinator.h"
#include "exec/cost_cache.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void Coordinator::progress(bool force) {
    const double interval = config_.runner.progress_interval;
    if (!force && seconds_since(last_progress_) < interval) return;
    last_progress_ = Clock::now();
    const double elapsed = seconds_since(start_);
    const double rate = elapsed > 0 ? static_cast<double>(book_.ran()) / elapsed : 0.0;
    const std::size_t total = book_.size(), done = book_.done_count();
    const EtaRange e = book_.all_terminal() ? EtaRange{} : eta();
    std::string eta_text = format_duration(e.mid);
    if (e.unmeasured > 0)
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
EtaRange Coordinator::eta() {
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
            state.running.push_back({running_rank_[i], i, seconds_since(dispatched_at_[i])});
    }
    eta_ = remaining_range(graph_, config_, model_, state, size_);
    eta_at_ = Clock::now();
    eta_cost_ = seconds_since(t0);
    return eta_;
}

void Coordinator::recall_costs() {
    const std::filesystem::path dir = std::filesystem::absolute(config_.path).parent_path();
    cost_cache_ = cost_cache_path(config_.runner, dir);
    if (cost_cache_.empty()) return;
    try {
        const auto remembered = load_cost_cache(cost_cache_);
        std::size_t found = 0;
        for (std::size_t g = 0; g < config_.groups.size(); ++g) {
            const auto it = remembered.find(group_fingerprint(config_.groups[g]));
            if (it == remembered.end()) continue;
            model_.remember(g, it->second.seconds);
            ++found;
        }
        spdlog::info("cost cache {}: {} of {} groups' costs from earlier runs",
                     cost_cache_.string(), found, config_.groups.size());
    } catch (const std::exception& e) {
        spdlog::warn("cost cache: {} (the ETA starts without it; it is rewritten at the end)",
                     e.what());
    }
}

void Coordinator::remember_costs() const {
    if (cost_cache_.empty()) return;
    std::map<std::string, RememberedCost> entries;
    const double now = now_epoch();
    for (std::size_t g = 0; g < config_.groups.size(); ++g) {
        const GroupTiming& t = model_.timing(g);
        if (t.samples == 0) continue;
        entries[group_fingerprint(config_.groups[g])] = {t.seconds / static_cast<double>(t.samples),
                                                         t.samples, config_.groups[g].name,
                                                         ranks_.empty() ? "" : ranks_[0].host, now};
    }
    try {
        if (!entries.empty()) store_cost_cache(cost_cache_, entries);
    } catch (const std::exception& e) {
        spdlog::warn("cost cache: {} (this run's costs are not remembered)", e.what());
    }
}

void Coordinator::publish_status(std::string path, StatusSnapshot header) {
    status_path_ = std::move(path);
    status_header_ = std::move(header);
    write_status("running");
}

void Coordinator::write_status(const std::string& state) {
    if (status_path_.empty()) return;
    StatusSnapshot s = status_header_;
    s.state = state == "running" && s.stop_signal != 0 ? "stopping" : state;
    s.updated = now_epoch();
    const EtaRange left = book_.all_terminal() ? EtaRange{} : eta();
    s.eta_seconds = std::isfinite(left.mid) ? left.mid : -1.0;
    s.eta_low_seconds = std::isfinite(left.low) ? left.low : -1.0;
    s.eta_high_seconds = std::isfinite(left.high) ? left.high : -1.0;
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
                    place(where, running_rank_[i], i);
                    s.running.push_back({graph_.tasks()[i].id, gs.name, running_rank_[i],
                                         book_.attempt(i), dispatched_[i], where.host,
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

void Coordinator::log_rank_load() const {
    // Load balance of this run: tasks and busy seconds per rank (from the task facts).
    const double wall = seconds_since(start_);
    std::vector<std::size_t> count(static_cast<std::size_t>(size_), 0);
    std::vector<double> busy(static_cast<std::size_t>(size_), 0.0);
    for (const auto& f : book_.facts()) {
        if (f.rank < 0 || f.rank >= size_ || f.start < run_epoch_) continue;  // earlier runs
        ++count[static_cast<std::size_t>(f.rank)];
        busy[static_cast<std::size_t>(f.rank)] += f.duration;
    }
    std::string line;
    for (int r = 0; r < size_; ++r) {
        const auto ur = static_cast<std::size_t>(r);
        line += fmt::format("{}r{}: {} tasks, {:.2f} s busy ({:.0f}%)", r ? "; " : "", r, count[ur],
                            busy[ur], wall > 0 ? 100.0 * busy[ur] / wall : 0.0);
    }
    spdlog::info("ranks: {}", line);
}

std::vector<TableData> Coordinator::printed_tables() const {
    // One table per results.h5 table with a printing group: the done rows of those groups.
    std::vector<TableData> out;
    for (std::size_t t = 0; t < graph_.tables().size(); ++t) {
        TableData table;
        table.path = graph_.tables()[t].path;
        for (const auto& c : graph_.tables()[t].columns) table.add_column(c);
        bool any = false;
        for (std::size_t g = 0; g < config_.groups.size(); ++g) {
            if (graph_.group_table(g) != t || !config_.groups[g].print) continue;
            any = true;
            for (std::size_t i = graph_.group_begin(g); i < graph_.group_end(g); ++i) {
                if (book_.state(i) != TaskBook::State::done) continue;
                const Row keys = graph_.key_row(config_, i);
                for (std::size_t c = 0; c < keys.size(); ++c) table.values[c].push_back(keys[c]);
                const Row& outputs = book_.outputs(i);
                for (std::size_t c = 0; c < outputs.size(); ++c)
                    table.values[keys.size() + c].push_back(outputs[c]);
            }
        }
        if (any) out.push_back(std::move(table));
    }
    return out;
}

}  // namespace compatbench
