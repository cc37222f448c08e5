// Ranks with ties averaged (scipy.stats.rankdata(method="average")), methods.md §5.
#pragma once

#include <span>
#include <vector>

namespace compatbench::stats {

// 1-based ranks of `values`; tied values share the mean of the ranks they span.
std::vector<double> average_ranks(std::span<const double> values);

// Sum over tie groups of (t^3 - t), the Kruskal-Wallis tie-correction numerator.
double tie_term(std::span<const double> values);

}  // namespace compatbench::stats
