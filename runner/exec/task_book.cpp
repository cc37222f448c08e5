#include "exec/task_book.h"

namespace compatbench {

TaskBook::TaskBook(const Config& config, const TaskGraph& graph)
    : config_(config), graph_(graph), flow_(config, graph) {
    const std::size_t n = graph.tasks().size();
    states_.assign(n, State::blocked);
    held_.assign(n, 0);
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
    for (std::size_t d : graph_.tasks()[i].dependents) flow_.satisfy(d);
    return true;
}

void TaskBook::start() {
    hold_restored();
    for (std::size_t i = 0; i < states_.size(); ++i)
        if (states_[i] == State::blocked && flow_.waiting(i) == 0) make_ready(i);
}

// A task restored as done while something upstream of it runs again (its file was purged)
// holds its dependents back until that is done too: they may read the upstream files
// themselves (a feature task reads the world its model was trained on). In dependency order:
// a done task is released once every dependency is.
void TaskBook::hold_restored() {
    const auto& tasks = graph_.tasks();
    const std::size_t n = tasks.size();
    std::vector<std::size_t> order, indegree(n);
    for (std::size_t i = 0; i < n; ++i)
        if ((indegree[i] = tasks[i].deps.size()) == 0) order.push_back(i);
    std::vector<bool> released(n, false);
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t i = order[k];
        for (std::size_t d : tasks[i].deps) held_[i] += released[d] ? 0 : 1;
        released[i] = states_[i] == State::done && held_[i] == 0;
        if (states_[i] != State::done) held_[i] = 0;
        if (held_[i] > 0)
            for (std::size_t d : tasks[i].dependents) flow_.hold(d);  // restore_done let go
        for (std::size_t d : tasks[i].dependents)
            if (--indegree[d] == 0) order.push_back(d);
    }
}

// Task i is done and so is everything upstream of it: its dependents may go.
void TaskBook::release(std::size_t i) {
    std::vector<std::size_t> stack{i};
    while (!stack.empty()) {
        const std::size_t t = stack.back();
        stack.pop_back();
        for (std::size_t d : graph_.tasks()[t].dependents) {
            if (states_[d] == State::done) {
                if (held_[d] > 0 && --held_[d] == 0) stack.push_back(d);
            } else if (flow_.satisfy(d) && states_[d] == State::blocked) {
                make_ready(d);
            }
        }
    }
}

void TaskBook::make_ready(std::size_t i) {
    states_[i] = State::ready;
    flow_.make_ready(i);
}

std::size_t TaskBook::take_ready(std::size_t held, int& attempt) {
    const std::size_t i = flow_.take(held);
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
    release(i);
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
        if (states_[d] == State::skipped) continue;
        if (states_[d] == State::done) {  // restored: it stays, what it holds back is skipped
            if (held_[d] > 0)
                for (std::size_t e : graph_.tasks()[d].dependents) stack.push_back(e);
            continue;
        }
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
