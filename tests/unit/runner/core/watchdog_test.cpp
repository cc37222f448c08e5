// The watchdog (core/watchdog.h): a step whose fingerprint keeps changing is never ended; one
// whose fingerprint stands still past the limit is; a limit of 0 watches nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/watchdog.h"

using namespace compatbench;

namespace {
// Waits up to `seconds` for `flag`.
bool wait_for(const std::atomic<bool>& flag, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!flag && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return flag;
}
}  // namespace

TEST(Watchdog, EndsAStepThatMakesNoProgress) {
    std::atomic<bool> expired{false};
    const Watchdog dog(
        0.05, [] { return std::string("same"); }, [&] { expired = true; }, 0.01);
    EXPECT_TRUE(wait_for(expired, 30.0));
}

TEST(Watchdog, LeavesAStepThatMakesProgress) {
    std::atomic<bool> expired{false};
    std::atomic<int> calls{0};
    {
        // Every reading differs: whatever the scheduling, the limit is never reached.
        const Watchdog dog(
            0.05, [&] { return std::to_string(calls++); }, [&] { expired = true; }, 0.01);
        while (calls < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_FALSE(expired);
}

TEST(Watchdog, ALimitOfZeroWatchesNothing) {
    std::atomic<int> calls{0};
    {
        const Watchdog dog(
            0.0, [&] { return std::to_string(calls++); }, [] {}, 0.01);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(calls, 0);
}
