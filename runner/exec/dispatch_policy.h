// The coordinator's dispatch policy, in one place: the coordinator follows it and
// `compatbench plan --ranks` simulates it.
//   - Ready tasks go out highest cost hint first, then by group (in config order), and
//     within a group in a spread order (bit-reversed position): the first tasks of a group
//     sample all of it, so that its mean duration measured early holds for the rest. (A
//     group's tasks often grow in cost along its grid: the K of a K-way merge, a backbone
//     from an MLP to a ViT. Taken in order, the first tasks priced the group 7× too cheap.)
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

#include "experiment/experiment.h"
#include "graph/task_graph.h"

namespace compatbench {

struct GroupTiming {
    double seconds = 0.0;     // summed durations of finished tasks
    std::size_t samples = 0;  // finished tasks
};

// The position of the `position`-th of a group's `tasks` tasks in its spread order.
inline std::size_t policy_spread(std::size_t position, std::size_t tasks) {
    unsigned bits = 0;
    while ((std::size_t{1} << bits) < tasks) ++bits;
    std::size_t reversed = 0;
    for (unsigned b = 0; b < bits; ++b)
        if ((position >> b) & 1U) reversed |= std::size_t{1} << (bits - 1 - b);
    return reversed;
}

// A ready task in a max-heap (std::priority_queue): the next to go out on top.
struct ReadyEntry {
    double cost;
    std::size_t group;
    std::size_t spread;
    std::size_t index;
    bool operator<(const ReadyEntry& o) const {
        if (cost != o.cost) return cost < o.cost;
        if (group != o.group) return group > o.group;
        return spread > o.spread;
    }
};

inline ReadyEntry policy_entry(const Config& config, const TaskGraph& graph, std::size_t i) {
    const std::size_t g = graph.tasks()[i].group;
    const std::size_t first = graph.group_begin(g), n = graph.group_end(g) - first;
    return {config.groups[g].cost, g, policy_spread(i - first, n), i};
}

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
