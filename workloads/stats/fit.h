// Small fits and tests used by the merging studies: a power law y = a·x^b by least squares
// on logs (PRISM's drift exponent, methods.md §3.1), and the two-sided sign test of paired
// differences (operator ablations).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "stats/stat_result.h"

namespace compatbench::stats {

struct PowerFit {
    std::size_t n = 0;        // points used (x > 0 and y > 0)
    double exponent = kNaN;   // b
    double prefactor = kNaN;  // a
    double r2 = kNaN;         // of the log-log line
    // The exponent's standard error sqrt(SSE/(n - 2) / Sxx) and 95% interval b ± t·SE
    // (Student t, n - 2 df): NaN for fewer than 3 points.
    double exponent_se = kNaN, exponent_lo = kNaN, exponent_hi = kNaN;
    std::string reason;
    bool ok() const { return reason.empty(); }
};

// Ordinary least squares of log y on log x over the points with x > 0 and y > 0 (others
// skipped); NaN with a reason for fewer than 2 such points or a constant x.
PowerFit power_law_fit(std::span<const double> x, std::span<const double> y);

struct SignTest {
    std::int64_t wins = 0, losses = 0, ties = 0;
    double p = kNaN;  // two-sided, exact binomial(wins + losses, 1/2); ties dropped
};

// Wins (d > 0), losses (d < 0) and ties of paired differences d, with the exact p.
SignTest sign_test(std::span<const double> differences);

}  // namespace compatbench::stats
