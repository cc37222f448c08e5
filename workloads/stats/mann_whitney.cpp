// The Mann–Whitney U test (methods.md §5.1), as scipy.stats.mannwhitneyu(two-sided, "auto").
#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <vector>

#include "stats/correlation.h"
#include "stats/ranks.h"

namespace compatbench::stats {

namespace {

// P(U >= u) under the null with nx and ny values and no ties: the share of the
// C(nx + ny, nx) orderings whose U is at least u. count[j][v] holds the orderings of i x's
// and j y's with U = v (an x above every y placed so far adds j), built up over i.
double exact_sf(std::size_t nx, std::size_t ny, double u) {
    if (ny > nx)
        std::swap(nx, ny);  // U's null distribution is the same either way: the
                            // table spans the smaller group (8 rows at most)
    const std::size_t top = nx * ny;
    std::vector<std::vector<double>> count(ny + 1, std::vector<double>(top + 1, 0.0));
    for (std::size_t j = 0; j <= ny; ++j) count[j][0] = 1.0;  // i = 0
    for (std::size_t i = 1; i <= nx; ++i) {
        std::vector<std::vector<double>> next(ny + 1, std::vector<double>(top + 1, 0.0));
        for (std::size_t j = 0; j <= ny; ++j)
            for (std::size_t v = 0; v <= top; ++v) {
                double c = v >= j ? count[j][v - j] : 0.0;  // the last value is an x
                if (j > 0) c += next[j - 1][v];             // the last value is a y
                next[j][v] = c;
            }
        count = std::move(next);
    }
    double all = 0, above = 0;
    for (std::size_t v = 0; v <= top; ++v) {
        all += count[ny][v];
        if (static_cast<double>(v) >= u) above += count[ny][v];
    }
    return above / all;
}

}  // namespace

MannWhitney mann_whitney(std::span<const double> x, std::span<const double> y) {
    MannWhitney out;
    out.nx = x.size();
    out.ny = y.size();
    if (x.empty() || y.empty()) {
        out.reason = "an empty group (" + std::to_string(x.size()) + " and " +
                     std::to_string(y.size()) + " values)";
        return out;
    }
    std::vector<double> both(x.begin(), x.end());
    both.insert(both.end(), y.begin(), y.end());
    for (double v : both)
        if (!std::isfinite(v)) {
            out.reason = "a non-finite value";
            return out;
        }
    const auto ranks = average_ranks(both);
    double rx = 0;
    for (std::size_t i = 0; i < x.size(); ++i) rx += ranks[i];
    const double nx = static_cast<double>(x.size()), ny = static_cast<double>(y.size());
    out.u = rx - nx * (nx + 1) / 2;
    out.auc = out.u / (nx * ny);
    const double big = std::max(out.u, nx * ny - out.u), ties = tie_term(both);
    out.exact = ties == 0 && (x.size() <= 8 || y.size() <= 8);
    if (out.exact) {
        out.p = std::min(1.0, 2.0 * exact_sf(x.size(), y.size(), big));
        return out;
    }
    const double n = nx + ny;
    const double s = std::sqrt(nx * ny / 12 * ((n + 1) - ties / (n * (n - 1))));
    if (!(s > 0)) {
        out.reason = "every value is equal";
        return out;
    }
    const double z = (big - nx * ny / 2 - 0.5) / s;
    out.p = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(
                                    boost::math::normal_distribution<double>(), z)));
    return out;
}

}  // namespace compatbench::stats
