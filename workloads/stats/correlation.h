// Pearson and Spearman correlation with scipy.stats semantics (methods.md §5).
#pragma once

#include <span>

#include "stats/stat_result.h"

namespace compatbench::stats {

// Pearson r; two-sided p from the exact null distribution of r (Student t, n - 2 df);
// 95% CI by Fisher z with se = 1/sqrt(n - 3) ([-1, 1] when n == 3).
// NaN with a reason for: length mismatch, n < 3, non-finite values, a constant vector.
CorrelationResult pearson(std::span<const double> x, std::span<const double> y);

// Spearman rho = Pearson r of average ranks; p from Student t with n - 2 df.
// The CI fields stay NaN (scipy reports none for Spearman).
CorrelationResult spearman(std::span<const double> x, std::span<const double> y);

// Kendall's tau-b; p exact without ties for n <= 33, else normal with tie correction (as
// scipy.stats.kendalltau's default). The CI fields stay NaN.
CorrelationResult kendall(std::span<const double> x, std::span<const double> y);

}  // namespace compatbench::stats
