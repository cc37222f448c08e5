// What the MPI verbs share (`screen` and `merge`, which run alone or under mpirun): MPI set
// up around the verb, and tensors assigned to MPI ranks largest first, each to the
// least-loaded rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace compatbench {

// Runs `body(rank, size)` between MPI_Init and MPI_Finalize and returns its exit code. A
// ConfigError is printed as "compatbench: <what>", any other exception as
// "compatbench: <verb>: <what>" (once, by rank 0); both give kExitBadInput.
int with_mpi(const char* verb, const std::function<int(int rank, int size)>& body);

// Runs `work` on this rank; when it throws on any rank, every rank throws the message of the
// lowest failing one, so that no rank waits in a collective for a rank that failed.
void on_every_rank(const std::function<void()>& work);

// The rank of each tensor (sizes in elements), the same on every rank.
std::vector<int> assign_ranks(const std::vector<std::uint64_t>& sizes, int ranks);

}  // namespace compatbench
