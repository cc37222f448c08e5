// Arithmetic in the merge's dtype (in_dtype.h), on cases worked by hand where bfloat16 or
// float16 rounding decides a coordinate that exact arithmetic decides the other way.
// tests/mergekit compares the same code with torch itself.
#include <gtest/gtest.h>

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
