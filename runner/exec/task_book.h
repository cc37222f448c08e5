// The coordinator's book of tasks, free of MPI: each task's state, attempts, outputs and
// facts; which tasks are ready, for a rank holding a given number of devices (its flow,
// exec/task_flow.h, which `plan`'s simulation shares); retries; the dependents skipped when a task
// fails for good; resume from an earlier run's records; and when a group has finished.
// exec/coordinator.h moves the tasks between ranks around it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "exec/task_flow.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"
#include "store/task_fact.h"

namespace compatbench {

class TaskBook {
  public:
    enum class State { blocked, ready, running, done, failed, skipped };

    TaskBook(const Config& config, const TaskGraph& graph);

    // Resume: task `i` was done in an earlier run with `outputs` (its fact as recorded); it
    // counts as finished and releases its dependents. False if it was restored already.
    bool restore_done(std::size_t i, Row outputs, const TaskFact& fact);
    // Resume: one failed attempt of task `i` in an earlier run (attempt numbers go on).
    void count_earlier_failure(std::size_t i) { ++attempt_base_[i]; }
    // Every blocked task that waits for nothing becomes ready. A restored task with anything
    // upstream not done holds its dependents back until that is done.
    void start();

    // Which tasks are ready, for which ranks (exec/task_flow.h).
    const TaskFlow& flow() const { return flow_; }
    bool has_ready() const { return flow_.has_ready(); }
    std::size_t ready_count() const { return flow_.ready_count(); }
    // The next ready task for a rank holding `held` devices (TaskFlow::take), now running.
    // Returns its index and sets `attempt` to its attempt number across runs (1 for a first
    // try).
    std::size_t take_ready(std::size_t held, int& attempt);

    // Outcomes of a running task. `done` releases its dependents. `failed` makes the task
    // ready again while its group's retries last (returns true), else fails it for good and
    // skips everything downstream (returns false). `cancelled`: not run, pending.
    void done(std::size_t i, Row outputs);
    bool failed(std::size_t i, const std::string& error);
    void cancelled(std::size_t i);

    State state(std::size_t i) const { return states_[i]; }
    TaskFact& fact(std::size_t i) { return facts_[i]; }
    const TaskFact& fact(std::size_t i) const { return facts_[i]; }
    const std::vector<TaskFact>& facts() const { return facts_; }
    std::vector<TaskFact> take_facts() { return std::move(facts_); }
    const Row& outputs(std::size_t i) const { return outputs_[i]; }
    // Attempt number across runs of the latest try of task i.
    int attempt(std::size_t i) const { return attempt_base_[i] + attempts_[i]; }

    // Every task of group g done, failed or skipped.
    bool group_finished(std::size_t g) const;
    std::size_t size() const { return states_.size(); }
    std::size_t done_count() const { return done_; }
    std::size_t failed_count() const { return failed_; }
    std::size_t skipped_count() const { return skipped_; }
    std::size_t pending_count() const { return states_.size() - terminal_; }
    // Tasks finished (done, or failed for good) in this run.
    std::size_t ran() const { return ran_; }
    bool all_terminal() const { return terminal_ == states_.size(); }

  private:
    void make_ready(std::size_t i);
    void fail_for_good(std::size_t i, const std::string& why);
    void finish(std::size_t i);
    void hold_restored();
    void release(std::size_t i);

    const Config& config_;
    const TaskGraph& graph_;
    std::vector<State> states_;
    TaskFlow flow_;
    std::vector<std::size_t> held_;  // restored tasks: dependencies not yet released
    std::vector<int> attempts_;      // attempts in this run
    std::vector<int> attempt_base_;  // failed attempts in earlier runs
    std::vector<Row> outputs_;       // outputs of done tasks
    std::vector<TaskFact> facts_;
    std::vector<std::size_t> group_terminal_;
    std::size_t terminal_ = 0, done_ = 0, failed_ = 0, skipped_ = 0, ran_ = 0;
};

}  // namespace compatbench
