// Result types of the statistics kernels (methods.md §5).
//
// Degenerate input never throws and never invents a number: every value is NaN and
// `reason` says why, so the caller can log it next to the table it was computing.
#pragma once

#include <limits>
#include <string>

namespace compatbench::stats {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct CorrelationResult {
    std::size_t n = 0;
    double r = kNaN;       // Pearson r, or Spearman rho
    double p = kNaN;       // two-sided p-value
    double ci_low = kNaN;  // 95% Fisher-z interval (Pearson only)
    double ci_high = kNaN;
    std::string reason;  // empty when the result is valid
    bool ok() const { return reason.empty(); }
};

struct KruskalResult {
    std::size_t n = 0;       // total observations
    std::size_t groups = 0;  // non-empty groups
    double h = kNaN;         // tie-corrected H
    double p = kNaN;         // chi-squared survival, groups - 1 degrees of freedom
    std::string reason;
    bool ok() const { return reason.empty(); }
};

}  // namespace compatbench::stats
