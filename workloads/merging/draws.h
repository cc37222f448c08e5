// The seeded keep bits of a random sparsification (DARE's) and of DELLA's rank-ramped one
// (draws.cpp): 64 coordinates to a word, each draw splitmix64 of (Draws' stream + j).
// Internal to merging/.
#pragma once

#include <cstdint>
#include <vector>

#include "merging/generalized.h"

namespace compatbench::merging {

// Bit j of `bits` set to `on`, without a branch.
inline void set_bit(std::vector<std::uint64_t>& bits, std::size_t j, bool on) {
    const std::uint64_t m = std::uint64_t{1} << (j & 63);
    bits[j >> 6] = (bits[j >> 6] & ~m) | (m & (std::uint64_t{0} - on));
}

// Bits [0, n) of `bits` set where the draw of that coordinate lies below `rate`.
void random_bits(std::uint64_t stream, double rate, std::size_t n,
                 std::vector<std::uint64_t>& bits);

// DELLA's keep bits of model i from |τ_i| in mag (select_bits' `della`).
void della_bits(const MergeParams& p, const TensorScope& s, std::size_t i, std::size_t n,
                const std::vector<double>& mag, std::vector<std::uint64_t>& bits,
                const KeepProbability& keep);

}  // namespace compatbench::merging
