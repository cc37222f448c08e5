#include "core/watchdog.h"

#include <chrono>

namespace compatbench {

Watchdog::Watchdog(double limit_s, std::function<std::string()> fingerprint,
                   std::function<void()> expire, double poll_s, std::function<bool()> failed,
                   double failed_limit_s)
    : fingerprint_(std::move(fingerprint)), expire_(std::move(expire)), failed_(std::move(failed)) {
    if (limit_s > 0)
        thread_ = std::thread(
            [this, limit_s, poll_s, failed_limit_s] { watch(limit_s, poll_s, failed_limit_s); });
}

Watchdog::~Watchdog() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(double limit_s, double poll_s, double failed_limit_s) {
    using clock = std::chrono::steady_clock;
    const auto poll = std::chrono::duration<double>(poll_s);
    std::string last = fingerprint_();
    auto since = clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, poll, [this] { return done_; })) {
        const std::string now = fingerprint_();
        if (now != last) {
            last = now;
            since = clock::now();
            continue;
        }
        const double limit = failed_ && failed_limit_s > 0 && failed_limit_s < limit_s && failed_()
                                 ? failed_limit_s
                                 : limit_s;
        if (std::chrono::duration<double>(clock::now() - since).count() >= limit) {
            expire_();
            return;
        }
    }
}

}  // namespace compatbench
