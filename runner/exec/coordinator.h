// The coordinator (rank 0): moves tasks between ranks around its task book (exec/task_book.h:
// states, readiness, retries, skips). It hands ready tasks to idle ranks, its own task thread
// included, in batches sized from measured task durations; records every result in the
// ledger; runs analyses once their inputs are finished; reports progress and status.json.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "analyses/analysis_kind.h"
#include "core/resources.h"
#include "exec/cost_model.h"
#include "exec/executor.h"
#include "exec/messages.h"
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

    // Takes the records of an earlier run (same config hash: done tasks are not run again;
    // failed attempts count towards attempt numbers). Returns the number of done tasks and
    // stages their rows in results.h5.
    std::size_t resume_from(const std::vector<nlohmann::json>& records);
    // Keeps <out>/status.json up to date (store/status_file.h) from now on.
    void publish_status(std::string path, StatusSnapshot header);
    // Runs the graph to its end; status.json then says "finishing" until the caller, once
    // results.h5 is closed, writes the run's final state with finish_status.
    CoordinatorReport run();
    void finish_status(const std::string& state) { write_status(state); }

  private:
    void dispatch();
    void dispatch_to(int rank);
    // Where task `i` runs on `rank`: the host, and the devices it is given.
    void place(TaskFact& f, int rank, std::size_t i) const;
    std::size_t batch_size(std::size_t group) const;
    std::size_t target_outstanding(std::size_t group) const;
    void handle(int rank, Completion&& c);
    void run_ready_analyses();
    // The finished rows of group `g`, appended to `storage` (reserved by the caller).
    AnalysisInput analysis_input(std::size_t g, std::vector<Row>& storage) const;
    void progress(bool force);
    EtaRange eta();  // the time left, counted down between estimates
    void write_status(const std::string& state);
    void send_stop(bool abandon);
    CoordinatorReport make_report(bool interrupted, int signal);
    void log_rank_load() const;
    // The cost cache (exec/cost_cache.h): what the groups cost in earlier runs elsewhere,
    // and this run's costs for later ones.
    void recall_costs();
    void remember_costs() const;
    std::vector<TableData> printed_tables() const;
    void poll_messages(bool& worked);

    const Config& config_;
    const TaskGraph& graph_;
    comm::Comm comm_;
    int size_ = 1;
    std::vector<RankResources> ranks_;
    std::vector<int> dispatch_order_;  // ranks without devices first, then by devices held
    Ledger& ledger_;
    ResultsFile& results_;
    Executor& executor_;
    comm::Outbox outbox_;

    TaskBook book_;
    std::vector<std::size_t> outstanding_;  // per rank
    std::vector<bool> final_;               // per rank: sent its last results
    std::vector<bool> analysis_done_;
    CostModel model_;                   // measured durations per group
    std::filesystem::path cost_cache_;  // "" = none
    std::vector<int> running_rank_;     // per task, while it runs
    std::vector<double> dispatched_;    // per task: when it went out, Unix seconds
    std::vector<std::chrono::steady_clock::time_point> dispatched_at_;  // the same, steady
    std::string status_path_;                                           // "" = no status.json
    StatusSnapshot status_header_;
    EtaRange eta_{-1.0, -1.0, -1.0, 0};  // the last ETA (mid < 0: none yet)
    double eta_cost_ = 0.0;              // what computing it took
    std::chrono::steady_clock::time_point eta_at_;
    int worker_signal_ = 0;  // a signal a worker reported
    std::vector<std::pair<std::string, TableData>> analysis_tables_;

    std::chrono::steady_clock::time_point start_, last_progress_, last_flush_;
    std::chrono::steady_clock::time_point first_dispatch_, last_result_;
    bool dispatched_any_ = false;
    double run_epoch_ = 0.0;  // start of this run, Unix seconds
};

}  // namespace compatbench
