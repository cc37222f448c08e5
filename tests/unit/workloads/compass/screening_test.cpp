// The screening study of one score (workloads/compass/screening.h): over all merges, and
// pre-registered on every other group.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compass/screening.h"

using namespace compatbench::compass;

TEST(Screening, PreregisteredThresholdPredictsTheOtherGroups) {
    // Groups a and c (every other one in name order) fit the threshold: negatives 1, 2, 1.5
    // and positives 8, 9, 7, so every cut between 2 and 7 separates them and the lowest,
    // midway, is 4.5. It then predicts b (3 harmless, 10 destructive: both right) and d
    // (4 destructive but under 4.5: missed; 2.5 harmless: right).
    const std::vector<double> score = {1, 2, 8, 9, 3, 10, 1.5, 7, 4, 2.5};
    const std::vector<std::uint8_t> positive = {0, 0, 1, 1, 0, 1, 0, 1, 1, 0};
    const std::vector<std::string> group = {"a", "a", "a", "a", "b", "b", "c", "c", "d", "d"};
    const ScreeningSummary r = screen(score, positive, group);
    EXPECT_EQ(r.n, 10);
    EXPECT_EQ(r.positives, 5);
    EXPECT_DOUBLE_EQ(r.auroc, 1.0);  // every destructive merge scores above every harmless one
    EXPECT_DOUBLE_EQ(r.best.youden, 1.0);
    EXPECT_EQ(r.fit_n, 6);
    EXPECT_EQ(r.test_n, 4);
    EXPECT_DOUBLE_EQ(r.fitted_threshold, 4.5);
    EXPECT_EQ(r.predicted.tp, 1);
    EXPECT_EQ(r.predicted.fn, 1);
    EXPECT_EQ(r.predicted.tn, 2);
    EXPECT_EQ(r.predicted.fp, 0);
    EXPECT_DOUBLE_EQ(r.accuracy, 0.75);
}

TEST(Screening, OneKindOfMergeHasNoAurocAndOneGroupNoTest) {
    const std::vector<double> score = {0.1, 0.2, 0.3};
    const std::vector<std::uint8_t> positive = {0, 0, 0};
    const std::vector<std::string> group = {"a", "a", "a"};
    const ScreeningSummary r = screen(score, positive, group);
    EXPECT_TRUE(std::isnan(r.auroc));
    EXPECT_EQ(r.fit_n, 3);
    EXPECT_EQ(r.test_n, 0);
    EXPECT_TRUE(std::isnan(r.accuracy));
}

TEST(Screening, BootstrapIntervalHoldsTheAurocAndIsSeeded) {
    const std::vector<double> score = {0.1, 0.4, 0.35, 0.8, 0.2, 0.9, 0.5, 0.3};
    const std::vector<std::uint8_t> positive = {0, 0, 1, 1, 0, 1, 0, 1};
    const double a = auroc(score, positive);
    const Interval ci = auroc_interval(score, positive, 500, 7);
    EXPECT_LE(ci.lo, a);
    EXPECT_GE(ci.hi, a);
    EXPECT_LT(ci.lo, ci.hi);
    EXPECT_GE(ci.lo, 0.0);
    EXPECT_LE(ci.hi, 1.0);
    const Interval again = auroc_interval(score, positive, 500, 7);
    EXPECT_EQ(again.lo, ci.lo);
    EXPECT_EQ(again.hi, ci.hi);
    // Perfect separation: every resample with both kinds has AUROC 1.
    const std::vector<double> apart = {0.1, 0.2, 0.8, 0.9};
    const std::vector<std::uint8_t> kinds = {0, 0, 1, 1};
    const Interval one = auroc_interval(apart, kinds, 100, 1);
    EXPECT_EQ(one.lo, 1.0);
    EXPECT_EQ(one.hi, 1.0);
    EXPECT_TRUE(std::isnan(auroc_interval(apart, std::vector<std::uint8_t>(4, 1), 100, 1).lo));
}
