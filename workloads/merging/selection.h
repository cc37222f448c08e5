// Selection over one double per coordinate of a tensor: TIES's ⌊density · n⌋ largest |τ|
// and PRISM's keep-rate floor (methods.md §3.2).
#pragma once

#include <cstddef>
#include <vector>

namespace compatbench::merging {

// One double per coordinate, the thread's, reused across tensors (grown to n).
std::vector<double>& magnitudes(std::size_t n);

// The k-th largest (1-based, 1 <= k <= n) of the non-negative values v[0..n).
double kth_largest(const std::vector<double>& v, std::size_t n, std::size_t k);

// The k-th largest, with how many values are greater and how many equal to it, as the
// comparisons count them; `known` is false (and the counts 0) when a NaN or an infinity may
// lie above it, where the histogram's order is not the comparisons'.
struct TopCut {
    double value = 0.0;
    bool known = false;
    std::size_t greater = 0, equal = 0;
};
TopCut top_cut(const std::vector<double>& v, std::size_t n, std::size_t k);

}  // namespace compatbench::merging
