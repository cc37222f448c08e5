// RAM, RAM+ and Arcee Fusion (ram_fusion.h) on cases worked by hand; tests/mergekit compares
// them with numpy and with torch on mergekit's configurations.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "merging/ram_fusion.h"
#include "workloads/merging/merged.h"

using namespace compatbench::merging;
using compatbench::merging::testing::merged;

TEST(RamFusion, RamKeepsLoneMovesAndAveragesSharedOnes) {
    // τ_a = (1, 1, 0, 1e-6), τ_b = (0, 3, 0, 0), ε = 1e-5: coordinate 0 moved by a alone,
    // 1 by both ((1 + 3) / 2), 2 by none, 3 below ε.
    MergeParams p;
    p.method = Method::ram;
    const std::vector<float> base(4, 0.0f);
    const auto out = merged(p, base, {{1.0f, 1.0f, 0.0f, 1e-6f}, {0.0f, 3.0f, 0.0f, 0.0f}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 2.0f, 0.0f, 0.0f}));
}

TEST(RamFusion, RamPlusScalesEachModelsLoneMovesByItsLambda) {
    // a moves coordinates 0..9 alone and 10 with b: ρ_a = 1/10, λ_a = 1 + 0.1 · 0.1 = 1.01.
    // b moves only the shared one: ρ_b = 1 / max(0, ε), clamped at α = 0.2 (λ_b = 1.02,
    // unused). Coordinate 10: (1 + 3) / 2; 11: nobody.
    MergeParams p;
    p.method = Method::ramplus_tl;
    std::vector<float> a(12, 1.0f), b(12, 0.0f);
    a[11] = 0.0f;
    b[10] = 3.0f;
    const auto out = merged(p, std::vector<float>(12, 0.0f), {a, b});
    for (int j = 0; j < 10; ++j) EXPECT_FLOAT_EQ(out[j], 1.01f) << j;
    EXPECT_FLOAT_EQ(out[10], 2.0f);
    EXPECT_EQ(out[11], 0.0f);
}

TEST(RamFusion, ArceeFusionKeepsWhatPassesMedianPlusOneAndAHalfIqr) {
    // One row: the KL term is one number, so importance ranks as |τ|. Sorted |τ| = 0.1, 0.2,
    // 0.3, 0.4, 10 (n − 1 = 4): median at 2 (0.3), q1 at 1 (0.2), q3 at 3 (0.4); the cut
    // 0.3 + 1.5 · 0.2 = 0.6 keeps 10 only.
    MergeParams p;
    p.method = Method::arcee_fusion;
    const std::vector<float> base(5, 0.0f), model = {0.1f, -0.2f, 0.3f, 0.4f, 10.0f};
    EXPECT_EQ(merged(p, base, {model}), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f, 10.0f}));
    EXPECT_THROW(merged(p, base, {model, model}), std::invalid_argument);
}

TEST(RamFusion, ArceeFusionTakesANanImportanceAsTorchSortsIt) {
    // A NaN in a row makes its softmax, its KL and so every importance of the row NaN:
    // sorted last, the quantiles NaN, no coordinate passes the cut, θ = θ0 throughout.
    MergeParams p;
    p.method = Method::arcee_fusion;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> base(5, 0.5f);
    EXPECT_EQ(merged(p, base, {{0.1f, nan, 0.3f, 0.4f, 10.0f}}), base);
}
