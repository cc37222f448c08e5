#include "app/mpi_verb.h"

#include <algorithm>
#include <iostream>
#include <numeric>

#include "config/yaml_check.h"
#include "exec/signals.h"

namespace compatbench {

int with_mpi(const char* verb, const std::function<int(const comm::Comm& world)>& body) {
    const comm::Session session;
    const comm::Comm world = session.world();
    try {
        return body(world);
    } catch (const ConfigError& e) {
        if (world.rank() == 0) std::cerr << "compatbench: " << e.what() << "\n";
    } catch (const std::exception& e) {
        if (world.rank() == 0) std::cerr << "compatbench: " << verb << ": " << e.what() << "\n";
    }
    return kExitBadInput;
}

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
