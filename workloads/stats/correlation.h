// Pearson and Spearman correlation with scipy.stats semantics (methods.md §5).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "stats/stat_result.h"

namespace compatbench::stats {

// Pearson r; two-sided p from the exact null distribution of r (Student t, n - 2 df);
// 95% CI by Fisher z with se = 1/sqrt(n - 3) ([-1, 1] when n == 3).
// NaN with a reason for: length mismatch, n < 3, non-finite values, a constant vector.
CorrelationResult pearson(std::span<const double> x, std::span<const double> y);

// Up to this n, Spearman's and Kendall's p are exact: all n! orderings of y are enumerated
// (methods.md §5.1; scipy.stats.permutation_test's exact null).
inline constexpr std::size_t kExactPermutationMax = 10;

// Spearman rho = Pearson r of average ranks; p exact by permutation for n <= 10, else from
// Student t with n - 2 df (scipy.stats.spearmanr). The CI fields stay NaN.
CorrelationResult spearman(std::span<const double> x, std::span<const double> y);

// Kendall's tau-b; p exact: with ties by permutation for n <= 10, without ties from the
// distribution of discordant pairs for n <= 33 (scipy.stats.kendalltau's default); else
// normal with tie correction. The CI fields stay NaN.
CorrelationResult kendall(std::span<const double> x, std::span<const double> y);
// The same with the p-value left NaN when `with_p` is false (cheap, for resampling).
CorrelationResult kendall(std::span<const double> x, std::span<const double> y, bool with_p);

// The two-sided p of a correlation r from n observations by Student t with n - 2 df: the
// large-sample p that the first studies' rules were registered with (methods.md §5.1).
double student_t_p(double r, std::size_t n);

// rho and tau-b alone, NaN when undefined: the statistic of a bootstrap draw.
double spearman_rho(std::span<const double> x, std::span<const double> y);
double kendall_tau(std::span<const double> x, std::span<const double> y);

// The Mann–Whitney U test of x against y (scipy.stats.mannwhitneyu, two-sided, method
// "auto"): U = U_x, auc = U / (n_x n_y); p exact from the null distribution of U when there
// are no ties and either group has at most 8 values, else normal with tie and continuity
// correction. NaN with a reason for an empty group or a non-finite value.
struct MannWhitney {
    std::size_t nx = 0, ny = 0;
    double u = kNaN, auc = kNaN, p = kNaN;
    bool exact = false;
    std::string reason;
    bool ok() const { return reason.empty(); }
};
MannWhitney mann_whitney(std::span<const double> x, std::span<const double> y);

}  // namespace compatbench::stats
