// Arithmetic in the merge's dtype (in_dtype.h), on cases worked by hand where bfloat16 or
// float16 rounding decides a coordinate that exact arithmetic decides the other way.
// tests/mergekit compares the same code with torch itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "merging/in_dtype.h"
#include "workloads/merging/merged.h"

using namespace compatbench::merging;
using compatbench::merging::testing::merged;

namespace {

MergeParams ties(Arithmetic a) {
    MergeParams p;
    p.method = Method::generalized;
    p.consensus = true;
    p.normalize = Normalize::mean;
    p.arithmetic = a;
    return p;
}

}  // namespace

TEST(InDtype, RoundsAsTorchConvertsFloat32) {
    EXPECT_EQ(round_to(Arithmetic::bfloat16, 0.3f), 0.30078125f);    // 77/256
    EXPECT_EQ(round_to(Arithmetic::float16, 0.3f), 0.30004882812f);  // 1229/4096
    EXPECT_EQ(round_to(Arithmetic::float32, 0.3f), 0.3f);
    EXPECT_EQ(round_to(Arithmetic::bfloat16, 1.00390625f), 1.0f);  // a tie: to even
}

TEST(InDtype, BfloatWeightsElectTheOtherSign) {
    // τ_a = 1 with weight 0.3, τ_b = −0.4296875 (= −110/256) with weight 0.7. Exactly,
    // 0.3 − 0.7·0.4296875 = −0.00078 elects −, and b alone gives −0.4296875. In bfloat16 the
    // weights are 0.30078125 and 0.69921875, 0.69921875·0.4296875 = 0.30045 rounds to
    // 0.30078125: the sum is 0, + is elected, and a alone gives 0.30078125 / 0.30078125 = 1.
    MergeParams p = ties(Arithmetic::bfloat16);
    p.weights = {0.3, 0.7};
    const std::vector<float> base = {0.0f};
    const std::vector<std::vector<float>> models = {{1.0f}, {-0.4296875f}};
    EXPECT_EQ(merged(p, base, models)[0], 1.0f);
    p.arithmetic = Arithmetic::exact;
    EXPECT_FLOAT_EQ(merged(p, base, models)[0], -0.4296875f);
}

TEST(InDtype, BfloatMagnitudesTieAndTheLowerIndexIsKept) {
    // τ = (1.001, 1.002) keeps one of two (density 0.5). Exactly the second is larger; in
    // bfloat16 both are 1.0, and the tie goes to the lower index.
    MergeParams p = ties(Arithmetic::bfloat16);
    p.sparsify = Sparsify::magnitude;
    p.density = 0.5;
    const std::vector<float> base = {0.0f, 0.0f};
    const std::vector<std::vector<float>> models = {{1.001f, 1.002f}};
    EXPECT_EQ(merged(p, base, models), (std::vector<float>{1.0f, 0.0f}));
    p.arithmetic = Arithmetic::exact;
    EXPECT_EQ(merged(p, base, models), (std::vector<float>{0.0f, 1.002f}));
}

TEST(InDtype, LinearTakesTheWeightsInTheDtype) {
    // float16: w = 0.1 becomes 0.0999755859375 (1638/16384); w · 2 twice sums to
    // 0.39990234375, where exact arithmetic gives 0.4. Normalised: ÷ (2w) = 2 exactly.
    MergeParams p;
    p.method = Method::linear;
    p.arithmetic = Arithmetic::float16;
    p.weights = {0.1, 0.1};
    p.normalize = Normalize::sum;
    const std::vector<float> x = {2.0f};
    EXPECT_EQ(merged(p, x, {x, x})[0], 0.39990234375f);
    p.normalize = Normalize::mean;
    EXPECT_EQ(merged(p, x, {x, x})[0], 2.0f);
}

TEST(InDtype, LambdaMeetsTheTensorInFloat32AsTorch2Multiplies) {
    // τ = 3, λ = 0.3: torch 2 multiplies a bfloat16 tensor by the number in float32,
    // 3 · 0.3f = 0.90000004, which rounds to 0.8984375 (230/256); λ rounded to bfloat16
    // first (0.30078125, torch 1) would give 0.90234375.
    MergeParams p;
    p.method = Method::task_arithmetic;
    p.normalize = Normalize::sum;
    p.coef = 0.3;
    p.arithmetic = Arithmetic::bfloat16;
    EXPECT_EQ(merged(p, {0.0f}, {{3.0f}})[0], 0.8984375f);
}

TEST(InDtype, MethodsOutsideMergekitAreRefused) {
    MergeParams p;
    p.method = Method::prism;
    p.arithmetic = Arithmetic::bfloat16;
    EXPECT_THROW(merged(p, {0.0f}, {{1.0f}, {2.0f}}), std::invalid_argument);
}

namespace {

std::uint32_t bits_of(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

// rounded<A> of 8 lanes against round_to of each, bit for bit, over `patterns`.
template <Arithmetic A>
void expect_lanes_round_as_scalars(const std::vector<std::uint32_t>& patterns) {
    for (std::size_t j = 0; j + 8 <= patterns.size(); j += 8) {
        compatbench::V8f v;
        std::memcpy(&v, patterns.data() + j, sizeof v);
        const compatbench::V8f r = rounded<A>(v);
        for (int l = 0; l < 8; ++l) {
            float x;
            std::memcpy(&x, &patterns[j + static_cast<std::size_t>(l)], sizeof x);
            ASSERT_EQ(bits_of(r[l]), bits_of(round_to(A, x))) << std::hex << bits_of(x);
        }
    }
}

// A tensor of n coordinates: the base and two models, seeded, with NaN, infinities, zeros of
// both signs and bfloat16 ties among them.
std::vector<std::vector<float>> seeded_tensor(std::size_t n) {
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<std::vector<float>> v(3, std::vector<float>(n));
    for (auto& x : v)
        for (float& y : x) y = normal(gen);
    v[1][5] = std::numeric_limits<float>::quiet_NaN();
    v[2][9] = std::numeric_limits<float>::infinity();
    v[0][12] = -0.0f;
    v[1][12] = -0.0f;
    v[2][12] = 0.0f;
    v[1][20] = 1.00390625f;  // halfway between two bfloat16 values
    return v;
}

}  // namespace

TEST(InDtype, LanesRoundAsEachValueRounds) {
    std::vector<std::uint32_t> patterns = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xff812345,
        0x7fffffff, 0x7f7fffff, 0xff7fffff, 0x00000001, 0x807fffff, 0x3f808000, 0x3f818000,
        0x3f808001, 0x477fe000, 0x477ff000, 0x387fe000, 0x33000000, 0x33000001};
    std::mt19937 gen(1);
    for (int i = 0; i < 200000; ++i) patterns.push_back(static_cast<std::uint32_t>(gen()));
    patterns.resize(patterns.size() / 8 * 8);
    expect_lanes_round_as_scalars<Arithmetic::bfloat16>(patterns);
    expect_lanes_round_as_scalars<Arithmetic::float16>(patterns);
    expect_lanes_round_as_scalars<Arithmetic::float32>(patterns);
}

TEST(InDtype, StreamedBlocksMergeAsEachCoordinateAlone) {
    // Task arithmetic and linear read each coordinate alone: a tensor of several blocks and a
    // short tail merges as its coordinates do one by one (each a tensor of one value).
    const std::size_t n = 2 * 2048 + 13;
    const auto v = seeded_tensor(n);
    for (const Method m : {Method::task_arithmetic, Method::linear})
        for (const Arithmetic a : {Arithmetic::bfloat16, Arithmetic::float16}) {
            MergeParams p;
            p.method = m;
            p.arithmetic = a;
            p.weights = {0.3, 0.9};
            p.coef = 0.7;
            const std::vector<float> all = merged(p, v[0], {v[1], v[2]});
            for (std::size_t j = 0; j < n; ++j) {
                const float one = merged(p, {v[0][j]}, {{v[1][j]}, {v[2][j]}})[0];
                ASSERT_EQ(bits_of(all[j]), bits_of(one)) << method_name(m) << " at " << j;
            }
        }
}

TEST(InDtype, FilterWiseModelStockMergesAsEachRowAlone) {
    // Rows of 1000 cross the blocks of 2048 and end inside groups of 8 lanes; the last is
    // short (a tensor that is no whole number of rows): each merges as a tensor of its own.
    const std::size_t row = 1000, n = 3 * row + 333;
    const auto v = seeded_tensor(n);
    MergeParams p;
    p.method = Method::model_stock;
    p.arithmetic = Arithmetic::bfloat16;
    p.filter_wise = true;
    const std::vector<float> all = merged(p, v[0], {v[1], v[2]}, row);
    p.filter_wise = false;
    for (std::size_t begin = 0; begin < n; begin += row) {
        const auto at = [&](const std::vector<float>& x) {
            return std::vector<float>(
                x.begin() + static_cast<std::ptrdiff_t>(begin),
                x.begin() + static_cast<std::ptrdiff_t>(std::min(n, begin + row)));
        };
        const std::vector<float> alone = merged(p, at(v[0]), {at(v[1]), at(v[2])});
        for (std::size_t j = 0; j < alone.size(); ++j)
            ASSERT_EQ(bits_of(all[begin + j]), bits_of(alone[j])) << "at " << begin + j;
    }
}
