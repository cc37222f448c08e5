// The coordinator's dispatch policy, in one place: the coordinator follows it and
// `compatbench plan --ranks` simulates it.
//   - Ready tasks go out highest cost hint first, then lowest task index.
//   - Batches of a group's cheap tasks amortise the round trip (about 5 ms of work per
//     batch), but never more than a fair share of what is ready, so that every rank has
//     work near the end.
//   - Only short tasks (mean < 50 ms) are prefetched (two batches outstanding per rank); a
//     queued long task would idle another rank at the end.
// A group's mean duration is learnt from its finished tasks; before 4 samples, one task at
// a time.
#pragma once

#include <algorithm>
#include <cstddef>

namespace compatbench {

struct GroupTiming {
    double seconds = 0.0;     // summed durations of finished tasks
    std::size_t samples = 0;  // finished tasks
};

inline std::size_t policy_batch_size(const GroupTiming& g, std::size_t ready, int ranks) {
    if (g.samples < 4) return 1;
    const double mean = g.seconds / static_cast<double>(g.samples);
    const std::size_t b =
        mean <= 0.0 ? 512 : static_cast<std::size_t>(std::clamp(0.005 / mean, 1.0, 512.0));
    const std::size_t fair = ready / (2 * static_cast<std::size_t>(ranks)) + 1;
    return std::max<std::size_t>(1, std::min(b, fair));
}

inline std::size_t policy_target_outstanding(const GroupTiming& g, std::size_t ready, int ranks) {
    if (g.samples < 4) return 1;
    const double mean = g.seconds / static_cast<double>(g.samples);
    return mean < 0.05 ? 2 * policy_batch_size(g, ready, ranks) : 1;
}

}  // namespace compatbench
