#include "merging/generalized.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "common/hash.h"
#include "merging/in_dtype.h"
#include "merging/last_pass.h"
#include "merging/selection.h"

namespace compatbench::merging {

namespace {

constexpr std::size_t kBlock = 2048;

double per_model(const std::vector<double>& v, std::size_t i, double fallback) {
    return v.empty() ? fallback : v.at(i);
}

void set_bit(std::vector<std::uint64_t>& bits, std::size_t j, bool on) {
    const std::uint64_t m = std::uint64_t{1} << (j & 63);
    bits[j >> 6] = on ? bits[j >> 6] | m : bits[j >> 6] & ~m;
}

// Bits [0, n) of `bits` set where the seeded draw of that coordinate (Draws: stream + j) lies
// below `rate`, 64 coordinates to a word, their draws 8 lanes at a time.
void random_bits(std::uint64_t stream, double rate, std::size_t n,
                 std::vector<std::uint64_t>& bits) {
    const std::uint64_t below = last_pass::draws_below(rate);
    using last_pass::V8u;
    for (std::size_t first = 0; first < n; first += 64) {
        std::uint64_t word = 0;
        for (std::size_t g = 0; g < 64; g += 8) {
            const V8u at = V8u{0, 1, 2, 3, 4, 5, 6, 7} + (stream + first + g);
            const V8u kept = (V8u)((last_pass::splitmix64_lanes(at) >> 11) < below) &
                             V8u{1, 2, 4, 8, 16, 32, 64, 128};
            std::uint64_t byte = 0;
            for (int l = 0; l < 8; ++l) byte |= kept[l];
            word |= byte << g;
        }
        const std::size_t valid = std::min<std::size_t>(64, n - first);
        const std::uint64_t mask =
            valid == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid) - 1;
        bits[first >> 6] = (bits[first >> 6] & ~mask) | (word & mask);
    }
}

// rank[c]: the 0-based ascending rank of mag(c) among the `cols` values of one fibre, ties
// to the lower index (a stable sort's). No value is negative, so their bit patterns order as
// they do: a stable LSD radix sort of the patterns, 8 bits a digit, skipping the digits
// that all share (the low ones of values from bfloat16, float16 or float32). With a NaN
// among them, the comparisons' stable sort, as before.
template <class Mag>
void ranks_of(std::size_t cols, Mag&& mag, std::vector<std::uint32_t>& rank) {
    thread_local std::vector<std::uint64_t> key, key_next;
    thread_local std::vector<std::uint32_t> col, col_next;
    key.resize(cols);
    key_next.resize(cols);
    col.resize(cols);
    col_next.resize(cols);
    std::array<std::array<std::uint32_t, 256>, 8> count{};
    bool nan = false;
    for (std::size_t c = 0; c < cols; ++c) {
        const double m = mag(c);
        nan |= std::isnan(m);
        std::memcpy(&key[c], &m, sizeof m);
        col[c] = static_cast<std::uint32_t>(c);
        for (int d = 0; d < 8; ++d) ++count[d][(key[c] >> (8 * d)) & 0xff];
    }
    if (nan) {
        std::stable_sort(col.begin(), col.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return mag(a) < mag(b); });
    } else {
        for (int d = 0; d < 8; ++d) {
            std::array<std::uint32_t, 256>& at = count[d];
            if (std::find(at.begin(), at.end(), cols) != at.end()) continue;  // one digit
            std::uint32_t start = 0;
            for (std::uint32_t& c : at) start += std::exchange(c, start);
            for (std::size_t e = 0; e < cols; ++e) {
                const std::uint32_t to = at[(key[e] >> (8 * d)) & 0xff]++;
                key_next[to] = key[e];
                col_next[to] = col[e];
            }
            key.swap(key_next);
            col.swap(col_next);
        }
    }
    for (std::size_t r = 0; r < cols; ++r) rank[col[r]] = static_cast<std::uint32_t>(r);
}

// DELLA (mergekit's della_magprune): along dimension 1 (the rows of a matrix; for an N-D
// tensor each fibre of fixed other indices, as torch's sort along dim 1 ranks),
// p_j = (d − ε) + 2ε·(rank_j − 1)/(d1 − 1), rank 1 for the smallest |τ| of the fibre (ties:
// the lower index ranks lower).
void della_bits(const MergeParams& p, const TensorScope& s, std::size_t i, std::size_t n,
                const std::vector<double>& mag, std::vector<std::uint64_t>& bits,
                const KeepProbability& keep) {
    const double d = density_of(p, i), e = per_model(p.epsilons, i, 0.15);
    if (d + e >= 1.0 || d - e <= 0.0)
        throw std::invalid_argument(s.name +
                                    ": DELLA needs density ± epsilon inside (0, 1), "
                                    "got density " +
                                    std::to_string(d) + ", epsilon " + std::to_string(e));
    const std::size_t cols = s.row_length, stride = std::max<std::size_t>(s.rank_stride, 1);
    if (cols == 0 || n % (cols * stride) != 0)
        throw std::invalid_argument(s.name +
                                    ": DELLA needs the tensor's shape to rank along "
                                    "dimension 1");
    const Draws draw(p, s.name, i);
    if (cols == 1 && p.della_lone_at_density) return random_bits(draw.stream, d, n, bits);
    if (cols < 2)
        throw std::invalid_argument(s.name +
                                    ": DELLA ranks along dimension 1, here of one coordinate "
                                    "(mergekit's rank ramp is 0/0 there)");
    std::vector<std::uint64_t> below(cols);  // each rank's keep probability, as an integer
    for (std::size_t r = 0; r < cols; ++r)
        below[r] = last_pass::draws_below(keep.della(r, cols, d, e));
    std::vector<std::uint32_t> rank(cols);
    for (std::size_t outer = 0; outer < n; outer += cols * stride) {
        for (std::size_t q = 0; q < stride; ++q) {
            const auto at = [&](std::size_t c) { return outer + c * stride + q; };
            ranks_of(
                cols, [&](std::size_t c) { return mag[at(c)]; }, rank);
            for (std::size_t c = 0; c < cols; ++c) {
                const std::size_t j = at(c);
                set_bit(bits, j, (splitmix64(draw.stream + j) >> 11) < below[rank[c]]);
            }
        }
    }
}

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

Draws::Draws(const MergeParams& p, const std::string& name, std::size_t i)
    : stream(p.seed ^ fnv1a64(name) ^ splitmix64(i + 1)) {}

double Draws::operator()(std::size_t j) const { return unit_double(splitmix64(stream + j)); }

double KeepProbability::della(std::size_t rank, std::size_t cols, double d, double e) const {
    return (d - e) + static_cast<double>(rank) / static_cast<double>(cols - 1) * 2.0 * e;
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
