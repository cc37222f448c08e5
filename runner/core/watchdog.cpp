#include "core/watchdog.h"

#include <chrono>

namespace compatbench {

Watchdog::Watchdog(double limit_s, std::function<std::string()> fingerprint,
                   std::function<void()> expire, double poll_s)
    : fingerprint_(std::move(fingerprint)), expire_(std::move(expire)) {
    if (limit_s > 0) thread_ = std::thread([this, limit_s, poll_s] { watch(limit_s, poll_s); });
}

Watchdog::~Watchdog() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(double limit_s, double poll_s) {
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
        } else if (std::chrono::duration<double>(clock::now() - since).count() >= limit_s) {
            expire_();
            return;
        }
    }
}

}  // namespace compatbench
