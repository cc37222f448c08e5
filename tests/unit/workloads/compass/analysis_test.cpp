// methods.md §1.2, §1.3, §6: the COMPASS study's tables from plain columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "compass/analysis.h"

using namespace compatbench::compass;

namespace {

// Four pairs over two paradigm pairs; ceiling(max): P-Q 0.4, P-R 0.3.
StudyInput four_pairs() {
    StudyInput in;
    in.grid.paradigm_a = {"P", "P", "P", "P"};
    in.grid.paradigm_b = {"Q", "Q", "R", "R"};
    in.grid.ease = {0.2, 0.4, 0.1, 0.3};
    in.grid.cka = {0.5, 0.6, 0.7, 0.8};
    in.grid.ease_at_k = {{5, {0.1, 0.2, 0.05, 0.15}}};
    in.grid.held_out = {{"family", {"f1", "f2", "f1", "f2"}}};
    in.grid.metadata = {{"f1", "Q"}, {"f2", "Q"}, {"f1", "R"}, {"f2", "R"}};
    in.evaluated = {0, 1, 2, 3};
    in.targets["linear"] = {0.8, 1.6, 0.3, 0.9};  // 10 × score
    in.targets["best"] = {1, 4, 2, 3};
    in.folds = 2;
    return in;
}

const CorrelationRow& find(const std::vector<CorrelationRow>& rows, const std::string& p,
                           const std::string& t) {
    for (const auto& r : rows)
        if (r.predictor == p && r.target == t) return r;
    throw std::runtime_error("no row " + p + " / " + t);
}

}  // namespace

TEST(CompassAnalysis, CeilingScoreAndRegions) {
    const StudyResult r = analyse(four_pairs());
    ASSERT_EQ(r.ceilings.size(), 2u);
    EXPECT_EQ(r.ceilings[0].paradigms, (ParadigmPair{"P", "Q"}));
    EXPECT_EQ(r.ceilings[0].pairs, 2);
    EXPECT_DOUBLE_EQ(r.ceilings[0].ceiling, 0.4);
    EXPECT_DOUBLE_EQ(r.ceilings[1].ceiling, 0.3);
    EXPECT_DOUBLE_EQ(r.evaluated.score[1], 0.4 * 0.4);
    EXPECT_DOUBLE_EQ(r.evaluated.score[2], 0.1 * 0.3);
    // Medians: ease 0.25, ceiling 0.35.
    EXPECT_EQ(r.regions, (std::vector<std::string>{"budget_limited", "act_now", "incompatible",
                                                   "ceiling_limited"}));
    EXPECT_EQ(r.grid.score, r.evaluated.score);
}

TEST(CompassAnalysis, CorrelationsSearchAndRegionStats) {
    const StudyResult r = analyse(four_pairs());
    EXPECT_EQ(r.correlations.size(), 4u * 2u);  // predictors × targets
    EXPECT_NEAR(find(r.correlations, "score", "linear").c.pearson.r, 1.0, 1e-12);
    EXPECT_EQ(find(r.correlations, "ease", "best").c.n, 4u);
    // By score: rows 1, 3, 0, 2; the best target (4) is the first tried.
    const auto search = std::find_if(
        r.budget_search.begin(), r.budget_search.end(),
        [](const SearchRow& s) { return s.predictor == "score" && s.target == "best"; });
    ASSERT_NE(search, r.budget_search.end());
    EXPECT_EQ(search->best_position, 1);
    EXPECT_EQ(search->curve, (std::vector<double>{4, 4, 4, 4}));
    ASSERT_EQ(r.region_stats.size(), 4u * 2u);  // regions × targets ("best" first, by name)
    EXPECT_EQ(r.region_stats[0].region, "act_now");
    EXPECT_EQ(r.region_stats[0].n, 1);
    EXPECT_DOUBLE_EQ(r.region_stats[0].mean, 4.0);
    EXPECT_TRUE(std::isnan(r.region_stats[0].sd));  // one value
    ASSERT_EQ(r.kruskal.size(), 2u);
    EXPECT_EQ(r.kruskal[0].second.groups, 4u);
}

TEST(CompassAnalysis, LeaveOneFamilyOutRecomputesTheCeiling) {
    const StudyResult r = analyse(four_pairs());
    // Folds f1 and f2, each × 4 predictors × 2 targets; each keeps two pairs (too few).
    ASSERT_EQ(r.lofo.size(), 2u * 4u * 2u);
    EXPECT_EQ(r.lofo.front().key, "f1");
    EXPECT_EQ(r.lofo.front().c.n, 2u);
    EXPECT_FALSE(r.lofo.front().c.reason().empty());
    ASSERT_EQ(r.lofo_range.size(), 4u * 2u);
    EXPECT_EQ(r.lofo_range[0].folds, 2);
    EXPECT_TRUE(std::isnan(r.lofo_range[0].pearson_min));
}

TEST(CompassAnalysis, KSensitivityMetadataAndBudgets) {
    StudyInput in = four_pairs();
    in.budgets = Budgets{{0, 1, 2, 3, 0, 1, 2, 3},
                         {1, 1, 1, 1, 2, 2, 2, 2},
                         {{"linear", {0.8, 1.6, 0.3, 0.9, 0.8, 1.6, 0.3, 0.9}}}};
    const StudyResult r = analyse(in);
    ASSERT_EQ(r.k_sensitivity.size(), 3u * 2u);  // score, ease, ceiling × targets
    EXPECT_EQ(r.k_sensitivity[0].key, 5);
    // Ease halved everywhere: ceilings halve too, the score is a quarter, r unchanged.
    const auto k5 = std::find_if(
        r.k_sensitivity.begin(), r.k_sensitivity.end(),
        [](const CountedCorrelation& k) { return k.predictor == "score" && k.target == "linear"; });
    ASSERT_NE(k5, r.k_sensitivity.end());
    EXPECT_NEAR(k5->c.pearson.r, 1.0, 1e-12);
    ASSERT_EQ(r.metadata_regressor.size(), 2u * 2u);  // kfold, lofo × targets
    EXPECT_EQ(r.metadata_regressor[0].scheme, "kfold");
    EXPECT_EQ(r.metadata_regressor[1].scheme, "lofo");
    ASSERT_EQ(r.budgets.size(), 2u * 3u);  // epochs × (ceiling, score, ease)
    EXPECT_EQ(r.budgets[0].key, 1);
    EXPECT_EQ(r.budgets[3].key, 2);
    EXPECT_NEAR(r.budgets[1].c.pearson.r, 1.0, 1e-12);  // score vs linear at 1 epoch
}

TEST(CompassAnalysis, ExtraPredictorsJoinTheTables) {
    StudyInput in = four_pairs();
    in.extra_predictors = {{"screen", {4, 3, 2, 1}}};
    const StudyResult r = analyse(in);
    EXPECT_EQ(r.correlations.size(), 5u * 2u);
    EXPECT_NEAR(find(r.correlations, "screen", "best").c.spearman.r, -0.4, 1e-12);
    EXPECT_THROW(r.evaluated.predictor("screen"), std::invalid_argument);
}

TEST(CompassAnalysis, CeilingReadThreeWays) {
    // Single-pair cells: per pair each pair is its own ceiling, left out there is nothing.
    const std::vector<GridPair> g = {
        {"P", "Q", 0.2}, {"P", "R", 0.5}, {"S", "Q", 0.6}, {"S", "R", 0.1}};
    const CeilingStat max;
    EXPECT_EQ(ceiling_per_row(g, max, CeilingVariant::pair),
              (std::vector<double>{0.2, 0.5, 0.6, 0.1}));
    // Per paradigm: min(max over P's pairs 0.5 / S's 0.6, max over Q's 0.6 / R's 0.5).
    EXPECT_EQ(ceiling_per_row(g, max, CeilingVariant::paradigm),
              (std::vector<double>{0.5, 0.5, 0.6, 0.5}));
    for (double c : ceiling_per_row(g, max, CeilingVariant::leave_pair_out))
        EXPECT_TRUE(std::isnan(c));
    EXPECT_THROW(ceiling_variant("cell"), std::invalid_argument);

    // In the study: ceiling_<v> and score_<v> join the predictors; cells {0.2, 0.4} and
    // {0.1, 0.3} left one out give 0.4, 0.2, 0.3, 0.1.
    StudyInput in = four_pairs();
    in.ceiling_variants = {CeilingVariant::paradigm, CeilingVariant::leave_pair_out};
    const StudyResult r = analyse(in);
    ASSERT_EQ(r.evaluated_variants.size(), 4u);
    EXPECT_EQ(r.evaluated_variants[2].first, "ceiling_leave_pair_out");
    EXPECT_EQ(r.evaluated_variants[2].second, (std::vector<double>{0.4, 0.2, 0.3, 0.1}));
    EXPECT_EQ(r.evaluated_variants[3].first, "score_leave_pair_out");
    EXPECT_DOUBLE_EQ(r.evaluated_variants[3].second[1], 0.4 * 0.2);
    EXPECT_EQ(r.correlations.size(), 8u * 2u);
    EXPECT_NEAR(find(r.correlations, "ceiling_paradigm", "linear").c.pearson.r,
                find(r.correlations, "ceiling", "linear").c.pearson.r, 1e-12);
}

TEST(CompassAnalysis, EaseAboveItsNullAndWithinGroups) {
    StudyInput in = four_pairs();
    in.grid.ease_excess = {0.1, 0.3, 0.0, 0.2};  // the study's ceiling over these: 0.3, 0.2
    in.grid.within = {"b1", "b1", "b2", "b2"};
    const StudyResult r = analyse(in);
    ASSERT_EQ(r.evaluated_variants.size(), 2u);
    EXPECT_EQ(r.evaluated_variants[0].first, "ease_excess");
    EXPECT_EQ(r.evaluated_variants[1].first, "score_excess");
    const auto& s = r.evaluated_variants[1].second;
    EXPECT_DOUBLE_EQ(s[0], 0.1 * 0.3);
    EXPECT_DOUBLE_EQ(s[1], 0.3 * 0.3);
    EXPECT_DOUBLE_EQ(s[3], 0.2 * 0.2);
    // Within: 2 groups × 6 predictors × 2 targets, two pairs each.
    ASSERT_EQ(r.within.size(), 2u * 6u * 2u);
    EXPECT_EQ(r.within.front().key, "b1");
    EXPECT_EQ(r.within.back().key, "b2");
    for (const auto& w : r.within) EXPECT_EQ(w.c.n, 2u);
}
