// Kruskal-Wallis H test with tie correction (methods.md §5; scipy.stats.kruskal).
#pragma once

#include <span>
#include <vector>

#include "stats/stat_result.h"

namespace compatbench::stats {

// H = 12/(N(N+1)) * sum_g R_g^2/n_g - 3(N+1), divided by 1 - sum(t^3 - t)/(N^3 - N);
// p = chi-squared survival with (groups - 1) degrees of freedom.
// Empty groups are left out (and counted as such in `groups`); NaN with a reason for
// fewer than 2 non-empty groups, non-finite values, or all values equal.
KruskalResult kruskal_wallis(const std::vector<std::vector<double>>& groups);

}  // namespace compatbench::stats
