#include "exec/executor.h"

#include "exec/signals.h"

namespace compatbench {

Executor::Executor(const Config& config, const TaskGraph& graph, int rank,
                   std::filesystem::path out, RankResources resources)
    : config_(config),
      graph_(graph),
      rank_(rank),
      out_(std::move(out)),
      resources_(std::move(resources)) {
    thread_ = std::thread([this] {
        block_stop_signals_in_this_thread();
        loop();
    });
}

Executor::~Executor() {
    if (!detached_) stop(std::chrono::milliseconds(0));
}

void Executor::push(const std::vector<Assignment>& batch) {
    if (batch.empty()) return;
    {
        std::lock_guard lock(mutex_);
        queue_.insert(queue_.end(), batch.begin(), batch.end());
        outstanding_ += batch.size();
    }
    work_cv_.notify_one();
}

std::vector<Completion> Executor::take() {
    std::vector<Completion> out;
    std::lock_guard lock(mutex_);
    out.swap(done_);
    outstanding_ -= out.size();
    return out;
}

void Executor::wait(std::chrono::microseconds timeout) {
    std::unique_lock lock(mutex_);
    done_cv_.wait_for(lock, timeout, [this] { return !done_.empty(); });
}

void Executor::cancel() {
    cancel_ = true;
    work_cv_.notify_one();
}

bool Executor::stop(std::chrono::milliseconds grace) {
    if (!thread_.joinable()) return true;
    cancel_ = true;
    quit_ = true;
    work_cv_.notify_one();
    const auto until = std::chrono::steady_clock::now() + grace;
    while (!idle_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (idle_.load() || grace.count() == 0) {
        thread_.join();
        return true;
    }
    thread_.detach();  // a task that ignores cancellation ends with the process
    detached_ = true;
    return false;
}

void Executor::loop() {
    while (true) {
        Assignment a;
        {
            std::unique_lock lock(mutex_);
            work_cv_.wait(lock, [this] { return quit_.load() || !queue_.empty(); });
            if (queue_.empty()) {  // quit: the servers end with the task thread
                lock.unlock();
                servers_.clear();
                return;
            }
            a = queue_.front();
            queue_.pop_front();
            idle_ = false;
        }
        Completion c{a.index, a.attempt, {}};
        if (cancel_.load()) {
            c.outcome.status = TaskStatus::cancelled;
            c.outcome.error = "cancelled";
        } else {
            const TaskGroup& group = config_.groups[graph_.tasks()[a.index].group];
            c.outcome = group.kind->run(context_of(a.index, a.attempt));
        }
        {
            std::lock_guard lock(mutex_);
            done_.push_back(std::move(c));
            idle_ = true;
        }
        done_cv_.notify_one();
    }
}

TaskContext Executor::context_of(std::size_t index, int attempt) const {
    const Task& task = graph_.tasks()[index];
    return TaskContext{task.id,
                       config_.groups[task.group],
                       graph_.params(config_, index),
                       graph_.lists(config_, index),
                       task.seed,
                       attempt,
                       rank_,
                       out_,
                       cancel_,
                       config_.seed,
                       &resources_,
                       &servers_};
}

std::string Executor::damaged_artifact(std::size_t index) const {
    const TaskGroup& group = config_.groups[graph_.tasks()[index].group];
    return compatbench::damaged_artifact(*group.kind, context_of(index, 1));
}

}  // namespace compatbench
