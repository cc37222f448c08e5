#include "app/checkpoints.h"

#include <algorithm>
#include <numeric>

namespace compatbench {

std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks) {
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
    std::vector<std::uint64_t> load(static_cast<std::size_t>(ranks), 0);
    std::vector<int> owner(sizes.size(), 0);
    for (std::size_t i : order) {
        const auto r =
            static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        owner[i] = static_cast<int>(r);
        load[r] += sizes[i];
    }
    return owner;
}

}  // namespace compatbench
