#include "stats/ranks.h"

#include <algorithm>
#include <numeric>

namespace compatbench::stats {

namespace {
std::vector<std::size_t> sorted_order(std::span<const double> values) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    return order;
}
}  // namespace

std::vector<double> average_ranks(std::span<const double> values) {
    const auto order = sorted_order(values);
    std::vector<double> ranks(values.size());
    std::size_t i = 0;
    while (i < order.size()) {
        std::size_t j = i + 1;
        while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
        // Positions i..j-1 (0-based) share ranks i+1..j: their mean is (i + 1 + j) / 2.
        const double rank = 0.5 * static_cast<double>(i + 1 + j);
        for (std::size_t k = i; k < j; ++k) ranks[order[k]] = rank;
        i = j;
    }
    return ranks;
}

double tie_term(std::span<const double> values) {
    const auto order = sorted_order(values);
    double sum = 0.0;
    std::size_t i = 0;
    while (i < order.size()) {
        std::size_t j = i + 1;
        while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
        const double t = static_cast<double>(j - i);
        sum += t * t * t - t;
        i = j;
    }
    return sum;
}

}  // namespace compatbench::stats
