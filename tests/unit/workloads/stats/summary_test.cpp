// methods.md §5: the descriptive statistics the analyses share (numpy semantics).
#include <gtest/gtest.h>

#include <cmath>

#include "stats/summary.h"

using namespace compatbench::stats;

TEST(Summary, MeanVarianceAndSd) {
    const std::vector<double> v = {1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(mean(v), 2.5);
    EXPECT_DOUBLE_EQ(sample_variance(v), 5.0 / 3.0);  // numpy var(ddof=1)
    EXPECT_DOUBLE_EQ(sample_sd(v), std::sqrt(5.0 / 3.0));
    EXPECT_TRUE(std::isnan(mean(std::vector<double>{})));
    EXPECT_TRUE(std::isnan(sample_sd(std::vector<double>{7})));
    // NaN propagates through the plain forms and is left out by the nan_ forms.
    const std::vector<double> w = {1, NAN, 3};
    EXPECT_TRUE(std::isnan(mean(w)));
    EXPECT_DOUBLE_EQ(nan_mean(w), 2.0);
    EXPECT_DOUBLE_EQ(nan_sd(w), std::sqrt(2.0));
    EXPECT_EQ(without_nan(w), (std::vector<double>{1, 3}));
    EXPECT_DOUBLE_EQ(nan_min(w), 1.0);
    EXPECT_DOUBLE_EQ(nan_max(w), 3.0);
    EXPECT_TRUE(std::isnan(nan_max(std::vector<double>{NAN})));
}

TEST(Summary, MedianOddEvenAndNaN) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
    EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
    EXPECT_DOUBLE_EQ(median({NAN, 5, 1}), 3.0);
    EXPECT_TRUE(std::isnan(median({})));
}

TEST(Summary, OrderAndRanksHighestFirstNaNLast) {
    const std::vector<double> v = {0.2, 0.9, NAN, 0.5, 0.9};
    EXPECT_EQ(order_descending(v), (std::vector<std::size_t>{1, 4, 3, 0, 2}));
    EXPECT_EQ(ranks_descending(v), (std::vector<std::int64_t>{4, 1, 5, 3, 2}));
    EXPECT_EQ(pick(v, std::vector<std::size_t>{3, 0}), (std::vector<double>{0.5, 0.2}));
}

TEST(Summary, CorrelateFiniteDropsPairsWithNaN) {
    const std::vector<double> x = {1, 2, NAN, 3, 4};
    const std::vector<double> y = {2, 4, 100, NAN, 8};
    const auto c = correlate_finite(x, y);
    EXPECT_EQ(c.n, 3u);
    EXPECT_NEAR(c.pearson.r, 1.0, 1e-12);
    EXPECT_NEAR(c.spearman.r, 1.0, 1e-12);
    EXPECT_TRUE(c.reason().empty());
    const auto d = correlate_finite(std::vector<double>{1, 2}, std::vector<double>{1, 2});
    EXPECT_FALSE(d.reason().empty());  // n < 3: undefined, with the reason
    EXPECT_TRUE(std::isnan(d.pearson.r));
}
