// The one-pass screen of every subset (methods.md §3.4) against the per-coordinate kernel of
// the study (§3.1) on the same tensors: the same sums to rounding, sign conflicts exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "merging/subset_screen.h"

using namespace compatbench::merging;

namespace {

struct Models {
    std::vector<float> base;
    std::vector<std::vector<float>> models;
};

// M fine-tunes of a base of n coordinates; some coordinates left at the base (τ = 0).
Models made_up(std::size_t m, std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    Models out{std::vector<float>(n), {}};
    for (auto& v : out.base) v = g(rng);
    for (std::size_t i = 0; i < m; ++i) {
        auto t = out.base;
        for (std::size_t j = 0; j < n; ++j)
            if (j % 7 != i % 7) t[j] += 0.01f * g(rng) * static_cast<float>(i + 1);
        out.models.push_back(std::move(t));
    }
    return out;
}

SubsetScreen screened(const Models& x) {
    SubsetScreen s(x.models.size());
    std::vector<std::span<const float>> views(x.models.begin(), x.models.end());
    SpanBlocks blocks(x.base, views);
    s.add(blocks);
    return s;
}

InterferenceSums direct(const Models& x, const std::vector<std::size_t>& subset) {
    std::vector<std::span<const float>> views;
    for (std::size_t i : subset) views.emplace_back(x.models[i]);
    return interference(x.base, views);
}

void expect_same(const InterferenceSums& a, const InterferenceSums& b) {
    EXPECT_EQ(a.count, b.count);
    EXPECT_NEAR(a.interference, b.interference,
                1e-6 * b.interference);  // b: float32 per coordinate
    EXPECT_NEAR(a.dispersion, b.dispersion, 1e-6 * b.interference);
    EXPECT_NEAR(a.rho(), b.rho(), 1e-6);
    EXPECT_EQ(a.sign_conflicts, b.sign_conflicts);
}

}  // namespace

TEST(SubsetScreen, EverySubsetAsTheStudysKernel) {
    const Models x = made_up(5, 40000, 1);  // more than one block
    const SubsetScreen s = screened(x);
    for (const std::vector<std::size_t>& subset :
         {std::vector<std::size_t>{0, 1}, {1, 4}, {0, 2, 3}, {1, 2, 3, 4}, {0, 1, 2, 3, 4}})
        expect_same(s.sums(subset), direct(x, subset));
}

TEST(SubsetScreen, ManyModelsKeepPairConflictsOnly) {
    const Models x = made_up(11, 3000, 2);  // past kMaxPatternModels
    const SubsetScreen s = screened(x);
    expect_same(s.sums({3, 9}), direct(x, {3, 9}));
    EXPECT_FALSE(s.has_sign_conflicts(3));
    EXPECT_EQ(s.sums({1, 2, 3}).sign_conflicts, 0u);
    EXPECT_NEAR(s.sums({1, 2, 3}).interference, direct(x, {1, 2, 3}).interference,
                1e-6 * direct(x, {1, 2, 3}).interference);
}

TEST(SubsetScreen, PackedStateAddsUp) {
    const Models x = made_up(4, 5000, 3);
    Models first = x, second = x;  // the same models, split in two halves of the tensor
    first.base.resize(2500);
    second.base.erase(second.base.begin(), second.base.begin() + 2500);
    for (std::size_t i = 0; i < 4; ++i) {
        first.models[i].resize(2500);
        second.models[i].erase(second.models[i].begin(), second.models[i].begin() + 2500);
    }
    SubsetScreen a = screened(first);
    a.add_packed(screened(second).packed());
    expect_same(a.sums({0, 2, 3}), direct(x, {0, 2, 3}));
    const SubsetScreen whole = screened(x);  // ‖τ‖ / ‖θ0‖ travels with the packed state too
    for (std::size_t i = 0; i < 4; ++i)
        EXPECT_NEAR(a.relative_norm(i), whole.relative_norm(i), 1e-12 * whole.relative_norm(i));
}

TEST(SubsetScreen, RelativeNormIsTheTaskVectorsShareOfTheBase) {
    // θ0 = (3, 4): ‖θ0‖ = 5; τ = (0.3, −0.4): 0.1; τ = (3, 4): 1; a zero base has none.
    const Models x{{3, 4}, {{3.3f, 3.6f}, {6, 8}}};
    const SubsetScreen s = screened(x);
    EXPECT_NEAR(s.relative_norm(0), 0.1, 1e-7);
    EXPECT_NEAR(s.relative_norm(1), 1.0, 1e-7);
    EXPECT_THROW(s.relative_norm(2), std::invalid_argument);
    EXPECT_TRUE(std::isnan(screened(Models{{0, 0}, {{1, 0}, {0, 1}}}).relative_norm(0)));
}

TEST(SubsetScreen, RankedLowestScoreFirstAndGreedyPastTheLimit) {
    const Models x = made_up(6, 2000, 4);  // model i's task vector grows with i
    const SubsetScreen s = screened(x);
    const auto all = rank_subsets(s, 3, 1.0);
    ASSERT_EQ(all.size(), 20u);  // C(6, 3)
    EXPECT_EQ(all.front().members, (std::vector<std::size_t>{0, 1, 2}));
    for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1].score, all[i].score);
    EXPECT_DOUBLE_EQ(all[0].score, screening_score(all[0].sums.mean_interference(), 3, 1.0));
    const auto greedy = rank_subsets(s, 3, 1.0, /*limit=*/10);
    ASSERT_FALSE(greedy.empty());
    EXPECT_LE(greedy.size(), 15u);  // at most one per starting pair, duplicates dropped
    EXPECT_EQ(greedy.front().members, all.front().members);
    EXPECT_THROW(rank_subsets(s, 7, 1.0), std::invalid_argument);
    EXPECT_THROW(s.sums({2, 2}), std::invalid_argument);
    EXPECT_THROW(SubsetScreen(33), std::invalid_argument);  // past 32-bit sign patterns
    EXPECT_THROW(SubsetScreen(1), std::invalid_argument);
}

TEST(SubsetScreen, MethodsReferenceValues) {
    // methods.md §3.4: τ_a = (1, −2, 0), τ_b = (3, 2, −1) on a zero base.
    const Models x{{0, 0, 0}, {{1, -2, 0}, {3, 2, -1}}};
    const auto s = screened(x).sums({0, 1});
    EXPECT_DOUBLE_EQ(s.interference, 5.25);
    EXPECT_DOUBLE_EQ(s.dispersion, 1.25);
    EXPECT_DOUBLE_EQ(s.cancellation, 4.0);
    EXPECT_EQ(s.sign_conflicts, 1u);
}
