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

// The exact two-sided permutation p of a statistic that permutations of y turn into the
// integer `score` (monotone in the statistic): every one of the n! orderings of y is
// enumerated, as scipy.stats.permutation_test(permutation_type="pairings") does for n <= 10:
// p = min(1, 2 * min(P(score >= observed), P(score <= observed))).
template <class Score>
double permutation_p(std::size_t n, const Score& score) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    const std::int64_t observed = score(order);
    double above = 0, below = 0, all = 0;
    do {
        const std::int64_t s = score(order);
        above += s >= observed;
        below += s <= observed;
        all += 1;
    } while (std::next_permutation(order.begin(), order.end()));
    return std::min(1.0, 2.0 * std::min(above, below) / all);
}

// Twice the average ranks: integers, so that permuted sums compare exactly.
std::vector<std::int64_t> doubled_ranks(std::span<const double> v) {
    std::vector<std::int64_t> out;
    for (double r : average_ranks(v)) out.push_back(std::llround(2.0 * r));
    return out;
}

int sign(double v) { return (v > 0) - (v < 0); }

}  // namespace

double student_t_p(double r, std::size_t n) {
    return n < 3 || std::isnan(r) ? kNaN : std::min(two_sided_p(r, n), 1.0);
}

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
    if (out.n <= kExactPermutationMax) {
        // rho is monotone in sum_i rank_x(i) * rank_y(order(i)) over the orderings of y.
        const auto dx = doubled_ranks(x), dy = doubled_ranks(y);
        out.p = permutation_p(out.n, [&](const std::vector<std::size_t>& order) {
            std::int64_t s = 0;
            for (std::size_t i = 0; i < order.size(); ++i) s += dx[i] * dy[order[i]];
            return s;
        });
    } else {
        out.p = std::min(two_sided_p(rho, out.n), 1.0);
    }
    return out;
}

double spearman_rho(std::span<const double> x, std::span<const double> y) {
    std::string reason = check_pair(x, y);
    if (!reason.empty()) return kNaN;
    return centred_cosine(average_ranks(x), average_ranks(y), reason);
}

double kendall_tau(std::span<const double> x, std::span<const double> y) {
    return kendall(x, y, false).r;
}

CorrelationResult kendall(std::span<const double> x, std::span<const double> y) {
    return kendall(x, y, true);
}

// Kendall's tau-b. Its p: with ties and n <= 10 exact by permutation; without ties and
// n <= 33 exact from the distribution of the number of discordant pairs (Mahonian numbers,
// as scipy's method "auto"); otherwise the normal approximation with the tie-corrected
// variance.
CorrelationResult kendall(std::span<const double> x, std::span<const double> y, bool with_p) {
    CorrelationResult out;
    out.n = x.size();
    out.reason = check_pair(x, y);
    if (!out.ok()) return out;
    const std::size_t n = x.size();
    double concordant = 0, discordant = 0;
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) {
            const double s = (x[i] - x[j]) * (y[i] - y[j]);
            if (s > 0) concordant += 1;
            if (s < 0) discordant += 1;
        }
    // Tied pairs within x and within y: Σ t(t-1)/2 over groups of equal values, and the
    // sums the variance needs.
    const auto ties = [](std::span<const double> v, double& pairs, double& v1, double& v2,
                         double& vt) {
        std::vector<double> s(v.begin(), v.end());
        std::sort(s.begin(), s.end());
        pairs = v1 = v2 = vt = 0;
        for (std::size_t i = 0; i < s.size();) {
            std::size_t j = i;
            while (j < s.size() && s[j] == s[i]) ++j;
            const double t = static_cast<double>(j - i);
            pairs += t * (t - 1) / 2;
            v1 += t * (t - 1);
            v2 += t * (t - 1) * (t - 2);
            vt += t * (t - 1) * (2 * t + 5);
            i = j;
        }
    };
    double xp, x1, x2, xt, yp, y1, y2, yt;
    ties(x, xp, x1, x2, xt);
    ties(y, yp, y1, y2, yt);
    const double nd = static_cast<double>(n), total = nd * (nd - 1) / 2;
    const double denom = std::sqrt((total - xp) * (total - yp));
    if (!(denom > 0)) {
        out.reason = "a constant vector";
        return out;
    }
    out.r = (concordant - discordant) / denom;
    if (!with_p) return out;
    if ((xp != 0 || yp != 0) && n <= kExactPermutationMax) {
        // With ties, tau-b's denominator does not change under orderings of y: it is
        // monotone in concordant - discordant.
        out.p = permutation_p(n, [&](const std::vector<std::size_t>& order) {
            std::int64_t s = 0;
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = i + 1; j < n; ++j)
                    s += sign(x[i] - x[j]) * sign(y[order[i]] - y[order[j]]);
            return s;
        });
    } else if (xp == 0 && yp == 0 && n <= 33) {
        // P(D <= c) over the n! orderings, c = min(D, total - D); p = 2 P, at most 1.
        std::vector<double> counts = {1.0};  // permutations of m items by inversions
        for (std::size_t m = 2; m <= n; ++m) {
            std::vector<double> next(counts.size() + m - 1, 0.0);
            for (std::size_t k = 0; k < counts.size(); ++k)
                for (std::size_t add = 0; add < m; ++add) next[k + add] += counts[k];
            counts = std::move(next);
        }
        const auto c = static_cast<std::size_t>(std::min(discordant, total - discordant));
        double all = 0, below = 0;
        for (std::size_t k = 0; k < counts.size(); ++k) {
            all += counts[k];
            if (k <= c) below += counts[k];
        }
        out.p = std::min(1.0, 2.0 * below / all);
    } else {
        const double v0 = nd * (nd - 1) * (2 * nd + 5);
        const double var = (v0 - xt - yt) / 18.0 + x1 * y1 / (2.0 * nd * (nd - 1)) +
                           x2 * y2 / (9.0 * nd * (nd - 1) * (nd - 2));
        const double z = (concordant - discordant) / std::sqrt(var);
        out.p = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(
                                        boost::math::normal_distribution<double>(), std::abs(z))));
    }
    return out;
}

}  // namespace compatbench::stats
