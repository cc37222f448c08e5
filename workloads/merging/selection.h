// Selection over one double per coordinate of a tensor: TIES's ⌊density · n⌋ largest |τ|
// and PRISM's keep-rate floor (methods.md §3.2).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The top 16 bits of a double's pattern: the sign, the exponent and 4 bits of the
// significand. For non-negative values up to infinity they order as the values do.
inline std::size_t top_bits(double x) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, 8);
    return static_cast<std::size_t>(bits >> 48);
}

// A histogram of the top_bits of non-negative doubles, added a block at a time. Four counts
// per bucket, values taken in turn: increments of one bucket (most values share a few) do
// not wait on each other. For fewer than 2^32 values.
class TopHistogram {
  public:
    TopHistogram() : part_(std::size_t{4} << 16, 0) {}
    void clear() { std::fill(part_.begin(), part_.end(), 0U); }
    void add(const double* v, std::size_t n);
    // The bucket that holds the k-th largest of the values added (1 <= k <= their number):
    // its index and count, the count of all buckets above, and whether any value lies from
    // infinity's bucket up, where the histogram's order is not the comparisons'.
    struct Cut {
        std::size_t bucket = 0, count = 0, above = 0;
        bool finite = false;
    };
    Cut cut(std::size_t k) const;

  private:
    std::vector<std::uint32_t> part_;
};

}  // namespace compatbench::merging
