// The coordinator (rank 0): moves tasks between ranks around its task book (exec/task_book.h:
// states, readiness, retries, skips). It hands ready tasks to idle ranks, its own task thread
// included, by the dispatch rule of exec/task_flow.h, and records every result in the ledger.
// Its other jobs are pieces of their own: the ranks (exec/rank_pool.h), the analyses
// (exec/analysis_runner.h), progress, ETA and status.json (exec/run_monitor.h), and the
// cost memory (exec/cost_cache.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/resources.h"
#include "exec/analysis_runner.h"
#include "exec/cost_model.h"
#include "exec/executor.h"
#include "exec/messages.h"
#include "exec/rank_pool.h"
#include "exec/run_monitor.h"
#include "exec/task_book.h"
#include "store/ledger.h"
#include "store/results_file.h"
#include "store/status_file.h"

namespace compatbench {

struct CoordinatorReport {
    std::size_t done = 0, failed = 0, skipped = 0, pending = 0;
    std::size_t ran = 0;            // tasks finished (done or failed for good) in this run
    double dispatch_seconds = 0.0;  // first dispatch to last result
    bool interrupted = false;
    int signal = 0;
    std::vector<std::pair<std::string, TableData>> analyses;  // (study, table)
    std::vector<TableData> printed;                           // tables of groups with print: true
    std::vector<TaskFact> facts;
    // /meta/status and status.json's state: complete, failed or interrupted.
    const char* status() const {
        return interrupted                        ? "interrupted"
               : (failed + skipped + pending) > 0 ? "failed"
                                                  : "complete";
    }
};

class Coordinator {
  public:
    // `ranks`: what each rank holds (exec/placement.h); tasks go only where they can run.
    Coordinator(const Config& config, const TaskGraph& graph, const comm::Comm& comm,
                Ledger& ledger, ResultsFile& results, Executor& executor,
                std::vector<RankResources> ranks);
    // Its pieces hold references to its book, cost model and ranks: never copied.
    Coordinator(const Coordinator&) = delete;
    Coordinator& operator=(const Coordinator&) = delete;

    // Takes the records of an earlier run (same config hash: done tasks are not run again;
    // failed attempts count towards attempt numbers). Returns the number of done tasks and
    // stages their rows in results.h5.
    std::size_t resume_from(const std::vector<nlohmann::json>& records);
    // Keeps <out>/status.json up to date (store/status_file.h) from now on.
    void publish_status(std::string path, StatusSnapshot header) {
        monitor_.publish_status(std::move(path), std::move(header));
    }
    // Runs the graph to its end; status.json then says "finishing" until the caller, once
    // results.h5 is closed, writes the run's final state with finish_status.
    CoordinatorReport run();
    void finish_status(const std::string& state) { monitor_.write_status(state); }

  private:
    void dispatch();
    void dispatch_to(int rank);
    void handle(int rank, Completion&& c);
    void poll_messages(bool& worked);
    void take_own_results(bool& worked);  // from this rank's task thread
    void send_stop(bool abandon);
    CoordinatorReport make_report(bool interrupted, int signal);

    const Config& config_;
    const TaskGraph& graph_;
    comm::Comm comm_;
    Ledger& ledger_;
    ResultsFile& results_;
    Executor& executor_;
    comm::Outbox outbox_;

    TaskBook book_;
    RankPool pool_;
    CostModel model_;                   // measured durations per group
    std::filesystem::path cost_cache_;  // "" = none
    AnalysisRunner analyses_;
    RunMonitor monitor_;
    int worker_signal_ = 0;  // a signal a worker reported
    std::chrono::steady_clock::time_point first_dispatch_, last_result_;
    bool dispatched_any_ = false;
};

}  // namespace compatbench
