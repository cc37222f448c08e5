#include "exec/coordinator.h"

#include "exec/dispatch_policy.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "core/duration.h"
#include "exec/signals.h"
#include "exec/task_rows.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;

}  // namespace

Coordinator::Coordinator(const Config& config, const TaskGraph& graph, const comm::Comm& comm,
                         Ledger& ledger, ResultsFile& results, Executor& executor,
                         std::vector<RankResources> ranks)
    : config_(config),
      graph_(graph),
      comm_(comm),
      ranks_(std::move(ranks)),
      ledger_(ledger),
      results_(results),
      executor_(executor),
      outbox_(comm),
      book_(config, graph),
      model_(config) {
    size_ = comm.size();
    ranks_.resize(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) dispatch_order_.push_back(r);
    std::stable_sort(dispatch_order_.begin(), dispatch_order_.end(), [&](int a, int b) {
        return ranks_[static_cast<std::size_t>(a)].devices.size() <
               ranks_[static_cast<std::size_t>(b)].devices.size();
    });
    const std::size_t n = graph.tasks().size();
    outstanding_.assign(static_cast<std::size_t>(size_), 0);
    final_.assign(static_cast<std::size_t>(size_), false);
    analysis_done_.assign(config.analyses.size(), false);
    running_rank_.assign(n, -1);
    dispatched_.assign(n, 0.0);
    dispatched_at_.resize(n);
    recall_costs();
}

std::size_t Coordinator::resume_from(const std::vector<nlohmann::json>& records) {
    std::size_t other_config = 0, unknown = 0, resumed = 0;
    for (const auto& r : records) {
        if (r.at("config_hash") != config_.hash) {
            ++other_config;
            continue;
        }
        const auto index = graph_.find(record_field<std::string>(r, "id", ""));
        if (!index) {
            ++unknown;
            continue;
        }
        const std::size_t i = *index;
        const std::string status = record_field<std::string>(r, "status", "");
        if (status == "failed") {
            book_.count_earlier_failure(i);
            continue;
        }
        if (status != "done" || book_.state(i) == TaskBook::State::done) continue;
        const auto& columns = config_.groups[graph_.tasks()[i].group].outputs;
        Row row;
        try {
            const auto& outputs = r.at("outputs");
            for (const auto& c : columns) row.push_back(value_from_json(outputs.at(c.name), c));
        } catch (const std::exception& e) {
            spdlog::warn("ledger record of {} is unusable ({}); the task runs again",
                         graph_.tasks()[i].id, e.what());
            continue;
        }
        if (const std::string why = executor_.damaged_artifact(i); !why.empty()) {
            spdlog::warn("{} was done, but {}: the task runs again", graph_.tasks()[i].id, why);
            continue;
        }
        TaskFact f;
        f.rank = record_field<std::int64_t>(r, "rank", -1);
        f.attempt = record_field<std::int64_t>(r, "attempt", 1);
        f.start = record_field<double>(r, "start", 0.0);
        f.duration = record_field<double>(r, "duration", 0.0);
        f.host = record_field<std::string>(r, "host", "");
        f.devices = record_field<std::string>(r, "devices", "");
        stage_task_row(results_, config_, graph_, i, row);
        model_.record(graph_.tasks()[i].group, f.duration);  // the ETA learns from earlier runs
        book_.restore_done(i, std::move(row), f);
        ++resumed;
    }
    if (other_config > 0) {
        spdlog::warn("{}: {} records of another config were ignored (this config's hash is {})",
                     ledger_.path(), other_config, config_.hash);
    }
    if (unknown > 0)
        spdlog::warn("{}: {} records name tasks this config does not have", ledger_.path(),
                     unknown);
    return resumed;
}

std::size_t Coordinator::batch_size(std::size_t group) const {
    return policy_batch_size(model_.timing(group), book_.ready_count(), size_);
}

std::size_t Coordinator::target_outstanding(std::size_t group) const {
    return policy_target_outstanding(model_.timing(group), book_.ready_count(), size_);
}

void Coordinator::dispatch() {
    for (int r : dispatch_order_) {
        if (!book_.has_ready()) break;
        dispatch_to(r);
    }
}

// What rank `r` may run, in batches as the dispatch policy sizes them (exec/dispatch_policy.h).
// A rank holding devices runs CPU tasks one at a time, unbatched and never queued ahead, so
// that GPU work finds it free soon (docs/gpus.md).
void Coordinator::dispatch_to(int r) {
    const auto ur = static_cast<std::size_t>(r);
    const std::size_t held = ranks_[ur].devices.size();
    std::vector<Assignment> batch;
    while (book_.has_ready_for(held)) {
        const std::size_t group = book_.next_group(held);
        const bool spare_cpu_work = held > 0 && config_.groups[group].gpus == 0;
        const std::size_t target = spare_cpu_work ? 1 : target_outstanding(group);
        if (outstanding_[ur] + batch.size() >= target) break;
        const std::size_t limit = spare_cpu_work ? 1 : batch_size(group);
        for (std::size_t k = 0; k < limit && book_.has_ready_for(held); ++k) {
            int attempt = 0;
            const std::size_t i = book_.take_ready(held, attempt);
            running_rank_[i] = r;
            dispatched_[i] = now_epoch();
            dispatched_at_[i] = Clock::now();
            batch.push_back({i, attempt});
        }
    }
    if (batch.empty()) return;
    if (!dispatched_any_) {
        dispatched_any_ = true;
        first_dispatch_ = Clock::now();
    }
    outstanding_[ur] += batch.size();
    if (r == 0) {
        executor_.push(batch);
    } else {
        outbox_.send(r, kTagAssign, encode_assignments(batch));
    }
}

void Coordinator::place(TaskFact& f, int rank, std::size_t i) const {
    const RankResources& where = ranks_[static_cast<std::size_t>(rank)];
    f.host = where.host;
    f.devices =
        join_devices(task_devices(where.devices, config_.groups[graph_.tasks()[i].group].gpus));
}

void Coordinator::handle(int rank, Completion&& c) {
    const std::size_t i = c.index;
    if (i >= book_.size() || book_.state(i) != TaskBook::State::running) {
        spdlog::warn("ignored a result for task #{} that is not running", i);
        return;
    }
    --outstanding_[static_cast<std::size_t>(rank)];
    running_rank_[i] = -1;
    last_result_ = Clock::now();
    const Task& task = graph_.tasks()[i];
    const TaskGroup& group = config_.groups[task.group];
    TaskFact& f = book_.fact(i);
    f.rank = rank;
    f.attempt = c.attempt;
    f.start = c.outcome.start;
    f.duration = c.outcome.duration;
    f.error = c.outcome.error;
    place(f, rank, i);
    if (c.outcome.status == TaskStatus::cancelled) {
        book_.cancelled(i);
        return;
    }

    nlohmann::json record = {{"id", task.id},
                             {"kind", std::string(group.kind->name())},
                             {"group", group.name},
                             {"config_hash", config_.hash},
                             {"status", c.outcome.status == TaskStatus::done ? "done" : "failed"},
                             {"attempt", c.attempt},
                             {"rank", rank},
                             {"host", f.host},
                             {"devices", f.devices},
                             {"seed", task.seed},
                             {"start", c.outcome.start},
                             {"duration", c.outcome.duration}};
    if (c.outcome.status == TaskStatus::done) {
        model_.record(task.group, c.outcome.duration);  // failed attempts say nothing of cost
        nlohmann::json outputs = nlohmann::json::object();
        for (std::size_t k = 0; k < group.outputs.size(); ++k) {
            outputs[group.outputs[k].name] = value_to_json(c.outcome.outputs[k]);
        }
        record["outputs"] = std::move(outputs);
        ledger_.append(record);
        book_.done(i, std::move(c.outcome.outputs));
        return;
    }
    record["error"] = c.outcome.error;
    ledger_.append(record);
    if (book_.failed(i, c.outcome.error))
        spdlog::warn("{} failed (attempt {}), retrying: {}", task.id, c.attempt, c.outcome.error);
    else
        spdlog::error("{} failed (attempt {}): {}", task.id, c.attempt, c.outcome.error);
}

AnalysisInput Coordinator::analysis_input(std::size_t g, std::vector<Row>& storage) const {
    const std::size_t first = storage.size();
    std::vector<double> seconds;
    for (std::size_t i = graph_.group_begin(g); i < graph_.group_end(g); ++i) {
        if (book_.state(i) != TaskBook::State::done) continue;
        Row row = graph_.key_row(config_, i);
        row.insert(row.end(), book_.outputs(i).begin(), book_.outputs(i).end());
        storage.push_back(std::move(row));
        seconds.push_back(book_.fact(i).duration);
    }
    AnalysisInput input{config_.groups[g], graph_.table_of_group(g).columns, {}, {}, {}};
    for (std::size_t r = first; r < storage.size(); ++r) input.rows.push_back(&storage[r]);
    input.seconds = std::move(seconds);
    return input;
}

void Coordinator::run_ready_analyses() {
    const auto group_index = [&](const std::string& name) {
        std::size_t g = 0;
        while (config_.groups[g].name != name) ++g;
        return g;
    };
    const auto finished = [&](std::size_t g) { return book_.group_finished(g); };
    for (std::size_t a = 0; a < config_.analyses.size(); ++a) {
        if (analysis_done_[a]) continue;
        const Analysis& spec = config_.analyses[a];
        const std::size_t g = group_index(spec.input);
        const auto extra = spec.kind->extra_inputs(spec);
        if (!finished(g)) continue;
        if (!std::all_of(extra.begin(), extra.end(),
                         [&](const std::string& e) { return finished(group_index(e)); }))
            continue;
        analysis_done_[a] = true;
        // Rows are stored in a deque-like reserve so that row pointers stay valid.
        std::size_t total = graph_.group_end(g) - graph_.group_begin(g);
        for (const auto& e : extra)
            total += graph_.group_end(group_index(e)) - graph_.group_begin(group_index(e));
        std::vector<Row> rows;
        rows.reserve(total);
        AnalysisInput input = analysis_input(g, rows);
        for (const auto& e : extra) input.others.push_back(analysis_input(group_index(e), rows));
        const auto t0 = Clock::now();
        try {
            auto tables = spec.kind->run(spec, input, [&](const std::string& note) {
                spdlog::warn("analysis {}: {} (NaN recorded)", spec.name, note);
            });
            for (auto& t : tables) analysis_tables_.emplace_back(spec.study, std::move(t));
            spdlog::info("analysis {} ({}) on {} rows of {} in {:.3f} s", spec.name,
                         spec.kind->name(), input.rows.size(), spec.input, seconds_since(t0));
        } catch (const std::exception& e) {
            spdlog::error("analysis {} failed: {}", spec.name, e.what());
        }
    }
}

void Coordinator::send_stop(bool abandon) {
    for (int r = 1; r < size_; ++r) outbox_.send(r, kTagStop, encode_int(abandon ? 1 : 0));
    if (abandon) executor_.cancel();
}

void Coordinator::poll_messages(bool& worked) {
    int from = 0, tag = 0;
    std::vector<std::uint8_t> bytes;
    while (comm_.try_receive(comm::Comm::any_source, from, tag, bytes)) {
        worked = true;
        if (tag == kTagResults) {
            bool final = false;
            auto results = decode_results(bytes, final, graph_, config_);
            for (auto& c : results) handle(from, std::move(c));
            if (final) final_[static_cast<std::size_t>(from)] = true;
        } else if (tag == kTagSignal) {
            spdlog::warn("rank {} received signal {}", from, decode_int(bytes));
            if (!stop_signal()) worker_signal_ = decode_int(bytes);
        } else if (tag == kTagAbort) {  // a worker's error ends the run here, now (exit 3)
            abort_job(comm_, "rank " + std::to_string(from) +
                                 " stopped the run: " + std::string(bytes.begin(), bytes.end()));
        }
    }
}

CoordinatorReport Coordinator::run() {
    start_ = last_progress_ = last_flush_ = Clock::now();
    run_epoch_ = now_epoch();
    book_.start();
    run_ready_analyses();
    const auto flush_every = std::chrono::duration<double>(config_.runner.row_flush_interval);
    bool stopping = false, stop_sent = false, abandon = false;
    auto idle = std::chrono::microseconds(20);
    final_[0] = true;  // the coordinator's own task thread needs no message
    int signal = 0;
    while (true) {
        bool worked = false;
        // This rank's task thread.
        for (auto& c : executor_.take()) {
            worked = true;
            if (c.outcome.status == TaskStatus::done)
                stage_task_row(results_, config_, graph_, c.index, c.outcome.outputs);
            handle(0, std::move(c));
        }
        poll_messages(worked);
        outbox_.progress();

        if (!stopping && (stop_signal() || worker_signal_)) {
            signal = stop_signal() ? stop_signal() : worker_signal_;
            stopping = true;
            abandon = config_.runner.on_signal == SignalPolicy::abandon;
            spdlog::warn("signal {}: no new tasks; {} in flight {}", signal,
                         std::accumulate(outstanding_.begin(), outstanding_.end(), std::size_t{0}),
                         abandon ? "are abandoned" : "finish first");
            status_header_.stop_signal = signal;  // at once: a launcher may kill us soon
            write_status("stopping");
        }
        if (!stopping) dispatch();
        if (worked) run_ready_analyses();

        const bool nothing_out = std::all_of(outstanding_.begin(), outstanding_.end(),
                                             [](std::size_t n) { return n == 0; });
        if (!stop_sent &&
            ((book_.all_terminal() && nothing_out) || (stopping && (abandon || nothing_out)))) {
            send_stop(abandon);
            stop_sent = true;
        }
        if (stop_sent && std::all_of(final_.begin(), final_.end(), [](bool f) { return f; }) &&
            (executor_.outstanding() == 0 || abandon)) {
            // Late results of abandoned tasks were taken above; what is left never finished.
            break;
        }
        ledger_.sync_if_due();
        if (Clock::now() - last_flush_ >= flush_every && results_.staged() > 0) {
            results_.flush();
            last_flush_ = Clock::now();
        }
        progress(false);
        if (worked) {
            idle = std::chrono::microseconds(20);
        } else {
            executor_.wait(idle);
            idle = std::min(idle * 2, std::chrono::microseconds(2000));
        }
    }
    if (abandon) executor_.stop(std::chrono::seconds(10));
    for (auto& c : executor_.take()) {
        if (c.outcome.status == TaskStatus::done)
            stage_task_row(results_, config_, graph_, c.index, c.outcome.outputs);
        handle(0, std::move(c));
    }
    ledger_.sync();
    outbox_.drain();
    run_ready_analyses();
    progress(true);
    log_rank_load();
    remember_costs();

    return make_report(stopping && !book_.all_terminal(), signal);
}

// What the run did, for run_experiment; status.json says "finishing": results.h5 is not
// written yet.
CoordinatorReport Coordinator::make_report(bool interrupted, int signal) {
    CoordinatorReport report;
    report.done = book_.done_count();
    report.failed = book_.failed_count();
    report.skipped = book_.skipped_count();
    report.pending = book_.pending_count();
    report.ran = book_.ran();
    report.dispatch_seconds =
        dispatched_any_ ? std::chrono::duration<double>(last_result_ - first_dispatch_).count()
                        : 0.0;
    report.interrupted = interrupted;
    report.signal = signal;
    report.analyses = std::move(analysis_tables_);
    report.printed = printed_tables();
    eta_.mid = -1.0;  // a fresh estimate of what is left, for a resume of an interrupted run
    write_status("finishing");
    report.facts = book_.take_facts();
    return report;
}

}  // namespace compatbench
