// Clocks and durations: Unix time for the records, steady time for intervals, and
// durations as people read them (42s, 3m07s, 2h05m).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace compatbench {

// Seconds since the Unix epoch (what the ledger and results.h5 record).
inline double now_epoch() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Seconds since `t` on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

inline std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds > 1e12) return "?";
    const long s = std::lround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else if (s >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

}  // namespace compatbench
