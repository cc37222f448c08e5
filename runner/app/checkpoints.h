// Shared by `screen` and `merge`: tensors are assigned to ranks largest first, each to the
// least-loaded rank.
#pragma once

#include <cstdint>
#include <vector>

namespace compatbench {

// The rank of each tensor (sizes in elements), the same on every rank.
std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks);

}  // namespace compatbench
