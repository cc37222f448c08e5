// Descriptive statistics shared by the studies' analyses (methods.md §5), with numpy's
// semantics: `mean`, `sample_variance` and `sample_sd` propagate NaN (numpy.mean,
// var(ddof=1), std(ddof=1)); the `nan_` forms leave NaN values out (numpy.nanmean, ...).
// Sums run in input order, so a result is the same bytes wherever it is computed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stats/stat_result.h"

namespace compatbench::stats {

// The values that are not NaN, in order.
std::vector<double> without_nan(std::span<const double> values);
// v[rows[0]], v[rows[1]], ...
std::vector<double> pick(std::span<const double> values, std::span<const std::size_t> rows);

// Sum in input order; 0 for none.
double sum(std::span<const double> values);
// NaN for none.
double mean(std::span<const double> values);
// Sum of squared deviations from the mean over n - 1; NaN for fewer than two values.
double sample_variance(std::span<const double> values);
double sample_sd(std::span<const double> values);
double nan_mean(std::span<const double> values);
double nan_sd(std::span<const double> values);
// The q-quantile (0 <= q <= 1) of the values that are not NaN, interpolating linearly
// between order statistics (numpy's default); NaN for none.
double quantile(std::vector<double> values, double q);
// quantile(values, 0.5): the middle value, or for an even count the point halfway between
// the two middle ones (a + (b − a)/2).
double median(std::vector<double> values);
// Smallest and largest value that is not NaN; NaN for none.
double nan_min(std::span<const double> values);
double nan_max(std::span<const double> values);

// Positions by value, highest first; ties keep input order; NaN last.
std::vector<std::size_t> order_descending(std::span<const double> values);
// 1-based rank of each value, highest first, from order_descending (a NaN is ranked after
// every number).
std::vector<std::int64_t> ranks_descending(std::span<const double> values);

// Pearson and Spearman of x against y over the positions where neither is NaN.
struct PairedCorrelation {
    std::size_t n = 0;
    CorrelationResult pearson, spearman;
    // The first reason either statistic is undefined (empty when both are valid).
    const std::string& reason() const { return pearson.ok() ? spearman.reason : pearson.reason; }
};
PairedCorrelation correlate_finite(std::span<const double> x, std::span<const double> y);

}  // namespace compatbench::stats
