#include "exec/task_book.h"

#include "exec/placement.h"

namespace compatbench {

TaskBook::TaskBook(const Config& config, const TaskGraph& graph) : config_(config), graph_(graph) {
    const std::size_t n = graph.tasks().size();
    states_.assign(n, State::blocked);
    waiting_on_.resize(n);
    for (std::size_t i = 0; i < n; ++i) waiting_on_[i] = graph.tasks()[i].deps.size();
    attempts_.assign(n, 0);
    attempt_base_.assign(n, 0);
    outputs_.resize(n);
    facts_.resize(n);
    group_terminal_.assign(config.groups.size(), 0);
}

bool TaskBook::restore_done(std::size_t i, Row outputs, const TaskFact& fact) {
    if (states_[i] == State::done) return false;
    states_[i] = State::done;
    outputs_[i] = std::move(outputs);
    facts_[i] = fact;
    facts_[i].status = "done";
    ++done_;
    finish(i);
    for (std::size_t d : graph_.tasks()[i].dependents) --waiting_on_[d];
    return true;
}

void TaskBook::start() {
    for (std::size_t i = 0; i < states_.size(); ++i)
        if (states_[i] == State::blocked && waiting_on_[i] == 0) make_ready(i);
}

void TaskBook::make_ready(std::size_t i) {
    states_[i] = State::ready;
    const TaskGroup& group = config_.groups[graph_.tasks()[i].group];
    ready_[group.gpus].push(policy_entry(config_, graph_, i));
    ++ready_count_;
}

std::optional<int> TaskBook::queue_for(std::size_t held) const {
    for (auto it = ready_.rbegin(); it != ready_.rend(); ++it)
        if (!it->second.empty() &&
            rank_can_run(held, it->first, config_.runner.cpu_tasks_on_gpu_ranks))
            return it->first;
    return std::nullopt;
}

std::size_t TaskBook::next_group(std::size_t held) const {
    return graph_.tasks()[ready_.at(*queue_for(held)).top().index].group;
}

std::size_t TaskBook::take_ready(std::size_t held, int& attempt) {
    ReadyQueue& queue = ready_.at(*queue_for(held));
    const std::size_t i = queue.top().index;
    queue.pop();
    --ready_count_;
    states_[i] = State::running;
    ++attempts_[i];
    attempt = this->attempt(i);
    return i;
}

void TaskBook::done(std::size_t i, Row outputs) {
    states_[i] = State::done;
    facts_[i].status = "done";
    outputs_[i] = std::move(outputs);
    ++done_;
    ++ran_;
    for (std::size_t d : graph_.tasks()[i].dependents)
        if (--waiting_on_[d] == 0 && states_[d] == State::blocked) make_ready(d);
    finish(i);
}

bool TaskBook::failed(std::size_t i, const std::string& error) {
    if (attempts_[i] <= config_.groups[graph_.tasks()[i].group].retries) {
        make_ready(i);
        return true;
    }
    ++ran_;
    fail_for_good(i, error);
    return false;
}

void TaskBook::cancelled(std::size_t i) {
    states_[i] = State::ready;  // not run: pending in this run, runs again on resume
    facts_[i].status = "pending";
}

void TaskBook::fail_for_good(std::size_t i, const std::string& why) {
    states_[i] = State::failed;
    facts_[i].status = "failed";
    facts_[i].error = why;
    ++failed_;
    finish(i);
    // Every task downstream is skipped.
    std::vector<std::size_t> stack(graph_.tasks()[i].dependents);
    while (!stack.empty()) {
        const std::size_t d = stack.back();
        stack.pop_back();
        if (states_[d] == State::skipped || states_[d] == State::done) continue;
        states_[d] = State::skipped;
        facts_[d].status = "skipped";
        facts_[d].error = "dependency " + graph_.tasks()[i].id + " failed";
        ++skipped_;
        finish(d);
        for (std::size_t e : graph_.tasks()[d].dependents) stack.push_back(e);
    }
}

void TaskBook::finish(std::size_t i) {
    ++terminal_;
    ++group_terminal_[graph_.tasks()[i].group];
}

bool TaskBook::group_finished(std::size_t g) const {
    return group_terminal_[g] == graph_.group_end(g) - graph_.group_begin(g);
}

}  // namespace compatbench
