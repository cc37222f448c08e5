// The selection by magnitude behind TIES and the generalized family (merging/selection.h,
// generalized.h): the k-th largest with its counts, and mark_top's ties at the cut taken in
// index order, against a plain reference (a full sort; a serial walk over the ties).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "merging/generalized.h"
#include "merging/selection.h"

using namespace compatbench::merging;

namespace {
// The top m of mag as mark_top promises them: every value above the k-th largest, then the
// values equal to it in index order while any of the m are left. A NaN counts as the largest
// for the cut (it orders by its bits), and is never taken.
std::vector<bool> reference_top(const std::vector<double>& mag, std::size_t m) {
    std::vector<double> sorted = mag;
    std::sort(sorted.begin(), sorted.end(),
              [](double a, double b) { return std::isnan(b) ? false : std::isnan(a) || a > b; });
    const double t = sorted[m - 1];
    std::size_t left = m;
    for (double x : mag) left -= x > t;
    std::vector<bool> take(mag.size());
    for (std::size_t j = 0; j < mag.size(); ++j) {
        take[j] = mag[j] > t || (mag[j] == t && left > 0);
        if (mag[j] == t && take[j]) --left;
    }
    return take;
}

std::vector<bool> marked(const std::vector<double>& mag, std::size_t m) {
    std::vector<std::uint64_t> bits((mag.size() + 63) / 64, 0);
    mark_top(mag, mag.size(), m, bits, true);
    std::vector<bool> out(mag.size());
    for (std::size_t j = 0; j < mag.size(); ++j) out[j] = (bits[j >> 6] >> (j & 63)) & 1U;
    return out;
}
}  // namespace

TEST(Selection, TopCutCountsWhatTheComparisonsCount) {
    // Few distinct values: the cut falls inside a long run of ties.
    std::mt19937_64 gen(7);
    std::vector<double> mag(10'000);
    for (double& x : mag) x = static_cast<double>(gen() % 13) * 0.125;
    for (std::size_t k : {1ul, 100ul, 2'345ul, 9'999ul, 10'000ul}) {
        const TopCut cut = top_cut(mag, mag.size(), k);
        std::vector<double> sorted = mag;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        EXPECT_EQ(cut.value, sorted[k - 1]) << k;
        ASSERT_TRUE(cut.known) << k;
        EXPECT_EQ(cut.greater,
                  static_cast<std::size_t>(std::count_if(mag.begin(), mag.end(),
                                                         [&](double x) { return x > cut.value; })));
        EXPECT_EQ(cut.equal,
                  static_cast<std::size_t>(std::count(mag.begin(), mag.end(), cut.value)));
    }
    // An infinity or a NaN above the cut: the counts are left to the comparisons.
    mag[5] = std::numeric_limits<double>::infinity();
    EXPECT_FALSE(top_cut(mag, mag.size(), 500).known);
    mag[5] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(top_cut(mag, mag.size(), 500).known);
}

TEST(Selection, MarkTopTakesTiesAtTheCutInIndexOrder) {
    std::mt19937_64 gen(11);
    std::vector<double> mag(5'000);
    for (double& x : mag) x = static_cast<double>(gen() % 7);
    for (std::size_t m : {1ul, 64ul, 700ul, 2'500ul, 4'999ul})
        EXPECT_EQ(marked(mag, m), reference_top(mag, m)) << m;
    // Distinct values (no tie at the cut), and a NaN, which is never taken.
    for (std::size_t j = 0; j < mag.size(); ++j) mag[j] = static_cast<double>((j * 7919) % 5'000);
    mag[17] = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t m : {1ul, 1'000ul, 4'000ul})
        EXPECT_EQ(marked(mag, m), reference_top(mag, m)) << m;
}

TEST(Selection, TiesSelectionFromItsPassEqualsMarkTop) {
    // TIES counts |τ| into a histogram as its selection pass writes them and settles the cut
    // from that bucket alone: the same bits as the reference, for ties at the cut (τ on a grid
    // of 1/8), distinct values, an exact-zero run, a tail past a multiple of 64, and an
    // infinity (the comparisons' path then).
    const std::size_t n = 70'001;
    std::mt19937_64 gen(5);
    const std::vector<float> base(n, 1.0f);
    std::vector<float> model(n);
    for (const int grid : {1, 0}) {
        for (std::size_t j = 0; j < n; ++j) {
            const double r = static_cast<double>(gen() % 4001) / 4000.0 - 0.5;
            model[j] = static_cast<float>(1.0 + (grid ? std::round(r * 8) / 8 : r));
        }
        std::fill_n(model.begin() + 1000, 700, 1.0f);
        for (const bool infinite : {false, true}) {
            if (infinite) model[333] = std::numeric_limits<float>::infinity();
            std::vector<double> mag(n);
            for (std::size_t j = 0; j < n; ++j)
                mag[j] = std::abs(static_cast<double>(model[j]) - base[j]);
            for (const double d : {0.2, 0.5, 0.99}) {
                MergeParams p;
                p.sparsify = Sparsify::magnitude;
                p.density = d;
                SpanBlocks in(base, {std::span<const float>(model)});
                const std::vector<Selection> sel = select(p, TensorScope{}, in);
                std::vector<bool> got(n);
                for (std::size_t j = 0; j < n; ++j) got[j] = sel[0].kept(j);
                const auto m = static_cast<std::size_t>(std::floor(d * static_cast<double>(n)));
                EXPECT_EQ(got, reference_top(mag, m)) << grid << infinite << d;
            }
        }
    }
}
