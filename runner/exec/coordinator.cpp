#include "exec/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/duration.h"
#include "exec/cost_cache.h"
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
      ledger_(ledger),
      results_(results),
      executor_(executor),
      outbox_(comm),
      book_(config, graph),
      pool_(std::move(ranks), comm.size(), graph.tasks().size()),
      model_(config),
      cost_cache_(recall_costs(config, model_)),
      analyses_(config, graph),
      monitor_(config, graph, book_, model_, pool_) {}

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

void Coordinator::dispatch() {
    for (int r : pool_.order()) {
        if (!book_.has_ready()) break;
        dispatch_to(r);
    }
}

// What rank `r` may run now, by the dispatch rule (exec/task_flow.h fill_rank).
void Coordinator::dispatch_to(int r) {
    const std::size_t held = pool_.held(r);
    std::vector<Assignment> batch;
    fill_rank(
        book_.flow(), config_, held, pool_.outstanding(r), pool_.size(),
        [&](std::size_t group) -> const GroupTiming& { return model_.timing(group); },
        [&] {
            int attempt = 0;
            const std::size_t i = book_.take_ready(held, attempt);
            batch.push_back({i, attempt});
        });
    if (batch.empty()) return;
    if (!dispatched_any_) {
        dispatched_any_ = true;
        first_dispatch_ = Clock::now();
    }
    pool_.sent(r, batch);
    if (r == 0) {
        executor_.push(batch);
    } else {
        outbox_.send(r, kTagAssign, encode_assignments(batch));
    }
}

void Coordinator::handle(int rank, Completion&& c) {
    const std::size_t i = c.index;
    if (i >= book_.size() || book_.state(i) != TaskBook::State::running) {
        spdlog::warn("ignored a result for task #{} that is not running", i);
        return;
    }
    pool_.returned(rank, i);
    last_result_ = Clock::now();
    const Task& task = graph_.tasks()[i];
    const TaskGroup& group = config_.groups[task.group];
    TaskFact& f = book_.fact(i);
    f.rank = rank;
    f.attempt = c.attempt;
    f.start = c.outcome.start;
    f.duration = c.outcome.duration;
    f.error = c.outcome.error;
    pool_.place(f, rank, group.gpus);
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

void Coordinator::send_stop(bool abandon) {
    for (int r = 1; r < pool_.size(); ++r) outbox_.send(r, kTagStop, encode_int(abandon ? 1 : 0));
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
            if (final) pool_.mark_final(from);
        } else if (tag == kTagSignal) {
            spdlog::warn("rank {} received signal {}", from, decode_int(bytes));
            if (!stop_signal()) worker_signal_ = decode_int(bytes);
        } else if (tag == kTagAbort) {  // a worker's error ends the run here, now (exit 3)
            abort_job(comm_, "rank " + std::to_string(from) +
                                 " stopped the run: " + std::string(bytes.begin(), bytes.end()));
        }
    }
}

void Coordinator::take_own_results(bool& worked) {
    for (auto& c : executor_.take()) {
        worked = true;
        if (c.outcome.status == TaskStatus::done)
            stage_task_row(results_, config_, graph_, c.index, c.outcome.outputs);
        handle(0, std::move(c));
    }
}

CoordinatorReport Coordinator::run() {
    monitor_.start();
    auto last_flush = Clock::now();
    book_.start();
    analyses_.run_ready(book_);
    const auto flush_every = std::chrono::duration<double>(config_.runner.row_flush_interval);
    bool stopping = false, stop_sent = false, abandon = false;
    auto idle = std::chrono::microseconds(20);
    pool_.mark_final(0);  // the coordinator's own task thread needs no message
    int signal = 0;
    while (true) {
        bool worked = false;
        take_own_results(worked);
        poll_messages(worked);
        outbox_.progress();

        if (!stopping && (stop_signal() || worker_signal_)) {
            signal = stop_signal() ? stop_signal() : worker_signal_;
            stopping = true;
            abandon = config_.runner.on_signal == SignalPolicy::abandon;
            spdlog::warn("signal {}: no new tasks; {} in flight {}", signal, pool_.in_flight(),
                         abandon ? "are abandoned" : "finish first");
            monitor_.stopping(signal);
        }
        if (!stopping) dispatch();
        if (worked) analyses_.run_ready(book_);

        const bool nothing_out = pool_.idle();
        if (!stop_sent &&
            ((book_.all_terminal() && nothing_out) || (stopping && (abandon || nothing_out)))) {
            send_stop(abandon);
            stop_sent = true;
        }
        if (stop_sent && pool_.all_final() && (executor_.outstanding() == 0 || abandon)) {
            // Late results of abandoned tasks were taken above; what is left never finished.
            break;
        }
        ledger_.sync_if_due();
        if (Clock::now() - last_flush >= flush_every && results_.staged() > 0) {
            results_.flush();
            last_flush = Clock::now();
        }
        monitor_.progress(false);
        if (worked) {
            idle = std::chrono::microseconds(20);
        } else {
            executor_.wait(idle);
            idle = std::min(idle * 2, std::chrono::microseconds(2000));
        }
    }
    if (abandon) executor_.stop(std::chrono::seconds(10));
    bool late = false;
    take_own_results(late);
    ledger_.sync();
    outbox_.drain();
    analyses_.run_ready(book_);
    monitor_.progress(true);
    monitor_.log_rank_load();
    remember_costs(cost_cache_, config_, model_, pool_.host(0));

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
    report.analyses = analyses_.take_tables();
    report.printed = printed_tables(config_, graph_, book_);
    monitor_.forget_eta();  // a fresh estimate of what is left, for a resume of an interrupted run
    monitor_.write_status("finishing");
    report.facts = book_.take_facts();
    return report;
}

}  // namespace compatbench
