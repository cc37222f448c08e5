#include "stats/correlation.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "stats/ranks.h"

namespace compatbench::stats {

namespace {

// Common checks; returns the reason the input is degenerate, or "" when usable.
std::string check_pair(std::span<const double> x, std::span<const double> y) {
    if (x.size() != y.size()) {
        return "length mismatch (" + std::to_string(x.size()) + " vs " + std::to_string(y.size()) +
               ")";
    }
    if (x.size() < 3) return "fewer than 3 observations (n=" + std::to_string(x.size()) + ")";
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
            return "non-finite value at index " + std::to_string(i);
        }
    }
    return {};
}

double mean(std::span<const double> v) {
    double s = 0.0;
    for (double a : v) s += a;
    return s / static_cast<double>(v.size());
}

// r = <xm/|xm|, ym/|ym|> as scipy 1.10 computes it; "" reason or why it is undefined.
double centred_cosine(std::span<const double> x, std::span<const double> y, std::string& reason) {
    const std::size_t n = x.size();
    const double mx = mean(x), my = mean(y);
    std::vector<double> xm(n), ym(n);
    double nx = 0.0, ny = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        xm[i] = x[i] - mx;
        ym[i] = y[i] - my;
        nx += xm[i] * xm[i];
        ny += ym[i] * ym[i];
    }
    nx = std::sqrt(nx);
    ny = std::sqrt(ny);
    if (nx == 0.0 || ny == 0.0) {
        reason = nx == 0.0 ? "x is constant" : "y is constant";
        return kNaN;
    }
    double r = 0.0;
    for (std::size_t i = 0; i < n; ++i) r += (xm[i] / nx) * (ym[i] / ny);
    return std::clamp(r, -1.0, 1.0);
}

// Two-sided p of a correlation r from n observations, via Student t with n - 2 df.
double two_sided_p(double r, std::size_t n) {
    const double dof = static_cast<double>(n) - 2.0;
    const double abs_r = std::fabs(r);
    if (abs_r >= 1.0) return 0.0;
    const double t = abs_r * std::sqrt(dof / ((1.0 + abs_r) * (1.0 - abs_r)));
    const boost::math::students_t dist(dof);
    return 2.0 * boost::math::cdf(boost::math::complement(dist, t));
}

}  // namespace

CorrelationResult pearson(std::span<const double> x, std::span<const double> y) {
    CorrelationResult out;
    out.n = x.size();
    out.reason = check_pair(x, y);
    if (!out.ok()) return out;
    const double r = centred_cosine(x, y, out.reason);
    if (!out.ok()) return out;
    out.r = r;
    // scipy 1.10 pearsonr: p = 2 * sf(|r|) of Beta(n/2 - 1, n/2 - 1) on [-1, 1], which is
    // the regularised incomplete beta at (1 - |r|) / 2.
    const double ab = static_cast<double>(out.n) / 2.0 - 1.0;
    out.p =
        std::fabs(r) >= 1.0 ? 0.0 : 2.0 * boost::math::ibeta(ab, ab, 0.5 * (1.0 - std::fabs(r)));
    out.p = std::min(out.p, 1.0);
    if (out.n > 3) {
        const double z = std::atanh(r);
        const double se = 1.0 / std::sqrt(static_cast<double>(out.n) - 3.0);
        const double h = boost::math::quantile(boost::math::normal(), 0.975);
        out.ci_low = std::tanh(z - h * se);
        out.ci_high = std::tanh(z + h * se);
    } else {
        out.ci_low = -1.0;
        out.ci_high = 1.0;
    }
    return out;
}

CorrelationResult spearman(std::span<const double> x, std::span<const double> y) {
    CorrelationResult out;
    out.n = x.size();
    out.reason = check_pair(x, y);
    if (!out.ok()) return out;
    const auto rx = average_ranks(x);
    const auto ry = average_ranks(y);
    const double rho = centred_cosine(rx, ry, out.reason);
    if (!out.ok()) return out;
    out.r = rho;
    out.p = std::min(two_sided_p(rho, out.n), 1.0);
    return out;
}

}  // namespace compatbench::stats
