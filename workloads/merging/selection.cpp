#include "merging/selection.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>

namespace compatbench::merging {

std::vector<double>& magnitudes(std::size_t n) {
    thread_local std::vector<double> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer;
}

// A histogram of the values' top_bits finds the bucket that holds the k-th largest, and only
// that bucket's values are partially sorted: two passes over v instead of a partial sort of
// all.
double kth_largest(const std::vector<double>& v, std::size_t n, std::size_t k) {
    return top_cut(v, n, k).value;
}

void TopHistogram::add(const double* v, std::size_t n) {
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (std::size_t q = 0; q < 4; ++q) ++part_[(q << 16) + top_bits(v[j + q])];
    for (; j < n; ++j) ++part_[top_bits(v[j])];
}

TopHistogram::Cut TopHistogram::cut(std::size_t k) const {
    std::vector<std::size_t> count(std::size_t{1} << 16, 0);
    for (std::size_t q = 0; q < part_.size(); ++q) count[q & 0xffff] += part_[q];
    Cut c;
    c.bucket = count.size();
    while (c.bucket-- > 0 && c.above + count[c.bucket] < k) c.above += count[c.bucket];
    c.count = count[c.bucket];
    constexpr std::ptrdiff_t kInfinity = 0x7ff0;
    c.finite =
        std::all_of(count.begin() + kInfinity, count.end(), [](std::size_t n) { return n == 0; });
    return c;
}

TopCut top_cut(const std::vector<double>& v, std::size_t n, std::size_t k) {
    thread_local TopHistogram histogram;
    histogram.clear();
    histogram.add(v.data(), n);
    const TopHistogram::Cut c = histogram.cut(k);
    const std::size_t bucket = c.bucket, above = c.above;
    thread_local std::vector<double> kept;
    std::vector<double>& in_bucket = kept;
    in_bucket.resize(c.count + 1);  // + 1: each value is written, the next overwrites
    std::size_t w = 0;              // it unless it is in the bucket (no branch)
    const auto gather = [&](std::size_t from, std::size_t to) {
        for (std::size_t q = from; q < to; ++q) {
            in_bucket[w] = v[q];
            w += top_bits(v[q]) == bucket;
        }
    };
    // 8 values at a time: most runs of 8 hold none of the bucket's and are passed by.
    std::size_t q = 0;
    for (; q + 8 <= n; q += 8) {
        bool any = false;
        for (std::size_t l = 0; l < 8; ++l) any |= top_bits(v[q + l]) == bucket;
        if (any) gather(q, q + 8);
    }
    gather(q, n);
    const auto at = in_bucket.begin() + static_cast<std::ptrdiff_t>(k - above - 1);
    std::nth_element(in_bucket.begin(), at, in_bucket.begin() + static_cast<std::ptrdiff_t>(w),
                     std::greater<>());
    TopCut cut{*at};
    // Every value of a bucket above is greater, unless a bucket from infinity's up holds any.
    cut.known = c.finite;
    if (!cut.known) return cut;
    cut.greater = above;
    for (std::size_t r = 0; r < w; ++r) {
        cut.greater += in_bucket[r] > cut.value;
        cut.equal += in_bucket[r] == cut.value;
    }
    return cut;
}

}  // namespace compatbench::merging
