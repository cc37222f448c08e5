// methods.md §3: the PRISM study's operator, K, κ, ablation and drift tables.
#include <gtest/gtest.h>

#include <cmath>

#include "prism/analysis.h"

using namespace compatbench::prism;

namespace {

void add(Merges& m, const std::string& backbone, const std::string& method, double step, double k,
         double coef, double kappa, double merged) {
    m.backbone.push_back(backbone);
    m.method.push_back(method);
    m.members.push_back("t1+t2");
    m.step.push_back(step);
    m.k.push_back(k);
    m.coef.push_back(coef);
    m.kappa.push_back(kappa);
    m.merged_mean.push_back(merged);
    m.base_mean.push_back(0.5);
    m.retention.push_back(merged / 0.8);
    m.destructive.push_back(merged < 0.5 ? 1.0 : 0.0);
    m.update_pct.push_back(100);
    m.keep_fraction.push_back(1);
    m.lambda_mean.push_back(NAN);
    m.interference.push_back(0.1 * k);
    m.screen_score.push_back(2 * std::sqrt(step));
}

Merges two_backbones() {
    Merges m;
    for (const char* bb : {"b1", "b2"}) {
        const double shift = bb[1] == '1' ? 0.0 : 0.1;
        add(m, bb, "prism", 1, 2, 1.0, 1.0, 0.7 + shift);
        add(m, bb, "task_arithmetic", 1, 2, 1.0, 0.0, 0.6 + shift);
        add(m, bb, "prism", 1, 2, 1.0, 2.0, 0.65 + shift);  // κ sweep only
        add(m, bb, "task_arithmetic", 1, 4, 0.5, 0.0, 0.4 + shift);
    }
    return m;
}

}  // namespace

TEST(PrismAnalysis, OperatorsInMethodOrder) {
    const PrismResult r = analyse(two_backbones(), 1.0, 1.0);
    ASSERT_EQ(r.operators.size(), 3u);  // TA at 0.5 and 1.0, then PRISM at 1.0
    EXPECT_EQ(r.operators[0].method, "task_arithmetic");
    EXPECT_DOUBLE_EQ(r.operators[0].coef, 0.5);
    EXPECT_EQ(r.operators[0].n, 2);
    EXPECT_DOUBLE_EQ(r.operators[0].merged_mean, 0.45);
    EXPECT_DOUBLE_EQ(r.operators[0].destructive, 0.5);
    EXPECT_EQ(r.operators[2].method, "prism");
    EXPECT_NEAR(r.operators[2].merged_sd, std::sqrt(0.005), 1e-12);
}

TEST(PrismAnalysis, ByKKappaAndAblation) {
    const PrismResult r = analyse(two_backbones(), 1.0, 1.0);
    ASSERT_EQ(r.by_k.size(), 2u);  // TA and PRISM at K = 2, coefficient 1
    EXPECT_EQ(r.by_k[0].k, 2);
    EXPECT_DOUBLE_EQ(r.by_k[0].interference, 0.2);
    ASSERT_EQ(r.kappa.size(), 2u);  // PRISM at κ = 1 and κ = 2
    EXPECT_DOUBLE_EQ(r.kappa[1].kappa, 2.0);
    EXPECT_TRUE(std::isnan(r.kappa[1].lambda_mean));
    ASSERT_EQ(r.ablation.size(), 1u);  // only PRISM − TA has both sides
    EXPECT_EQ(r.ablation[0].a, "prism");
    EXPECT_EQ(r.ablation[0].n, 2);
    EXPECT_NEAR(r.ablation[0].mean_diff, 0.1, 1e-12);
    EXPECT_EQ(r.ablation[0].sign.wins, 2);
    EXPECT_TRUE(r.notes.empty());
    EXPECT_EQ(analyse(two_backbones(), 3.0, 1.0).notes.size(), 1u);  // no merge at coef 3
}

TEST(PrismAnalysis, DriftExponentAlongCheckpoints) {
    Merges d;
    for (double step : {16.0, 1.0, 4.0}) add(d, "b1", "prism", step, 2, 1.0, 1.0, 0.4);
    for (double step : {1.0, 9.0}) add(d, "b2", "prism", step, 2, 1.0, 1.0, 0.6);
    std::vector<std::string> notes;
    const auto rows = drift(d, notes);
    ASSERT_EQ(rows.size(), 3u);  // b1, b2, all
    EXPECT_NEAR(rows[0].fit.exponent, 0.5, 1e-12);
    EXPECT_NEAR(rows[0].fit.prefactor, 2.0, 1e-12);
    EXPECT_EQ(rows[0].first_step, 1);
    EXPECT_EQ(rows[0].last_step, 16);
    EXPECT_DOUBLE_EQ(rows[0].last_score, 8.0);
    EXPECT_EQ(rows[0].last_destructive, 1);
    EXPECT_EQ(rows[2].backbone, "all");
    EXPECT_EQ(rows[2].fit.n, 5u);
    EXPECT_TRUE(notes.empty());
}

TEST(PrismAnalysis, RecoveryPairsPrismWithTaskArithmeticOnTheSameMembers) {
    // Two member sets of one backbone at c = 1: task arithmetic destroys the first (0.4 <
    // 0.5), PRISM recovers it (0.55); both keep the second. The screen flags the first only.
    Merges m;
    add(m, "b", "task_arithmetic", 1, 2, 1.0, 0.0, 0.4);
    add(m, "b", "prism", 1, 2, 1.0, 1.0, 0.55);
    add(m, "b", "task_arithmetic", 1, 2, 1.0, 0.0, 0.7);
    add(m, "b", "prism", 1, 2, 1.0, 1.0, 0.6);
    m.members = {"x,y", "x,y", "x,z", "x,z"};
    m.screen_score = {3e-3, 3e-3, 1e-3, 1e-3};
    const auto rows = recovery(m, 1.9e-3);
    ASSERT_EQ(rows.size(), 2u);  // b, then all
    EXPECT_EQ(rows[1].backbone, "all");
    const RecoveryRow& r = rows[0];
    EXPECT_EQ(r.n, 2);
    EXPECT_EQ(r.ta_destroyed, 1);
    EXPECT_NEAR(r.diff_destroyed, 0.15, 1e-12);
    EXPECT_NEAR(r.diff_all, 0.025, 1e-12);
    EXPECT_EQ(r.sign.wins, 1);
    EXPECT_EQ(r.flagged, 1);
    EXPECT_NEAR(r.always_ta, 0.55, 1e-12);
    EXPECT_NEAR(r.always_prism, 0.575, 1e-12);
    EXPECT_NEAR(r.screened, 0.625, 1e-12);  // PRISM where flagged, TA elsewhere
    EXPECT_EQ(r.screened_destructive, 0);
    // Ablations pair on the members too: two sets at one K give two pairs, not one.
    const auto a = analyse(m, 1.0, 1.0).ablation;
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a[0].n, 2);
}
