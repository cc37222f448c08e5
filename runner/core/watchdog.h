// A guard for a step that can hang where no error reaches the caller: a collective call that
// another rank left (docs/cluster.md "Exit codes").
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace compatbench {

// While it lives, a thread reads `fingerprint()` every `poll_s` seconds; once the value has
// stayed the same for `limit_s` seconds, it calls `expire()`, which ends the process and does
// not return. limit_s == 0: no thread, no guard.
class Watchdog {
  public:
    // Once `failed()` (when given) says an error is known, the limit is `failed_limit_s`
    // (when smaller): a step that met an error and stands still is not waited for long.
    Watchdog(double limit_s, std::function<std::string()> fingerprint, std::function<void()> expire,
             double poll_s = 1.0, std::function<bool()> failed = {}, double failed_limit_s = 0);
    ~Watchdog();  // stops the thread and waits for it
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

  private:
    void watch(double limit_s, double poll_s, double failed_limit_s);

    std::function<std::string()> fingerprint_;
    std::function<void()> expire_;
    std::function<bool()> failed_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace compatbench
