// DELLA's ranks along a fibre (merging/ranks.h) against a stable sort by comparisons, for
// each way the radix sort takes: patterns that share a 32-bit or a 64-bit word with their
// index, patterns too wide for that, a fibre of equal values, a NaN, a stride.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "merging/ranks.h"

using compatbench::merging::ranks::ranks_of;

namespace {

// The ranks of a stable sort by `<` of v[c · stride], c < cols.
std::vector<std::uint32_t> sorted_ranks(const std::vector<double>& v, std::size_t cols,
                                        std::size_t stride) {
    std::vector<std::uint32_t> col(cols), rank(cols);
    std::iota(col.begin(), col.end(), 0U);
    std::stable_sort(col.begin(), col.end(), [&](std::uint32_t a, std::uint32_t b) {
        return v[a * stride] < v[b * stride];
    });
    for (std::size_t r = 0; r < cols; ++r) rank[col[r]] = static_cast<std::uint32_t>(r);
    return rank;
}

std::vector<std::uint32_t> radix_ranks(const std::vector<double>& v, std::size_t cols,
                                       std::size_t stride) {
    std::vector<std::uint32_t> rank(cols);
    ranks_of(cols, v.data(), stride, rank);
    return rank;
}

// |x| for x normal with scale 0.01, its float32 bit pattern cut to `keep` bits (bfloat16: 16)
// and the low `drop` bits of its double pattern cleared: many ties where `keep` is small.
std::vector<double> magnitudes(std::size_t n, unsigned seed, int keep, int drop) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> g(0.0f, 0.01f);
    std::vector<double> v(n);
    for (double& x : v) {
        auto f = std::abs(g(rng));
        f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) & (~0U << (32 - keep)));
        x = std::bit_cast<double>(std::bit_cast<std::uint64_t>(static_cast<double>(f)) &
                                  (~std::uint64_t{0} << drop));
    }
    return v;
}

}  // namespace

TEST(DellaRanks, MatchAStableSortOfBfloat16Magnitudes) {  // 32-bit words, many ties
    for (const std::size_t cols : {2UL, 3UL, 17UL, 1000UL, 2048UL, 5632UL}) {
        const auto v = magnitudes(cols, static_cast<unsigned>(cols), 16, 0);
        EXPECT_EQ(radix_ranks(v, cols, 1), sorted_ranks(v, cols, 1)) << cols;
    }
}

TEST(DellaRanks, MatchAStableSortOfWiderPatterns) {
    // float32 values (64-bit words), then doubles of any pattern (pattern and index pairs)
    const auto floats = magnitudes(2048, 7, 32, 0);
    EXPECT_EQ(radix_ranks(floats, 2048, 1), sorted_ranks(floats, 2048, 1));
    std::mt19937_64 rng(3);
    std::vector<double> wide(2048);
    for (double& x : wide)
        x = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                       static_cast<int>(rng() % 600) - 300);
    wide[5] = wide[9] = wide[100];  // ties too
    EXPECT_EQ(radix_ranks(wide, 2048, 1), sorted_ranks(wide, 2048, 1));
}

TEST(DellaRanks, MatchAStableSortOfManyDigits) {  // short fibres: digits of 4 bits
    std::mt19937_64 rng(9);
    for (const std::size_t cols : {5UL, 16UL, 100UL}) {
        std::vector<double> v(cols);
        for (double& x : v)
            x = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                           static_cast<int>(rng() % 2000) - 1000);
        v[cols - 1] = v[0];
        EXPECT_EQ(radix_ranks(v, cols, 1), sorted_ranks(v, cols, 1)) << cols;
    }
    auto floats = magnitudes(2048, 13, 32, 0);  // float32 values with zeros among them
    for (std::size_t c = 0; c < 2048; c += 97) floats[c] = 0.0;
    EXPECT_EQ(radix_ranks(floats, 2048, 1), sorted_ranks(floats, 2048, 1));
}

TEST(DellaRanks, EqualValuesRankInIndexOrderAndZeroesFirst) {
    std::vector<double> v(100, 0.25);
    EXPECT_EQ(radix_ranks(v, 100, 1), sorted_ranks(v, 100, 1));
    v[40] = 0.0;
    v[60] = std::numeric_limits<double>::infinity();
    const auto r = radix_ranks(v, 100, 1);
    EXPECT_EQ(r[40], 0U);
    EXPECT_EQ(r[60], 99U);
    EXPECT_EQ(r, sorted_ranks(v, 100, 1));
}

TEST(DellaRanks, ANaNFallsBackToTheComparisonsStableSort) {
    auto v = magnitudes(300, 5, 16, 0);
    v[7] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(radix_ranks(v, 300, 1), sorted_ranks(v, 300, 1));
}

TEST(DellaRanks, ReadEveryStrideThValue) {
    const auto v = magnitudes(3 * 777, 11, 16, 0);
    for (std::size_t q = 0; q < 3; ++q) {
        const std::vector<double> from_q(v.begin() + static_cast<std::ptrdiff_t>(q), v.end());
        std::vector<std::uint32_t> rank(777);
        ranks_of(777, v.data() + q, 3, rank);
        EXPECT_EQ(rank, sorted_ranks(from_q, 777, 3)) << q;
    }
}
