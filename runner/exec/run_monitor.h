// What the coordinator tells its user while a run goes on: the progress line and its ETA
// (exec/cost_model.h: the dispatch simulated over what is left, on the run's ranks and their
// devices), status.json (store/status_file.h), and at the end each rank's load.
#pragma once

#include <chrono>
#include <string>

#include "exec/cost_model.h"
#include "exec/rank_pool.h"
#include "exec/task_book.h"
#include "store/status_file.h"

namespace compatbench {

class RunMonitor {
  public:
    RunMonitor(const Config& config, const TaskGraph& graph, const TaskBook& book,
               const CostModel& model, const RankPool& pool);

    // The run starts now (for the rate, the load and the first progress line's timing): the
    // coordinator calls it once, as its loop begins.
    void start();
    // Keeps `path` (status.json) up to date from now on.
    void publish_status(std::string path, StatusSnapshot header);
    // The progress line (and status.json), once per runner.progress_interval or when forced.
    void progress(bool force);
    // status.json in `state` (running, stopping, finishing, or the run's final state).
    void write_status(const std::string& state);
    // A signal asked the run to stop: status.json says so at once.
    void stopping(int signal);
    // What is left changed wholesale (a run that ends now): the next ETA is estimated afresh.
    void forget_eta() { eta_.mid = -1.0; }
    // Tasks and busy seconds per rank in this run, from the task facts: one log line.
    void log_rank_load() const;

  private:
    EtaRange eta();  // the time left, counted down between estimates

    const Config& config_;
    const TaskGraph& graph_;
    const TaskBook& book_;
    const CostModel& model_;
    const RankPool& pool_;
    std::string status_path_;  // "" = no status.json
    StatusSnapshot status_header_;
    EtaRange eta_{-1.0, -1.0, -1.0, 0};  // the last ETA (mid < 0: none yet)
    double eta_cost_ = 0.0;              // what computing it took
    std::chrono::steady_clock::time_point eta_at_, start_, last_progress_;
    double run_epoch_ = 0.0;  // start of this run, Unix seconds
};

}  // namespace compatbench
