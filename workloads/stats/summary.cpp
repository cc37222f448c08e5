#include "stats/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stats/correlation.h"

namespace compatbench::stats {

std::vector<double> without_nan(std::span<const double> values) {
    std::vector<double> out;
    out.reserve(values.size());
    for (double v : values)
        if (!std::isnan(v)) out.push_back(v);
    return out;
}

std::vector<double> pick(std::span<const double> values, std::span<const std::size_t> rows) {
    std::vector<double> out;
    out.reserve(rows.size());
    for (std::size_t r : rows) out.push_back(values[r]);
    return out;
}

double sum(std::span<const double> values) {
    double s = 0.0;
    for (double v : values) s += v;
    return s;
}

double mean(std::span<const double> values) {
    if (values.empty()) return kNaN;
    return sum(values) / static_cast<double>(values.size());
}

double sample_variance(std::span<const double> values) {
    if (values.size() < 2) return kNaN;
    const double m = mean(values);
    double ss = 0.0;
    for (double v : values) ss += (v - m) * (v - m);
    return ss / static_cast<double>(values.size() - 1);
}

double sample_sd(std::span<const double> values) { return std::sqrt(sample_variance(values)); }

double nan_mean(std::span<const double> values) { return mean(without_nan(values)); }

double nan_sd(std::span<const double> values) { return sample_sd(without_nan(values)); }

double quantile(std::vector<double> values, double q) {
    std::erase_if(values, [](double v) { return std::isnan(v); });
    if (values.empty()) return kNaN;
    std::sort(values.begin(), values.end());
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

double nan_min(std::span<const double> values) {
    double out = kNaN;
    for (double v : values)
        if (!std::isnan(v)) out = std::isnan(out) ? v : std::min(out, v);
    return out;
}

double nan_max(std::span<const double> values) {
    double out = kNaN;
    for (double v : values)
        if (!std::isnan(v)) out = std::isnan(out) ? v : std::max(out, v);
    return out;
}

std::vector<std::size_t> order_descending(std::span<const double> values) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const bool na = std::isnan(values[a]), nb = std::isnan(values[b]);
        if (na || nb) return !na && nb;
        return values[a] > values[b];
    });
    return order;
}

std::vector<std::int64_t> ranks_descending(std::span<const double> values) {
    const auto order = order_descending(values);
    std::vector<std::int64_t> rank(values.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        rank[order[i]] = static_cast<std::int64_t>(i + 1);
    return rank;
}

PairedCorrelation correlate_finite(std::span<const double> x, std::span<const double> y) {
    std::vector<double> a, b;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i])) continue;
        a.push_back(x[i]);
        b.push_back(y[i]);
    }
    PairedCorrelation c;
    c.n = a.size();
    c.pearson = pearson(a, b);
    c.spearman = spearman(a, b);
    return c;
}

}  // namespace compatbench::stats
