#include "exec/worker.h"

#include <spdlog/spdlog.h>

#include "exec/messages.h"
#include "exec/signals.h"
#include "exec/task_rows.h"

namespace compatbench {

void run_worker(const Config& config, const TaskGraph& graph, const comm::Comm& comm,
                ResultsFile& results, Executor& executor) {
    using Clock = std::chrono::steady_clock;
    comm::Outbox outbox(comm);
    std::vector<Completion> unsent;
    bool stop = false, abandon = false, signal_sent = false;
    auto last_flush = Clock::now();
    Clock::time_point stop_at;
    const auto flush_every = std::chrono::duration<double>(config.runner.row_flush_interval);
    auto idle = std::chrono::microseconds(20);
    std::size_t ran = 0;
    spdlog::info("worker ready");
    while (true) {
        bool worked = false;
        int from = 0, tag = 0;
        std::vector<std::uint8_t> bytes;
        while (comm.try_receive(0, from, tag, bytes)) {
            worked = true;
            if (tag == kTagAssign) {
                executor.push(decode_assignments(bytes));
            } else if (tag == kTagStop) {
                stop = true;
                stop_at = Clock::now();
                abandon = decode_int(bytes) == 1;
                if (abandon) executor.cancel();
            }
        }
        for (auto& c : executor.take()) {
            worked = true;
            if (c.outcome.status == TaskStatus::done)
                stage_task_row(results, config, graph, c.index, c.outcome.outputs);
            if (c.outcome.status != TaskStatus::cancelled) ++ran;
            unsent.push_back(std::move(c));
        }
        if (stop_signal() && !signal_sent) {
            outbox.send(0, kTagSignal, encode_int(stop_signal()));
            signal_sent = true;
        }
        if (stop) {
            // Last message once the task thread is empty (or, when abandoning, after a grace
            // period for a task that ignores cancellation).
            const bool grace_over = abandon && Clock::now() - stop_at > std::chrono::seconds(10);
            if (executor.outstanding() == 0 || grace_over) {
                outbox.send(0, kTagResults, encode_results(unsent, true, graph, config));
                break;
            }
        }
        if (!unsent.empty()) {
            outbox.send(0, kTagResults, encode_results(unsent, false, graph, config));
            unsent.clear();
        }
        outbox.progress();
        if (Clock::now() - last_flush >= flush_every && results.staged() > 0) {
            results.flush();
            last_flush = Clock::now();
        }
        if (worked) {
            idle = std::chrono::microseconds(20);
        } else {
            executor.wait(idle);
            idle = std::min(idle * 2, std::chrono::microseconds(2000));
        }
    }
    outbox.drain();
    if (abandon) executor.stop(std::chrono::seconds(10));
    spdlog::info("worker done: {} tasks run here", ran);
}

}  // namespace compatbench
