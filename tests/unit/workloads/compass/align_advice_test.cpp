// advise align's maths (methods.md §1.1–§1.4): CKA from prepared Gram matrices equals
// linear_cka; pairs ranked by score, or by ease without paradigms; mismatched rows refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compass/align_advice.h"

using namespace compatbench;
using namespace compatbench::compass;

namespace {
MatF features(int n, int d, unsigned seed, float signal_weight, const MatF& signal) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g;
    MatF x(n, d);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j) x(i, j) = g(rng) + signal_weight * signal(i, j % signal.cols());
    return x;
}
}  // namespace

TEST(AlignAdvice, CkaAndEaseAsTheStudysFunctions) {
    const MatF signal = features(60, 4, 9, 0.0f, MatF::Zero(60, 4));
    const MatF a = features(60, 12, 1, 2.0f, signal), b = features(60, 7, 2, 1.0f, signal);
    const auto pa = prepare("a", "p", a, 5), pb = prepare("b", "q", b, 5);
    EXPECT_NEAR(cka_of(pa, pb), similarity::linear_cka(a.cast<double>(), b.cast<double>()), 1e-12);
    const auto pairs = advise_alignment({pa}, {pb}, 5, CeilingStat{});
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_DOUBLE_EQ(pairs[0].ease, similarity::mutual_knn(similarity::knn_lists(a, 5),
                                                           similarity::knn_lists(b, 5), 5));
    EXPECT_DOUBLE_EQ(pairs[0].ceiling, pairs[0].ease);  // the only pair of its paradigms
    EXPECT_DOUBLE_EQ(pairs[0].score, pairs[0].ease * pairs[0].ease);
}

TEST(AlignAdvice, RankedByScoreOrByEaseWithoutParadigms) {
    const MatF signal = features(50, 4, 3, 0.0f, MatF::Zero(50, 4));
    std::vector<PreparedModel> vision, text, unlabelled;
    for (int i = 0; i < 3; ++i) {
        vision.push_back(prepare("v" + std::to_string(i), i == 2 ? "p2" : "p",
                                 features(50, 8, 10 + i, 0.5f * static_cast<float>(i), signal), 5));
        text.push_back(prepare("t" + std::to_string(i), "q",
                               features(50, 6, 20 + i, 0.7f * static_cast<float>(i), signal), 5));
    }
    const auto pairs = advise_alignment(vision, text, 5, CeilingStat{});
    ASSERT_EQ(pairs.size(), 9u);
    for (std::size_t i = 1; i < pairs.size(); ++i) EXPECT_GE(pairs[i - 1].score, pairs[i].score);
    for (const auto& p : pairs) EXPECT_FALSE(p.region.empty());
    auto bare = text;
    bare[1].paradigm.clear();
    const auto by_ease = advise_alignment(vision, bare, 5, CeilingStat{});
    for (std::size_t i = 1; i < by_ease.size(); ++i)
        EXPECT_GE(by_ease[i - 1].ease, by_ease[i].ease);
    EXPECT_TRUE(std::isnan(by_ease[0].ceiling));
    EXPECT_TRUE(by_ease[0].region.empty());
    const auto shorter = prepare("s", "q", features(40, 6, 5, 0.0f, signal.topRows(40)), 5);
    EXPECT_THROW(advise_alignment(vision, {shorter}, 5, CeilingStat{}), std::invalid_argument);
}
