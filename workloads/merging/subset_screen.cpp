// docs/methods.md §3.4: every subset's screening statistics from one pass.
#include "merging/subset_screen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>

namespace compatbench::merging {

namespace {

std::uint64_t choose(std::size_t n, std::size_t k) {
    std::uint64_t c = 1;
    for (std::size_t i = 1; i <= k; ++i) {
        c = c * (n - k + i) / i;
        if (c > (1ULL << 40)) return c;
    }
    return c;
}
}  // namespace

SubsetScreen::SubsetScreen(std::size_t models)
    : models_(models),
      gram_(Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(models),
                                  static_cast<Eigen::Index>(models))),
      abs_gram_(gram_),
      pair_conflicts_(gram_) {
    if (models < 2 || models > kMaxModels)
        throw std::invalid_argument("a subset screen takes 2 to " + std::to_string(kMaxModels) +
                                    " fine-tunes, not " + std::to_string(models));
    if (patterns_counted()) patterns_.assign(std::size_t{1} << (2 * models), 0);
    const std::size_t columns = (models + kTile - 1) / kTile * kTile;
    block_.assign(columns * kBlock, 0.0);
}

void SubsetScreen::add(TensorBlocks& in) {
    if (in.models() != models_)
        throw std::invalid_argument("a tensor of " + std::to_string(in.models()) +
                                    " models added to a screen of " + std::to_string(models_));
    const float* base = nullptr;
    std::vector<const float*> models(models_);  // read() fills one pointer per model
    for (std::size_t begin = 0; begin < in.numel(); begin += kBlock) {
        const std::size_t count = std::min(kBlock, in.numel() - begin);
        in.read(begin, count, base, models);
        add_block(base, models, count);
    }
}

void SubsetScreen::add_block(const float* base, const std::vector<const float*>& models,
                             std::size_t count) {
    const std::size_t lanes = (count + kLanes - 1) / kLanes * kLanes;  // zeros add nothing
    pos_.assign(count, 0);
    neg_.assign(count, 0);
    // Model by model (contiguous, vectorised): τ in float32 as the study's kernel and
    // the model's bit of each coordinate's sign pattern. Columns past M stay zero.
    for (std::size_t a = 0; a < models_; ++a) {
        const float* theta = models[a];
        double* tau = &block_[a * kBlock];
        const std::uint32_t bit = std::uint32_t{1} << a;
        for (std::size_t j = 0; j < count; ++j) {
            const float t = theta[j] - base[j];
            tau[j] = t;
            pos_[j] |= t > 0 ? bit : 0u;
            neg_[j] |= t < 0 ? bit : 0u;
        }
        std::fill(tau + count, tau + lanes, 0.0);
    }
    count_patterns(count);
    double base_sq = 0.0;
    for (std::size_t j = 0; j < count; ++j) base_sq += static_cast<double>(base[j]) * base[j];
    base_sq_ += base_sq;
    // The lower triangles of G += τᵀτ and A += |τ|ᵀ|τ| (sums() reads them so), a tile of
    // kTile × kTile column pairs at a time, |τ| taken as the tile is read.
    for (std::size_t a = 0; a < models_; a += kTile)
        for (std::size_t b = 0; b <= a; b += kTile) {
            const double *x = &block_[a * kBlock], *y = &block_[b * kBlock];
            if (a == b) {
                add_tile<true, false>(x, y, lanes, gram_, a, b);
                add_tile<true, true>(x, y, lanes, abs_gram_, a, b);
            } else {
                add_tile<false, false>(x, y, lanes, gram_, a, b);
                add_tile<false, true>(x, y, lanes, abs_gram_, a, b);
            }
        }
    count_ += count;
}

void SubsetScreen::count_patterns(std::size_t count) {
    const auto m = static_cast<Eigen::Index>(models_);
    for (std::size_t j = 0; j < count; ++j) {
        if (patterns_counted()) {
            ++patterns_[(static_cast<std::size_t>(pos_[j]) << models_) | neg_[j]];
            continue;
        }
        for (Eigen::Index x = 0; x < m; ++x)
            for (Eigen::Index y = x + 1; y < m; ++y)
                if (((pos_[j] >> x) & (neg_[j] >> y) & 1) || ((neg_[j] >> x) & (pos_[j] >> y) & 1))
                    pair_conflicts_(x, y) += 1;
    }
}

// G(a + r, b + c) += Σ_j x_r[j]·y_c[j] for the columns x_r = x + r·kBlock (y likewise), r, c
// < kTile, inside G; n a multiple of kLanes. Each (r, c) keeps kLanes partial sums in one
// vector (GCC/Clang vector extensions, as wide as the build's registers: see kLanes), so the
// kTile² accumulators stay in registers. A Diagonal tile
// (x = y) forms its lower triangle only; Abs sums |x_r[j]|·|y_c[j]| (the sign bits cleared).
template <bool Diagonal, bool Abs>
void SubsetScreen::add_tile(const double* x, const double* y, std::size_t n, Eigen::MatrixXd& g,
                            std::size_t a, std::size_t b) {
    using Lanes = double __attribute__((vector_size(kLanes * sizeof(double))));
    using Bits = std::uint64_t __attribute__((vector_size(kLanes * sizeof(double))));
    const Bits magnitude = Bits{} + ~(std::uint64_t{1} << 63);  // all but the sign bit
    Lanes acc[kTile][kTile] = {};
    for (std::size_t j = 0; j < n; j += kLanes) {
        Lanes xv[kTile], yv[kTile];
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kTile; ++r) {
            std::memcpy(&xv[r], x + r * kBlock + j, sizeof(Lanes));
            std::memcpy(&yv[r], y + r * kBlock + j, sizeof(Lanes));
            if constexpr (Abs) {
                xv[r] = reinterpret_cast<Lanes>(reinterpret_cast<Bits>(xv[r]) & magnitude);
                yv[r] = reinterpret_cast<Lanes>(reinterpret_cast<Bits>(yv[r]) & magnitude);
            }
        }
#pragma GCC unroll 4
        for (std::size_t r = 0; r < kTile; ++r)
#pragma GCC unroll 4
            for (std::size_t c = 0; c < kTile; ++c)
                if (!Diagonal || c <= r) acc[r][c] += xv[r] * yv[c];
    }
    for (std::size_t r = 0; r < kTile && a + r < models_; ++r)
        for (std::size_t c = 0; c < kTile && b + c <= a + r; ++c) {
            double sum = 0.0;
            for (std::size_t l = 0; l < kLanes; ++l) sum += acc[r][c][l];
            g(static_cast<Eigen::Index>(a + r), static_cast<Eigen::Index>(b + c)) += sum;
        }
}

double SubsetScreen::relative_norm(std::size_t a) const {
    if (a >= models_)
        throw std::invalid_argument("no model " + std::to_string(a) + " in the screen");
    const auto i = static_cast<Eigen::Index>(a);
    return base_sq_ > 0.0 ? std::sqrt(gram_(i, i) / base_sq_) : NAN;
}

InterferenceSums SubsetScreen::sums(const std::vector<std::size_t>& subset) const {
    const std::set<std::size_t> unique(subset.begin(), subset.end());
    if (subset.size() < 2 || unique.size() != subset.size() || *unique.rbegin() >= models_)
        throw std::invalid_argument("a subset is at least 2 distinct models of the screen");
    const double k = static_cast<double>(subset.size());
    double diag = 0.0, all = 0.0, all_abs = 0.0;
    std::size_t mask = 0;
    for (std::size_t a : subset) {
        mask |= std::size_t{1} << a;
        diag += gram_(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(a));
        for (std::size_t b : subset) {  // the lower triangles hold the sums
            const auto hi = static_cast<Eigen::Index>(std::max(a, b));
            const auto lo = static_cast<Eigen::Index>(std::min(a, b));
            all += gram_(hi, lo);
            all_abs += abs_gram_(hi, lo);
        }
    }
    InterferenceSums s;
    s.count = count_;
    s.interference = std::max(0.0, diag / k - all / (k * k));
    s.dispersion = std::clamp(diag / k - all_abs / (k * k), 0.0, s.interference);
    s.cancellation = s.interference - s.dispersion;
    if (patterns_counted()) {
        for (std::size_t p = 0; p < patterns_.size(); ++p)
            if (patterns_[p] && ((p >> models_) & mask) &&
                (p & ((std::size_t{1} << models_) - 1) & mask))
                s.sign_conflicts += patterns_[p];
    } else if (subset.size() == 2) {
        const auto [a, b] = std::minmax(subset[0], subset[1]);
        s.sign_conflicts = static_cast<std::uint64_t>(
            pair_conflicts_(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)));
    }
    return s;
}

std::vector<double> SubsetScreen::packed() const {
    std::vector<double> out(gram_.data(), gram_.data() + gram_.size());
    out.insert(out.end(), abs_gram_.data(), abs_gram_.data() + abs_gram_.size());
    out.insert(out.end(), pair_conflicts_.data(), pair_conflicts_.data() + pair_conflicts_.size());
    out.push_back(static_cast<double>(count_));
    out.push_back(base_sq_);
    for (auto c : patterns_) out.push_back(static_cast<double>(c));
    return out;
}

void SubsetScreen::add_packed(const std::vector<double>& values) {
    if (values.size() != packed().size())
        throw std::invalid_argument("a packed subset screen of another size");
    std::size_t at = 0;
    for (Eigen::MatrixXd* m : {&gram_, &abs_gram_, &pair_conflicts_})
        for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] += values[at++];
    count_ += static_cast<std::uint64_t>(values[at++]);
    base_sq_ += values[at++];
    for (auto& c : patterns_) c += static_cast<std::uint64_t>(values[at++]);
}

namespace {

RankedSubset ranked(const SubsetScreen& screen, std::vector<std::size_t> members, double coef) {
    std::sort(members.begin(), members.end());
    RankedSubset r{members, screen.sums(members), 0.0};
    r.score = screening_score(r.sums.mean_interference(), static_cast<int>(members.size()), coef);
    return r;
}

// Every k-subset of 0..m-1 in lexicographic order.
void each_subset(std::size_t m, std::size_t k,
                 const std::function<void(std::vector<std::size_t>)>& f) {
    std::vector<std::size_t> s(k);
    std::iota(s.begin(), s.end(), 0);
    while (true) {
        f(s);
        std::size_t i = k;
        while (i > 0 && s[i - 1] == m - k + i - 1) --i;
        if (i == 0) return;
        ++s[i - 1];
        for (std::size_t j = i; j < k; ++j) s[j] = s[j - 1] + 1;
    }
}

// From each pair, the model that keeps the score lowest added until k.
std::vector<RankedSubset> greedy(const SubsetScreen& screen, std::size_t k, double coef) {
    std::set<std::vector<std::size_t>> seen;
    std::vector<RankedSubset> out;
    each_subset(screen.models(), 2, [&](std::vector<std::size_t> s) {
        while (s.size() < k) {
            std::optional<RankedSubset> best;
            for (std::size_t c = 0; c < screen.models(); ++c) {
                if (std::find(s.begin(), s.end(), c) != s.end()) continue;
                auto with = s;
                with.push_back(c);
                auto r = ranked(screen, with, coef);
                if (!best || r.score < best->score) best = std::move(r);
            }
            s = best->members;
        }
        if (seen.insert(s).second) out.push_back(ranked(screen, s, coef));
    });
    return out;
}

}  // namespace

std::vector<RankedSubset> rank_subsets(const SubsetScreen& screen, std::size_t k, double coef,
                                       std::size_t limit) {
    if (k < 2 || k > screen.models())
        throw std::invalid_argument("a subset of " + std::to_string(k) + " of " +
                                    std::to_string(screen.models()) + " models");
    std::vector<RankedSubset> out;
    if (choose(screen.models(), k) > limit) {
        out = greedy(screen, k, coef);
    } else {
        each_subset(screen.models(), k,
                    [&](std::vector<std::size_t> s) { out.push_back(ranked(screen, s, coef)); });
    }
    std::stable_sort(out.begin(), out.end(), [](const RankedSubset& a, const RankedSubset& b) {
        return a.score < b.score;
    });
    return out;
}

}  // namespace compatbench::merging
