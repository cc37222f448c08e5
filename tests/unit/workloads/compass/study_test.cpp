// methods.md §1.2, §1.3, §6: ceiling, regions, selection, budget search, ridge baseline.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "compass/compass.h"
#include "compass/screening.h"
#include "stats/summary.h"

using namespace compatbench::compass;

namespace {
// (GCC 12 warns falsely about "literal" + std::to_string(...).)
std::string label(const char* prefix, int i) {
    std::string s = prefix;
    s += std::to_string(i);
    return s;
}
}  // namespace

TEST(Ceiling, StatisticsPerParadigmPair) {
    const std::vector<GridPair> grid = {{"clip", "clip", 0.2}, {"clip", "clip", 0.5},
                                        {"clip", "clip", 0.3}, {"sup", "clip", 0.1},
                                        {"sup", "clip", NAN},  {"clip", "clip", 0.4}};
    auto c = ceilings(grid, CeilingStat::parse("max"));
    EXPECT_DOUBLE_EQ((c[{"clip", "clip"}]), 0.5);
    EXPECT_DOUBLE_EQ((c[{"sup", "clip"}]), 0.1);
    c = ceilings(grid, CeilingStat::parse("mean"));
    EXPECT_DOUBLE_EQ((c[{"clip", "clip"}]), 0.35);
    c = ceilings(grid, CeilingStat::parse("quantile:0.5"));  // numpy: 0.35
    EXPECT_DOUBLE_EQ((c[{"clip", "clip"}]), 0.35);
    c = ceilings(grid, CeilingStat::parse("quantile:0.9"));  // numpy.quantile: 0.47
    EXPECT_NEAR((c[{"clip", "clip"}]), 0.47, 1e-15);
    EXPECT_THROW(CeilingStat::parse("quantile:1.5"), std::invalid_argument);
    EXPECT_THROW(CeilingStat::parse("median"), std::invalid_argument);
}

TEST(ParadigmTable, MeanAndMaxOverTextParadigmsBesideTheMergingCeiling) {
    const std::vector<GridPair> align = {
        {"A", "x", 0.2}, {"A", "x", 0.4}, {"A", "y", 0.1}, {"B", "x", 0.3}};
    const std::vector<GridPair> merge = {{"A", "A", 0.5}, {"C", "C", 0.6}, {"C", "C", 0.2}};
    const ParadigmTable t = paradigm_table(align, merge, CeilingStat::parse("max"));
    ASSERT_EQ(t.paradigm, (std::vector<std::string>{"A", "B", "C"}));
    // A: ceilings (A,x) = 0.4 and (A,y) = 0.1; B: (B,x) = 0.3; C is only in the merge grid.
    EXPECT_DOUBLE_EQ(t.alignment_mean[0], 0.25);
    EXPECT_DOUBLE_EQ(t.alignment_max[0], 0.4);
    EXPECT_DOUBLE_EQ(t.alignment_mean[1], 0.3);
    EXPECT_TRUE(std::isnan(t.alignment_mean[2]) && std::isnan(t.alignment_max[2]));
    EXPECT_DOUBLE_EQ(t.merging[0], 0.5);
    EXPECT_TRUE(std::isnan(t.merging[1]));
    EXPECT_DOUBLE_EQ(t.merging[2], 0.6);
    EXPECT_EQ(t.alignment_rank, (std::vector<std::int64_t>{2, 1, 0}));
    EXPECT_EQ(t.merging_rank, (std::vector<std::int64_t>{2, 0, 1}));
}

TEST(Regions, ValuesEqualToTheMedianCountAsHigh) {
    // Odd count: medians are members (ease 0.3, ceiling 0.5).
    const std::vector<double> ease = {0.1, 0.3, 0.5, 0.3, 0.2};
    const std::vector<double> ceiling = {0.5, 0.5, 0.2, 0.1, 0.9};
    EXPECT_EQ(regions(ease, ceiling),
              (std::vector<std::string>{"budget_limited", "act_now", "ceiling_limited",
                                        "ceiling_limited", "budget_limited"}));
    // Even count: the median is the mean of the middle two (0.25); 0.25 itself is high.
    const std::vector<double> e2 = {0.1, 0.2, 0.3, 0.4, 0.25};
    const std::vector<double> c2 = {1, 1, 1, 1, 1};
    EXPECT_DOUBLE_EQ(compatbench::stats::median(e2), 0.25);
    EXPECT_EQ(regions(e2, c2)[4], "act_now");
    EXPECT_EQ(regions(e2, c2)[1], "budget_limited");
}

TEST(Selection, CoversEveryFamilyAndIsDeterministic) {
    std::vector<Candidate> cands;
    for (int v = 0; v < 19; ++v)
        for (int t = 0; t < 10; ++t)
            cands.push_back({std::to_string(v) + "+" + std::to_string(t), label("vf", v % 6),
                             label("tf", t % 7)});
    const auto pick = select_covering(cands, 72, 2026);
    ASSERT_EQ(pick.size(), 72u);
    std::set<std::string> fa, fb;
    std::set<std::pair<std::string, std::string>> combos;
    for (auto i : pick) {
        fa.insert(cands[i].family_a);
        fb.insert(cands[i].family_b);
        combos.insert({cands[i].family_a, cands[i].family_b});
    }
    EXPECT_EQ(fa.size(), 6u);
    EXPECT_EQ(fb.size(), 7u);
    EXPECT_EQ(combos.size(), 42u);  // 72 >= 42: every combination appears
    EXPECT_TRUE(std::is_sorted(pick.begin(), pick.end()));
    EXPECT_EQ(select_covering(cands, 72, 2026), pick);
    EXPECT_NE(select_covering(cands, 72, 7), pick);
    EXPECT_EQ(select_covering(cands, 500, 1).size(), cands.size());
    // Too few to cover every combination: still every family.
    const auto few = select_covering(cands, 7, 3);
    std::set<std::string> fa7, fb7;
    for (auto i : few) fa7.insert(cands[i].family_a), fb7.insert(cands[i].family_b);
    EXPECT_EQ(fa7.size(), 6u);
    EXPECT_EQ(fb7.size(), 7u);
}

TEST(BudgetSearch, PositionAndBestSoFar) {
    const std::vector<double> score = {0.2, 0.9, 0.5, NAN, 0.5};
    const std::vector<double> target = {10, 30, 50, 99, 20};
    const auto order = compatbench::stats::order_descending(score);
    EXPECT_EQ(order, (std::vector<std::size_t>{1, 2, 4, 0, 3}));
    EXPECT_EQ(best_position(order, target), 5u);  // the NaN-score pair is best: found last
    EXPECT_EQ(best_so_far(order, target), (std::vector<double>{30, 50, 50, 50, 99}));
    const std::vector<double> t2 = {10, 30, 50, 1, 50};
    EXPECT_EQ(best_position(order, t2), 2u);  // a tie: the first one reached counts
}

TEST(Ridge, RecoversAnAdditiveModelAndShrinks) {
    std::vector<std::vector<std::string>> f;
    std::vector<double> y;
    const double ea[] = {1, 2, 4}, eb[] = {0, 10};
    for (int r = 0; r < 3; ++r)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 2; ++b) {
                f.push_back({label("a", a), label("b", b)});
                y.push_back(5 + ea[a] + eb[b]);
            }
    std::vector<std::size_t> all(f.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    const auto p = ridge_predict(f, y, all, all, 1e-9);
    for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(p[i], y[i], 1e-6);
    // Heavy shrinkage predicts the mean.
    const auto q = ridge_predict(f, y, all, all, 1e9);
    double mean = 0;
    for (double v : y) mean += v / static_cast<double>(y.size());
    for (double v : q) EXPECT_NEAR(v, mean, 1e-6);
    // Out-of-fold predictions exist for every row; an unseen level predicts from the rest.
    const auto k = kfold_predictions(f, y, 3, 1e-6, 1);
    for (double v : k) EXPECT_FALSE(std::isnan(v));
    std::vector<std::vector<std::string>> groups;
    for (const auto& row : f) groups.push_back({row[0]});
    const auto held = leave_group_out(f, y, groups, 1e-6);
    ASSERT_EQ(held.size(), 3u);
    EXPECT_EQ(held[0].label, "a0");
    EXPECT_EQ(held[0].rows.size(), 6u);
    // a0 unseen: its own effect is unknown, the b effect is still learnt (10 apart).
    EXPECT_NEAR(held[0].predicted[1] - held[0].predicted[0], 10.0, 1e-4);
}

TEST(Screening, AurocThresholdAndConfusion) {
    const std::vector<double> score = {0.1, 0.4, 0.35, 0.8, 0.4};
    const std::vector<std::uint8_t> destructive = {0, 0, 1, 1, 1};
    // Pairs (pos, neg): 0.35>0.1, 0.35<0.4, 0.8>both, 0.4>0.1, 0.4=0.4 -> (1+0+2+1+0.5)/6.
    EXPECT_DOUBLE_EQ(auroc(score, destructive), 4.5 / 6);
    const auto best = best_threshold(score, destructive);
    // Cut at 0.225 (between 0.1 and 0.35): TPR 1, FPR 0.5 -> J 0.5; at 0.6: TPR 1/3, FPR 0.
    EXPECT_DOUBLE_EQ(best.threshold, 0.225);
    EXPECT_DOUBLE_EQ(best.youden, 0.5);
    EXPECT_EQ(best.counts.tp, 3);
    EXPECT_EQ(best.counts.fp, 1);
    EXPECT_EQ(best.counts.tn, 1);
    EXPECT_EQ(best.counts.fn, 0);
    const auto c = confusion(score, destructive, 0.5);
    EXPECT_EQ(c.tp + c.fn, 3);
    EXPECT_EQ(c.tp, 1);
    EXPECT_TRUE(std::isnan(auroc(score, std::vector<std::uint8_t>(5, 1))));
}
