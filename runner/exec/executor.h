// The task thread of a rank. The rank's main thread (the only one that calls MPI or HDF5)
// pushes assignments and takes completions; tasks run here one at a time, so a long task
// never stalls the coordinator's dispatching.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "commands/command_server.h"
#include "graph/task_graph.h"
#include "kind/task_kind.h"

namespace compatbench {

struct Assignment {
    std::size_t index = 0;
    int attempt = 1;
};

struct Completion {
    std::size_t index = 0;
    int attempt = 1;
    TaskOutcome outcome;
};

class Executor {
  public:
    Executor(const Config& config, const TaskGraph& graph, int rank, std::filesystem::path out,
             RankResources resources = {});
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    void push(const std::vector<Assignment>& batch);
    std::vector<Completion> take();
    // Assigned and not yet taken back (queued + running + completed-not-taken).
    std::size_t outstanding() const { return outstanding_.load(); }
    // Waits until a completion is ready or `timeout` passed.
    void wait(std::chrono::microseconds timeout);
    // Asks running and queued tasks to stop; queued ones complete as cancelled.
    void cancel();
    // Waits up to `grace` for the thread to finish its task; false if it is still busy
    // (then it is left to end with the process).
    bool stop(std::chrono::milliseconds grace);

    // Why task `index`, done in an earlier run, must run again ("" when it need not): its
    // files are missing or damaged (kind/task_kind.h damaged_artifact).
    std::string damaged_artifact(std::size_t index) const;

  private:
    void loop();
    TaskContext context_of(std::size_t index, int attempt) const;

    const Config& config_;
    const TaskGraph& graph_;
    int rank_;
    std::filesystem::path out_;
    RankResources resources_;
    mutable ServerPool servers_;  // used by the task thread only
    std::atomic<bool> cancel_{false};
    std::atomic<bool> quit_{false};
    std::atomic<bool> idle_{true};
    std::atomic<std::size_t> outstanding_{0};
    mutable std::mutex mutex_;
    std::condition_variable work_cv_, done_cv_;
    std::deque<Assignment> queue_;
    std::vector<Completion> done_;
    std::thread thread_;
    bool detached_ = false;
};

}  // namespace compatbench
