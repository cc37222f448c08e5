// mergekit's nearswap, SCE, multislerp, nuslerp, karcher and filter-wise Model Stock
// (mergekit_kernels.h) on cases
// worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "merging/mergekit_kernels.h"
#include "workloads/merging/merged.h"

using namespace compatbench::merging;
using compatbench::merging::testing::merged;

TEST(MergekitKernels, NearswapMovesOnlyWhereTheModelsLieWithinT) {
    MergeParams p;
    p.method = Method::nearswap;
    p.t = 0.5;
    // |a − b| = 0.25: w = min(1, 0.5/0.25) = 1, b; |a − b| = 2: w = 0.25; equal: w = 1, b.
    const auto out = merged(p, {1.0f, 0.0f, 3.0f}, {{1.25f, 2.0f, 3.0f}});
    EXPECT_FLOAT_EQ(out[0], 1.25f);
    EXPECT_FLOAT_EQ(out[1], 0.25f * 2.0f);
    EXPECT_FLOAT_EQ(out[2], 3.0f);
}

TEST(MergekitKernels, SceSelectsByVarianceElectsSignsAndWeighsBySquares) {
    MergeParams p;
    p.method = Method::sce;
    const std::vector<float> base(4, 0.0f);
    // τ_a = (2, 1, −1, 0), τ_b = (−2, 1, 3, 0). Variances (unbiased=False): 4, 0, 4, 0: two
    // non-zero, select_topk 0.5 keeps int(2·0.5) = 1: the tie at 4 goes to coordinate 0.
    const std::vector<std::vector<float>> models = {{2, 1, -1, 0}, {-2, 1, 3, 0}};
    p.select_topk = 0.5;
    // Kept: coordinate 0 only. Weights: mean τ² = 4/4 = 1 each, sum 2 (≥ 1e-6): 0.5, 0.5.
    // Coordinate 0: sum 0 ≥ 0 elects +; only a agrees: 2·0.5 / 0.5 = 2.
    auto out = merged(p, base, models);
    EXPECT_FLOAT_EQ(out[0], 2.0f);
    EXPECT_FLOAT_EQ(out[1], 0.0f);
    EXPECT_FLOAT_EQ(out[2], 0.0f);
    EXPECT_FLOAT_EQ(out[3], 0.0f);
    // Everything kept: weights (4+1+1)/4 = 1.5 and (4+1+9)/4 = 3.5, normalised 0.3, 0.7.
    // Coordinate 2: sum 2 > 0, b agrees: 3. Coordinate 1: both agree: (0.3 + 0.7)/1 = 1.
    p.select_topk = 1.0;
    out = merged(p, base, models);
    EXPECT_FLOAT_EQ(out[0], 2.0f);
    EXPECT_FLOAT_EQ(out[1], 1.0f);
    EXPECT_FLOAT_EQ(out[2], 3.0f);
    EXPECT_FLOAT_EQ(out[3], 0.0f);  // no sign: nothing agrees, 0 / clamp(0, 1e-6)
}

TEST(MergekitKernels, MultislerpIsTheNormalisedMeanDirectionAtTheMeanNorm) {
    MergeParams p;
    p.method = Method::multislerp;
    p.weights = {1.0, 1.0};  // normalised to 0.5 each
    // Orthogonal task vectors of norms 2 and 4: the mean direction (1, 1)/√2 at norm 3.
    const std::vector<float> base = {1.0f, -1.0f};
    auto out = merged(p, base, {{3.0f, -1.0f}, {1.0f, 3.0f}});
    const double r = 3.0 / std::sqrt(2.0);
    EXPECT_NEAR(out[0], 1.0 + r, 1e-6);
    EXPECT_NEAR(out[1], -1.0 + r, 1e-6);
    // Without a base the θ_i themselves: (3, 0) and (0, 3) → 3·(1, 1)/√2.
    p.has_base = false;
    out = merged(p, {3.0f, 0.0f}, {{3.0f, 0.0f}, {0.0f, 3.0f}});
    EXPECT_NEAR(out[0], 3.0 / std::sqrt(2.0), 1e-6);
    EXPECT_NEAR(out[1], 3.0 / std::sqrt(2.0), 1e-6);
    // Antipodal with equal weights: two models fall back to the weighted sum (zero here)...
    out = merged(p, {1.0f, 2.0f}, {{1.0f, 2.0f}, {-1.0f, -2.0f}});
    EXPECT_FLOAT_EQ(out[0], 0.0f);
    EXPECT_FLOAT_EQ(out[1], 0.0f);
    // ...more than two is mergekit's error.
    p.weights = {1.0, 1.0, 2.0};
    EXPECT_THROW(merged(p, {1.0f, 0.0f}, {{1.0f, 0.0f}, {1.0f, 0.0f}, {-1.0f, 0.0f}}),
                 std::invalid_argument);
}

TEST(MergekitKernels, ModelStockFilterWiseTakesOneTPerRow) {
    MergeParams p;
    p.method = Method::model_stock;
    const std::vector<float> base(4, 0.0f);
    // Two rows of 2. Row 0: τ_a = (1, 0), τ_b = (0, 1): cos 0, t = 0, θ = θ0. Row 1: τ_a =
    // τ_b = (1, 1): cos 1, t = 2·1/(1 + 1) = 1, θ = θ0 + τ̄.
    const std::vector<std::vector<float>> models = {{1, 0, 1, 1}, {0, 1, 1, 1}};
    p.filter_wise = true;
    auto out = merged(p, base, models, 2);
    EXPECT_FLOAT_EQ(out[0], 0.0f);
    EXPECT_FLOAT_EQ(out[1], 0.0f);
    EXPECT_FLOAT_EQ(out[2], 1.0f);
    EXPECT_FLOAT_EQ(out[3], 1.0f);
    // The whole tensor as one: cos = 2/(√3·√3) = 2/3, t = 2·(2/3)/(1 + 2/3) = 0.8.
    p.filter_wise = false;
    out = merged(p, base, models, 2);
    EXPECT_FLOAT_EQ(out[0], 0.8f * 0.5f);
    EXPECT_FLOAT_EQ(out[3], 0.8f);
}

TEST(MergekitKernels, NuslerpSlerpsTheVectorsAsTheyAreOrRowByRow) {
    MergeParams p;
    p.method = Method::nuslerp;
    p.has_base = false;
    p.weights = {1.0, 1.0};  // t = 1/2
    // Whole tensors (1, 0) and (0, 2), at right angles: sin(π/4) / sin(π/2) each, as they are.
    auto out = merged(p, {1.0f, 0.0f}, {{1.0f, 0.0f}, {0.0f, 2.0f}});
    const double h = std::sqrt(0.5);
    EXPECT_NEAR(out[0], h, 1e-6);
    EXPECT_NEAR(out[1], 2 * h, 1e-6);
    // Row by row: row 0 at right angles as above; row 1 colinear: the linear mix.
    p.flatten = false;
    out = merged(p, {1, 0, 1, 1}, {{1, 0, 1, 1}, {0, 2, 2, 2}}, 2);
    EXPECT_NEAR(out[0], h, 1e-6);
    EXPECT_NEAR(out[1], 2 * h, 1e-6);
    EXPECT_NEAR(out[2], 1.5, 1e-6);
    EXPECT_NEAR(out[3], 1.5, 1e-6);
    // With a base, of the task vectors; weights 1 and 3 give t = 3/4 on colinear ones.
    p.has_base = true;
    p.flatten = true;
    p.weights = {1.0, 3.0};
    out = merged(p, {1.0f, 1.0f}, {{2.0f, 2.0f}, {3.0f, 3.0f}});
    EXPECT_NEAR(out[0], 1.0 + 0.25 * 1.0 + 0.75 * 2.0, 1e-6);
}

TEST(MergekitKernels, KarcherIsTheMeanDirectionAtTheMeanNorm) {
    MergeParams p;
    p.method = Method::karcher;
    // (2, 0) and (0, 4): the geodesic mean of their directions is (1, 1)/√2, at norm 3; the
    // first step is zero, so the iteration stops there.
    auto out = merged(p, {2.0f, 0.0f}, {{2.0f, 0.0f}, {0.0f, 4.0f}});
    EXPECT_NEAR(out[0], 3.0 / std::sqrt(2.0), 1e-6);
    EXPECT_NEAR(out[1], 3.0 / std::sqrt(2.0), 1e-6);
    // A zero input counts in the mean norm but not in the direction: (0, 0), (3, 0), (0, 3)
    // gives (1, 1)/√2 at norm (0 + 3 + 3)/3 = 2.
    out = merged(p, {0.0f, 0.0f}, {{0.0f, 0.0f}, {3.0f, 0.0f}, {0.0f, 3.0f}});
    EXPECT_NEAR(out[0], 2.0 / std::sqrt(2.0), 1e-6);
    EXPECT_NEAR(out[1], 2.0 / std::sqrt(2.0), 1e-6);
}
