#include "stats/kruskal.h"

#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <string>

#include "stats/ranks.h"

namespace compatbench::stats {

KruskalResult kruskal_wallis(const std::vector<std::vector<double>>& groups) {
    KruskalResult out;
    std::vector<double> all;
    std::vector<std::size_t> sizes;
    for (const auto& g : groups) {
        if (g.empty()) continue;
        for (double v : g) {
            if (!std::isfinite(v)) {
                out.reason = "non-finite value in group " + std::to_string(sizes.size());
                return out;
            }
        }
        all.insert(all.end(), g.begin(), g.end());
        sizes.push_back(g.size());
    }
    out.n = all.size();
    out.groups = sizes.size();
    if (sizes.size() < 2) {
        out.reason = "fewer than 2 non-empty groups (" + std::to_string(sizes.size()) + ")";
        return out;
    }
    const double n = static_cast<double>(all.size());
    const double ties = 1.0 - tie_term(all) / (n * n * n - n);
    if (ties == 0.0) {
        out.reason = "all values are equal";
        return out;
    }
    const auto ranks = average_ranks(all);
    double ssbn = 0.0;
    std::size_t start = 0;
    for (std::size_t size : sizes) {
        double sum = 0.0;
        for (std::size_t i = start; i < start + size; ++i) sum += ranks[i];
        ssbn += sum * sum / static_cast<double>(size);
        start += size;
    }
    double h = 12.0 / (n * (n + 1.0)) * ssbn - 3.0 * (n + 1.0);
    h /= ties;
    // H >= 0; equal mean ranks give 0 up to rounding of the 3(N+1)-sized terms above.
    if (h < 1e-13 * 3.0 * (n + 1.0)) h = 0.0;
    out.h = h;
    const boost::math::chi_squared dist(static_cast<double>(sizes.size() - 1));
    out.p = h <= 0.0 ? 1.0 : boost::math::cdf(boost::math::complement(dist, h));
    return out;
}

}  // namespace compatbench::stats
