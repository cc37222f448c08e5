#include "stats/fit.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <vector>

namespace compatbench::stats {

PowerFit power_law_fit(std::span<const double> x, std::span<const double> y) {
    PowerFit f;
    if (x.size() != y.size()) {
        f.reason = "x and y differ in length";
        return f;
    }
    std::vector<double> lx, ly;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i] > 0 && y[i] > 0 && std::isfinite(x[i]) && std::isfinite(y[i])) {
            lx.push_back(std::log(x[i]));
            ly.push_back(std::log(y[i]));
        }
    }
    f.n = lx.size();
    if (f.n < 2) {
        f.reason = "fewer than 2 positive points";
        return f;
    }
    const double n = static_cast<double>(f.n);
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < f.n; ++i) mx += lx[i], my += ly[i];
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (std::size_t i = 0; i < f.n; ++i) {
        sxx += (lx[i] - mx) * (lx[i] - mx);
        sxy += (lx[i] - mx) * (ly[i] - my);
        syy += (ly[i] - my) * (ly[i] - my);
    }
    if (sxx <= 0) {
        f.reason = "x is constant";
        return f;
    }
    f.exponent = sxy / sxx;
    f.prefactor = std::exp(my - f.exponent * mx);
    f.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 1.0;
    if (f.n >= 3) {  // methods.md §3.1: the drift exponent's interval, a point claim's band
        const double sse = std::max(0.0, syy - f.exponent * sxy);
        f.exponent_se = std::sqrt(sse / (n - 2) / sxx);
        const double t = boost::math::quantile(boost::math::students_t(n - 2), 0.975);
        f.exponent_lo = f.exponent - t * f.exponent_se;
        f.exponent_hi = f.exponent + t * f.exponent_se;
    }
    return f;
}

SignTest sign_test(std::span<const double> differences) {
    SignTest t;
    for (double d : differences) {
        if (d > 0)
            ++t.wins;
        else if (d < 0)
            ++t.losses;
        else if (d == 0)
            ++t.ties;
    }
    const std::int64_t n = t.wins + t.losses;
    if (n == 0) return t;
    const boost::math::binomial_distribution<double> b(static_cast<double>(n), 0.5);
    const double lo = static_cast<double>(std::min(t.wins, t.losses));
    t.p = std::min(1.0, 2.0 * boost::math::cdf(b, lo));
    return t;
}

}  // namespace compatbench::stats
