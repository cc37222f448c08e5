#include "merging/generalized.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "merging/draws.h"
#include "merging/in_dtype.h"
#include "merging/last_pass.h"
#include "merging/selection.h"

namespace compatbench::merging {

namespace {

constexpr std::size_t kBlock = 2048;

}  // namespace

void select_bits(const MergeParams& p, const TensorScope& s, std::size_t i, std::size_t n,
                 const std::vector<double>& mag, std::vector<std::uint64_t>& bits,
                 const KeepProbability& keep) {
    const double d = density_of(p, i);
    const auto target = static_cast<std::size_t>(std::floor(d * static_cast<double>(n)));
    switch (p.sparsify) {
        case Sparsify::none:
            return;
        case Sparsify::magnitude:  // the int(d·n) largest |τ| (none when that is 0)
            return mark_top(mag, n, target, bits, true);
        case Sparsify::magnitude_outliers: {  // ranks [n_top, n − n_bot) of the largest first
            auto top = static_cast<std::ptrdiff_t>(
                std::floor(per_model(p.gammas, i, 0.01) * static_cast<double>(n)));
            auto bot = static_cast<std::ptrdiff_t>(n) - static_cast<std::ptrdiff_t>(target) - top;
            if (bot < 0) top += std::exchange(bot, 0);
            // mergekit keeps indices[n_bot:-n_top] of the ascending order: none when n_top = 0.
            if (top == 0) return;
            mark_top(mag, n, n - static_cast<std::size_t>(bot), bits, true);
            return mark_top(mag, n, static_cast<std::size_t>(top), bits, false);
        }
        case Sparsify::random:
            return random_bits(Draws(p, s.name, i).stream, keep.random(d), n, bits);
        case Sparsify::della:
            return della_bits(p, s, i, n, mag, bits, keep);
    }
}

namespace {
// The index just past the `left`-th value equal to `threshold` (0 when `left` is 0; n when
// there are fewer): counted 64 values at a time, then one by one in the last such run.
std::size_t tie_cut(const std::vector<double>& mag, std::size_t n, double threshold,
                    std::size_t left) {
    if (left == 0) return 0;
    for (std::size_t first = 0; first < n; first += 64) {
        const std::size_t end = std::min(n, first + 64);
        std::size_t here = 0;
        for (std::size_t j = first; j < end; ++j) here += mag[j] == threshold;
        if (here < left) {
            left -= here;
            continue;
        }
        for (std::size_t j = first; j < end; ++j)
            if (mag[j] == threshold && --left == 0) return j + 1;
    }
    return n;
}
}  // namespace

void mark_top(const std::vector<double>& mag, std::size_t n, std::size_t m,
              std::vector<std::uint64_t>& bits, bool on) {
    if (m == 0) return;
    if (m >= n) {
        for (std::size_t j = 0; j < n; ++j) set_bit(bits, j, on);
        return;
    }
    const TopCut top = top_cut(mag, n, m);
    const double threshold = top.value;
    std::size_t above = top.greater, equals = top.equal;
    if (!top.known)
        for (std::size_t j = 0; j < n; ++j) {
            above += mag[j] > threshold;
            equals += mag[j] == threshold;
        }
    // The values equal to the threshold are taken in index order while any of the m are
    // left: those before `cut` (all of them when they are no more than are left).
    const std::size_t left = m - above;
    const std::size_t cut = left >= equals ? n : tie_cut(mag, n, threshold, left);
    for (std::size_t first = 0; first < n; first += 64) {
        const std::size_t end = std::min(n, first + 64);
        std::uint64_t word = 0;
        for (std::size_t j = first; j < end; ++j) {
            const bool take = mag[j] > threshold || (mag[j] == threshold && j < cut);
            word |= static_cast<std::uint64_t>(take) << (j - first);
        }
        std::uint64_t& out = bits[first >> 6];
        out = on ? out | word : out & ~word;
    }
}

namespace {
// The smallest double of a histogram bucket (its top_bits, the other bits 0).
double bucket_floor(std::size_t bucket) {
    const std::uint64_t b = std::uint64_t{bucket} << 48;
    double x;
    std::memcpy(&x, &b, 8);
    return x;
}

// |τ_ij| of one block of model i into mag: in double, or (a dtype) |r(r(θ_ij) − r(θ0_j))|
// with r rounding to it (in_dtype.h).
void magnitudes_into(Arithmetic a, std::size_t count, const float* base, const float* x,
                     double* mag) {
    if (a == Arithmetic::exact) {
        for (std::size_t j = 0; j < count; ++j)
            mag[j] = std::abs(static_cast<double>(x[j]) - base[j]);
        return;
    }
    with_dtype(a, [&](auto A) {  // one loop per dtype, its rounding inlined
        for (std::size_t j = 0; j < count; ++j)
            mag[j] = std::abs(round_to(A(), round_to(A(), x[j]) - round_to(A(), base[j])));
    });
}

// |τ_ij| of one block of model i, in the thread's buffer.
const double* block_magnitudes(Arithmetic a, std::size_t count, const float* base, const float* x) {
    thread_local std::vector<double> mag;
    if (mag.size() < count) mag.resize(count);
    magnitudes_into(a, count, base, x, mag.data());
    return mag.data();
}

// TIES's m largest |τ_ij| (0 < m < n) of model i set in `bits`, as mark_top sets them (ties
// at the cut to the lower index), from two passes over the base and model i that hold |τ_ij|
// a block at a time (no array of n doubles to write and read back): the first counts their
// top_bits into a histogram, whose bucket holding the m-th largest it finds; the second sets
// every value of a bucket above and gathers that bucket's values with their indices, among
// which the threshold and the ties at it are settled. False, doing nothing, when a value
// lies from infinity's bucket up (mark_top's comparisons serve those).
bool select_binned(TensorBlocks& in, Arithmetic a, std::size_t i, std::size_t m,
                   std::vector<std::uint64_t>& bits) {
    thread_local TopHistogram histogram;
    histogram.clear();
    last_pass::read_model_blocks(
        in, i, kBlock, [&](std::size_t, std::size_t count, const float* base, const float* x) {
            histogram.add(block_magnitudes(a, count, base, x), count);
        });
    const TopHistogram::Cut cut = histogram.cut(m);
    if (!cut.finite) return false;
    const double low = bucket_floor(cut.bucket), high = bucket_floor(cut.bucket + 1);
    thread_local std::vector<double> value;
    thread_local std::vector<std::size_t> index;
    value.clear();
    index.clear();
    value.reserve(cut.count);
    index.reserve(cut.count);
    last_pass::read_model_blocks(
        in, i, kBlock,
        [&](std::size_t begin, std::size_t count, const float* base, const float* x) {
            const double* mag = block_magnitudes(a, count, base, x);
            for (std::size_t first = 0; first < count; first += 64) {  // begin % 64 = 0
                const std::size_t end = std::min(count, first + 64);
                std::uint64_t above = 0, from = 0;  // two loops that vectorise
                for (std::size_t j = first; j < end; ++j)
                    above |= static_cast<std::uint64_t>(mag[j] >= high) << (j - first);
                for (std::size_t j = first; j < end; ++j)
                    from |= static_cast<std::uint64_t>(mag[j] >= low) << (j - first);
                bits[(begin + first) >> 6] |= above;
                for (std::uint64_t in_bucket = from & ~above; in_bucket != 0;
                     in_bucket &= in_bucket - 1) {
                    const std::size_t j =
                        first + static_cast<std::size_t>(std::countr_zero(in_bucket));
                    value.push_back(mag[j]);
                    index.push_back(begin + j);
                }
            }
        });
    thread_local std::vector<double> order;
    order = value;
    const auto at = order.begin() + static_cast<std::ptrdiff_t>(m - cut.above - 1);
    std::nth_element(order.begin(), at, order.end(), std::greater<>());
    const double threshold = *at;
    std::size_t left = m - cut.above;  // of the bucket's, those above the threshold first
    for (const double v : value) left -= v > threshold;
    for (std::size_t r = 0; r < value.size(); ++r) {
        const bool take = value[r] > threshold || (value[r] == threshold && left > 0);
        left -= value[r] == threshold && left > 0;
        bits[index[r] >> 6] |= static_cast<std::uint64_t>(take) << (index[r] & 63);
    }
    return true;
}
// sparsify.py's rescaled_masked_tensor (L1): ‖τ‖₁ and ‖kept τ‖₁ over coordinates
// [begin, begin + count), continuing the sums in coordinate order.
void add_l1(Selection& out, std::size_t begin, const double* mag, std::size_t count) {
    double l1 = out.l1, kept = out.kept_l1;  // in registers for the loop
    const std::uint64_t* bits = out.bits.data();
    for (std::size_t j = 0; j < count; ++j) {  // + 0 where dropped, without a branch
        const std::size_t c = begin + j;
        const std::uint64_t take = 0 - ((bits[c >> 6] >> (c & 63)) & 1U);
        l1 += mag[j];
        kept += std::bit_cast<double>(std::bit_cast<std::uint64_t>(mag[j]) & take);
    }
    out.l1 = l1;
    out.kept_l1 = kept;
}

// The same from a pass over the base and model i, |τ_ij| a block at a time.
void add_l1(TensorBlocks& in, Arithmetic a, std::size_t i, Selection& out) {
    last_pass::read_model_blocks(
        in, i, kBlock,
        [&](std::size_t begin, std::size_t count, const float* base, const float* x) {
            add_l1(out, begin, block_magnitudes(a, count, base, x), count);
        });
}
}  // namespace

double per_model(const std::vector<double>& v, std::size_t i, double fallback) {
    return v.empty() ? fallback : v.at(i);
}

double density_of(const MergeParams& p, std::size_t i) {
    return per_model(p.densities, i, p.density);
}

std::vector<Selection> select(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                              const SelectIn& how) {
    const std::size_t n = in.numel(), k = in.models();
    std::vector<Selection> sel(k);
    if (p.sparsify == Sparsify::none) return sel;
    const bool binned =
        p.sparsify == Sparsify::magnitude && !p.rescale && n < (std::size_t{1} << 32);
    const KeepProbability plain;
    for (std::size_t i = 0; i < k; ++i) {
        const double d = density_of(p, i);
        if (d >= 1.0) continue;
        Selection& out = sel[i];
        out.all = false;
        out.bits.assign((n + 63) / 64, 0);
        if (p.sparsify == Sparsify::della && d <= 0.0) continue;  // all dropped
        const auto m = static_cast<std::size_t>(std::floor(d * static_cast<double>(n)));
        if (binned && m > 0 && m < n && select_binned(in, how.arithmetic, i, m, out.bits))
            continue;  // TIES
        const KeepProbability& keep = how.keep ? *how.keep : plain;
        if (p.sparsify == Sparsify::random) {  // draws that read no |τ|: no array of them
            select_bits(p, s, i, n, {}, out.bits, keep);
            if (p.rescale) add_l1(in, how.arithmetic, i, out);
        } else {
            std::vector<double>& mag = magnitudes(n);
            last_pass::read_model_blocks(
                in, i, kBlock,
                [&](std::size_t begin, std::size_t count, const float* base, const float* x) {
                    magnitudes_into(how.arithmetic, count, base, x, mag.data() + begin);
                });
            select_bits(p, s, i, n, mag, out.bits, keep);
            if (p.rescale) add_l1(out, 0, mag.data(), n);
        }
        if (how.arithmetic == Arithmetic::exact && out.l1 >= 1e-7 && out.kept_l1 >= 1e-7)
            out.scale = out.l1 / out.kept_l1;
    }
    return sel;
}

void combine(const MergeParams& p, const std::vector<Selection>& sel, std::size_t begin,
             std::size_t count, std::vector<std::vector<double>>& t, std::vector<double>& delta) {
    const std::size_t k = t.size();
    const auto w = [&](std::size_t i) { return p.weights.empty() ? 1.0 : p.weights.at(i); };
    static const Selection everything;
    for (std::size_t i = 0; i < k; ++i) {
        // Both arms lvalues: a prvalue arm would copy sel[i]'s whole-tensor bits every block.
        const Selection& s = sel.empty() ? everything : sel[i];
        const double wi = w(i), scale = s.scale;
        double* ti = t[i].data();
        if (s.all) {
            for (std::size_t j = 0; j < count; ++j) ti[j] *= wi;
            continue;
        }
        const std::uint64_t* bits = s.bits.data();
        for (std::size_t j = 0; j < count; ++j) {
            const std::size_t c = begin + j;
            const bool kept = (bits[c >> 6] >> (c & 63)) & 1U;
            ti[j] = kept ? ti[j] * scale * wi : 0.0;
        }
    }
    std::fill_n(delta.begin(), count, 0.0);
    if (!p.consensus) {
        double total = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
            total += w(i);
            for (std::size_t j = 0; j < count; ++j) delta[j] += t[i][j];
        }
        if (p.normalize == Normalize::mean && std::abs(total) >= 1e-8)
            divide(delta.data(), count, total);
        return;
    }
    // Sign consensus (TIES): the sign of Σ_i w_i τ_ij (0 -> +); the w_i τ_ij that agree are
    // summed, coordinate by coordinate in model order, and so are their weights. Adding +0 for
    // one that does not agree leaves a sum as skipping it would.
    thread_local std::vector<double> sum, divisor;
    sum.assign(count, 0.0);
    divisor.assign(count, 0.0);
    for (const auto& ti : t)
        for (std::size_t j = 0; j < count; ++j) sum[j] += ti[j];
    for (std::size_t i = 0; i < k; ++i) {
        const double wi = w(i);
        const double* ti = t[i].data();
        for (std::size_t j = 0; j < count; ++j) {
            const double v = ti[j];
            const bool agrees = (v != 0.0) & ((v < 0.0) == (sum[j] < 0.0));  // no branch
            delta[j] += agrees ? v : 0.0;
            divisor[j] += agrees ? wi : 0.0;
        }
    }
    if (p.normalize != Normalize::mean) return;
    // Unit weights of at most two models make each divisor 0, 1 or 2: multiplying by 1 or 1/2
    // gives the division's number.
    bool unit = k <= 2;
    for (std::size_t i = 0; i < k; ++i) unit = unit && w(i) == 1.0;
    if (unit)
        for (std::size_t j = 0; j < count; ++j) delta[j] *= divisor[j] == 2.0 ? 0.5 : 1.0;
    else
        for (std::size_t j = 0; j < count; ++j) delta[j] /= divisor[j] == 0.0 ? 1.0 : divisor[j];
}

}  // namespace compatbench::merging
