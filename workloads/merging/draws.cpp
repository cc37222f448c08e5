#include "merging/draws.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/hash.h"
#include "merging/last_pass.h"
#include "merging/ranks.h"

namespace compatbench::merging {

namespace {

// Bits [j, j + 8) of `bits`, j a multiple of 8, set to `byte`'s (bit l to coordinate j + l).
void set_byte(std::vector<std::uint64_t>& bits, std::size_t j, std::uint8_t byte) {
    const unsigned shift = j & 63;
    bits[j >> 6] =
        (bits[j >> 6] & ~(std::uint64_t{0xff} << shift)) | (std::uint64_t{byte} << shift);
}

// A byte whose bit l is set where lane l of a comparison holds (all ones).
std::uint64_t byte_of(last_pass::V8u lanes) {
    lanes &= last_pass::V8u{1, 2, 4, 8, 16, 32, 64, 128};
    std::uint64_t byte = 0;
    for (int l = 0; l < 8; ++l) byte |= lanes[l];
    return byte;
}

}  // namespace

Draws::Draws(const MergeParams& p, const std::string& name, std::size_t i)
    : stream(p.seed ^ fnv1a64(name) ^ splitmix64(i + 1)) {}

double Draws::operator()(std::size_t j) const { return unit_double(splitmix64(stream + j)); }

double KeepProbability::della(std::size_t rank, std::size_t cols, double d, double e) const {
    return (d - e) + static_cast<double>(rank) / static_cast<double>(cols - 1) * 2.0 * e;
}

// Bits [0, n) of `bits` set where the seeded draw of that coordinate (Draws: stream + j) lies
// below `rate`, 64 coordinates to a word, their draws 8 lanes at a time.
void random_bits(std::uint64_t stream, double rate, std::size_t n,
                 std::vector<std::uint64_t>& bits) {
    const std::uint64_t below = last_pass::draws_below(rate);
    using last_pass::V8u;
    for (std::size_t first = 0; first < n; first += 64) {
        std::uint64_t word = 0;
        for (std::size_t g = 0; g < 64; g += 8) {
            const V8u at = V8u{0, 1, 2, 3, 4, 5, 6, 7} + (stream + first + g);
            word |= byte_of((V8u)((last_pass::splitmix64_lanes(at) >> 11) < below)) << g;
        }
        const std::size_t valid = std::min<std::size_t>(64, n - first);
        const std::uint64_t mask =
            valid == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid) - 1;
        bits[first >> 6] = (bits[first >> 6] & ~mask) | (word & mask);
    }
}

// DELLA (mergekit's della_magprune): along dimension 1 (the rows of a matrix; for an N-D
// tensor each fibre of fixed other indices, as torch's sort along dim 1 ranks),
// p_j = (d − ε) + 2ε·(rank_j − 1)/(d1 − 1), rank 1 for the smallest |τ| of the fibre (ties:
// the lower index ranks lower).
void della_bits(const MergeParams& p, const TensorScope& s, std::size_t i, std::size_t n,
                const std::vector<double>& mag, std::vector<std::uint64_t>& bits,
                const KeepProbability& keep) {
    const double d = density_of(p, i), e = per_model(p.epsilons, i, 0.15);
    if (d + e >= 1.0 || d - e <= 0.0)
        throw std::invalid_argument(s.name +
                                    ": DELLA needs density ± epsilon inside (0, 1), "
                                    "got density " +
                                    std::to_string(d) + ", epsilon " + std::to_string(e));
    const std::size_t cols = s.row_length, stride = std::max<std::size_t>(s.rank_stride, 1);
    if (cols == 0 || n % (cols * stride) != 0)
        throw std::invalid_argument(s.name +
                                    ": DELLA needs the tensor's shape to rank along "
                                    "dimension 1");
    const Draws draw(p, s.name, i);
    if (cols == 1 && p.della_lone_at_density) return random_bits(draw.stream, d, n, bits);
    if (cols < 2)
        throw std::invalid_argument(s.name +
                                    ": DELLA ranks along dimension 1, here of one coordinate "
                                    "(mergekit's rank ramp is 0/0 there)");
    std::vector<std::uint64_t> below(cols);  // each rank's keep probability, as an integer
    for (std::size_t r = 0; r < cols; ++r)
        below[r] = last_pass::draws_below(keep.della(r, cols, d, e));
    std::vector<std::uint32_t> rank(cols);
    for (std::size_t outer = 0; outer < n; outer += cols * stride) {
        for (std::size_t q = 0; q < stride; ++q) {
            const auto at = [&](std::size_t c) { return outer + c * stride + q; };
            ranks::ranks_of(cols, mag.data() + at(0), stride, rank);
            const std::uint64_t first = draw.stream + at(0);  // the draws 8 at a time
            for (std::size_t c = 0; c < cols; c += 8) {
                using last_pass::V8u;
                const V8u lanes = (V8u{0, 1, 2, 3, 4, 5, 6, 7} + c) * stride + first;
                const V8u draws = last_pass::splitmix64_lanes(lanes) >> 11;
                if (stride == 1 && c + 8 <= cols && at(c) % 8 == 0) {  // one byte of bits
                    V8u limit;
                    for (int l = 0; l < 8; ++l)
                        limit[l] = below[rank[c + static_cast<std::size_t>(l)]];
                    set_byte(bits, at(c), static_cast<std::uint8_t>(byte_of((V8u)(draws < limit))));
                    continue;
                }
                for (std::size_t l = 0; l < std::min<std::size_t>(8, cols - c); ++l)
                    set_bit(bits, at(c + l), draws[l] < below[rank[c + l]]);
            }
        }
    }
}

}  // namespace compatbench::merging
