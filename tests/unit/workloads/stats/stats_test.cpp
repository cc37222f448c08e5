// Reference values of methods.md §5 (scipy 1.10.1), to 1e-12 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/correlation.h"
#include "stats/fit.h"
#include "stats/kruskal.h"
#include "stats/ranks.h"

namespace cs = compatbench::stats;

namespace {
void expect_rel(double got, double want, const char* what) {
    EXPECT_LE(std::fabs(got - want), 1e-12 * std::fabs(want))
        << what << ": got " << got << ", want " << want;
}
}  // namespace

struct PearsonCase {
    const char* name;
    std::vector<double> x, y;
    double r, p, ci_low, ci_high;
};

TEST(Pearson, ReferenceValues) {
    const PearsonCase cases[] = {
        {"PE1",
         {1, 2, 3, 4, 5, 6, 7, 8},
         {2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1},
         0.999419474795813,
         4.888933612558556e-10,
         0.9966537550674996,
         0.9998994024260276},
        {"PE2",
         {0.5, 1.7, 2.2, 3.1, 3.9, 4.4, 5.8, 6.0, 7.3, 8.1},
         {1.2, 0.8, 2.9, 2.1, 4.4, 3.0, 3.9, 6.2, 5.1, 5.5},
         0.8774031899786805,
         0.0008502137065297242,
         0.5536123515079058,
         0.9707513672395893},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const auto r = cs::pearson(c.x, c.y);
        ASSERT_TRUE(r.ok()) << r.reason;
        expect_rel(r.r, c.r, "r");
        expect_rel(r.p, c.p, "p");
        expect_rel(r.ci_low, c.ci_low, "ci_low");
        expect_rel(r.ci_high, c.ci_high, "ci_high");
    }
}

TEST(Spearman, SP1WithTies) {
    const std::vector<double> x = {1, 2, 2, 3, 4, 5, 5, 5, 6, 7};
    const std::vector<double> y = {2, 1, 3, 3, 5, 4, 6, 6, 8, 7};
    const auto r = cs::spearman(x, y);
    ASSERT_TRUE(r.ok()) << r.reason;
    expect_rel(r.r, 0.9257365248800182, "rho");
    // n <= 10: the exact permutation p over all 10! orderings (scipy.stats.permutation_test;
    // spearmanr's Student-t p is 0.00012157407536297871).
    expect_rel(r.p, 0.00029761904761904765, "p");
    EXPECT_NEAR(cs::student_t_p(r.r, 10), 0.00012157407536297871, 1e-15);
}

TEST(Spearman, SP2Negative) {
    const std::vector<double> x = {10, 20, 30, 40, 50, 60};
    const std::vector<double> y = {6, 5, 4, 3, 1, 2};
    const auto r = cs::spearman(x, y);
    ASSERT_TRUE(r.ok()) << r.reason;
    expect_rel(r.r, -0.942857142857143, "rho");
    // Exact over the 6! orderings (12 of 720 at least as extreme); Student t gave 0.0048.
    expect_rel(r.p, 0.016666666666666666, "p");
}

TEST(Kruskal, KW1) {
    const auto r = cs::kruskal_wallis(
        {{2.9, 3.0, 2.5, 2.6, 3.2}, {3.8, 2.7, 4.0, 2.4}, {2.8, 3.4, 3.7, 2.2, 2.0}});
    ASSERT_TRUE(r.ok()) << r.reason;
    expect_rel(r.h, 0.7714285714285722, "H");
    expect_rel(r.p, 0.6799647735788936, "p");
    EXPECT_EQ(r.n, 14u);
    EXPECT_EQ(r.groups, 3u);
}

TEST(Kruskal, KW2Ties) {
    const auto r = cs::kruskal_wallis({{1, 2, 2, 3, 3, 3}, {3, 4, 4, 5, 6}, {5, 5, 6, 7, 7, 8, 9}});
    ASSERT_TRUE(r.ok()) << r.reason;
    expect_rel(r.h, 13.350630914826496, "H");
    expect_rel(r.p, 0.0012616745184813043, "p");
}

TEST(Kruskal, KW3HeavyTies) {
    const auto r = cs::kruskal_wallis({{1, 1, 1}, {2, 2, 2}, {2, 2}});
    ASSERT_TRUE(r.ok()) << r.reason;
    expect_rel(r.h, 7.0, "H");
    expect_rel(r.p, 0.0301973834223185, "p");
}

TEST(Ranks, AverageTies) {
    const std::vector<double> v = {3, 1, 3, 2, 3};
    const auto r = cs::average_ranks(v);
    EXPECT_EQ(r, (std::vector<double>{4, 1, 4, 2, 4}));
    EXPECT_DOUBLE_EQ(cs::tie_term(v), 24.0);  // one tie of 3: 27 - 3
}

TEST(Degenerate, NaNWithReasonNeverThrows) {
    const std::vector<double> two = {1, 2};
    const std::vector<double> constant = {1, 1, 1, 1};
    const std::vector<double> ramp = {1, 2, 3, 4};
    const std::vector<double> with_nan = {1, NAN, 3, 4};

    auto r = cs::pearson(two, two);
    EXPECT_TRUE(std::isnan(r.r) && std::isnan(r.p));
    EXPECT_NE(r.reason.find("fewer than 3"), std::string::npos) << r.reason;
    r = cs::pearson(constant, ramp);
    EXPECT_TRUE(std::isnan(r.r));
    EXPECT_NE(r.reason.find("constant"), std::string::npos) << r.reason;
    r = cs::spearman(ramp, constant);
    EXPECT_TRUE(std::isnan(r.r));
    EXPECT_NE(r.reason.find("constant"), std::string::npos) << r.reason;
    r = cs::pearson(with_nan, ramp);
    EXPECT_NE(r.reason.find("non-finite"), std::string::npos) << r.reason;
    r = cs::pearson(ramp, two);
    EXPECT_NE(r.reason.find("length mismatch"), std::string::npos) << r.reason;

    auto k = cs::kruskal_wallis({{1, 2, 3}});
    EXPECT_TRUE(std::isnan(k.h) && std::isnan(k.p));
    EXPECT_NE(k.reason.find("fewer than 2 non-empty"), std::string::npos) << k.reason;
    k = cs::kruskal_wallis({{1, 2, 3}, {}});
    EXPECT_NE(k.reason.find("fewer than 2 non-empty"), std::string::npos) << k.reason;
    k = cs::kruskal_wallis({{5, 5}, {5, 5, 5}});
    EXPECT_NE(k.reason.find("all values are equal"), std::string::npos) << k.reason;
    k = cs::kruskal_wallis({});
    EXPECT_FALSE(k.ok());
}

TEST(Degenerate, PerfectCorrelationHasZeroP) {
    const std::vector<double> x = {1, 2, 3, 4, 5};
    const std::vector<double> y = {2, 4, 6, 8, 10};
    const auto r = cs::pearson(x, y);
    ASSERT_TRUE(r.ok());
    EXPECT_DOUBLE_EQ(r.r, 1.0);
    EXPECT_EQ(r.p, 0.0);
    const auto s = cs::spearman(x, y);
    EXPECT_DOUBLE_EQ(s.r, 1.0);
    EXPECT_DOUBLE_EQ(s.p, 2.0 / 120.0);  // exact: 2 of the 5! orderings are as extreme
}

TEST(Kruskal, EmptyGroupsAreLeftOut) {
    const auto with_empty =
        cs::kruskal_wallis({{2.9, 3.0, 2.5, 2.6, 3.2}, {}, {3.8, 2.7, 4.0, 2.4}});
    const auto without = cs::kruskal_wallis({{2.9, 3.0, 2.5, 2.6, 3.2}, {3.8, 2.7, 4.0, 2.4}});
    ASSERT_TRUE(with_empty.ok());
    EXPECT_EQ(with_empty.groups, 2u);
    EXPECT_EQ(with_empty.h, without.h);
}

// Power-law fit on logs and the sign test (stats/fit.h).

TEST(Fit, PowerLawRecoversAnExactLaw) {
    const std::vector<double> x = {10, 20, 40, 80, 160, -1, 5};
    std::vector<double> y;
    for (double v : x) y.push_back(v > 0 ? 2.0 * std::pow(v, 0.5) : 3.0);
    y.back() = 0.0;  // skipped: y <= 0
    const auto f = compatbench::stats::power_law_fit(x, y);
    ASSERT_TRUE(f.ok()) << f.reason;
    EXPECT_EQ(f.n, 5u);
    EXPECT_NEAR(f.exponent, 0.5, 1e-12);
    EXPECT_NEAR(f.prefactor, 2.0, 1e-12);
    EXPECT_NEAR(f.r2, 1.0, 1e-12);
    // numpy.polyfit(log x, log y, 1) for x = 1..4, y = [1, 3, 2, 5]: slope 0.9701626656519935.
    const auto g = compatbench::stats::power_law_fit(std::vector<double>{1, 2, 3, 4},
                                                     std::vector<double>{1, 3, 2, 5});
    EXPECT_NEAR(g.exponent, 0.9701626656519935, 1e-12);
    EXPECT_FALSE(
        compatbench::stats::power_law_fit(std::vector<double>{2, 2}, std::vector<double>{1, 3})
            .ok());
    EXPECT_FALSE(
        compatbench::stats::power_law_fit(std::vector<double>{1}, std::vector<double>{1}).ok());
}

TEST(Fit, SignTestIsTheExactBinomial) {
    const auto all = compatbench::stats::sign_test(std::vector<double>(8, 0.1));
    EXPECT_EQ(all.wins, 8);
    EXPECT_DOUBLE_EQ(all.p, 2.0 / 256.0);
    // 7 wins, 2 losses, 1 tie: p = 2 * P(X <= 2), X ~ Bin(9, 1/2) = 2 * 46 / 512.
    const auto mixed =
        compatbench::stats::sign_test(std::vector<double>{1, 2, 3, 4, 5, 6, 7, -1, -2, 0});
    EXPECT_EQ(mixed.losses, 2);
    EXPECT_EQ(mixed.ties, 1);
    EXPECT_NEAR(mixed.p, 2.0 * 46.0 / 512.0, 1e-15);
    EXPECT_TRUE(std::isnan(compatbench::stats::sign_test(std::vector<double>{0, 0}).p));
}

// Kendall's tau-b against scipy.stats.kendalltau 1.10.1.
TEST(Kendall, MatchesScipy) {
    using compatbench::stats::kendall;
    const auto a = kendall(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{2, 1, 4, 3, 5});
    EXPECT_NEAR(a.r, 0.6, 1e-12);
    EXPECT_NEAR(a.p, 0.23333333333333334, 1e-12);
    const auto b =
        kendall(std::vector<double>{1, 2, 3, 4, 5, 6, 7}, std::vector<double>{3, 1, 2, 7, 5, 4, 6});
    EXPECT_NEAR(b.r, 0.4285714285714286, 1e-12);
    EXPECT_NEAR(b.p, 0.2388888888888889, 1e-12);
    const auto c = kendall(std::vector<double>{1, 2, 2, 3, 4, 5, 5, 5, 6, 7},
                           std::vector<double>{2, 1, 3, 3, 5, 4, 6, 6, 8, 7});
    EXPECT_NEAR(c.r, 0.8097533639902196, 1e-12);
    // Ties at n = 10: the exact permutation p (the normal approximation gave 0.00179).
    EXPECT_NEAR(c.p, 0.0006415343915343915, 1e-12);
    EXPECT_FALSE(kendall(std::vector<double>{1, 1, 1}, std::vector<double>{1, 2, 3}).ok());
}
