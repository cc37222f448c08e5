// What the MPI verbs share (`screen`, `merge` and `advise`, which run alone or under mpirun):
// MPI set up around the verb, and tensors assigned to MPI ranks largest first, each to the
// least-loaded rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/comm.h"

namespace compatbench {

// Runs `body(world)` in an MPI session and returns its exit code. A ConfigError is printed
// as "compatbench: <what>", any other exception as "compatbench: <verb>: <what>" (once, by
// rank 0: a rank's own error reaches rank 0 through comm::agree); both give kExitBadInput.
int with_mpi(const char* verb, const std::function<int(const comm::Comm& world)>& body);

// The rank of each tensor (sizes in elements), the same on every rank.
std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks);

}  // namespace compatbench
