// merge_in_dtype (in_dtype.h). Each function follows one of mergekit's torch functions
// statement by statement; `r(...)` marks where torch rounds a result to the dtype. What torch
// 2's CPU kernels do (mergekit requires torch 2), and this file repeats: a tensor multiplied
// or divided by a Python number takes the number in float32 (BinaryOpsKernel.cpp's
// mul_kernel and div_true_kernel: `original_scalar_value<opmath_t>`), while an addition,
// subtraction, clamp or fill rounds the number to the dtype first; `number / tensor` is
// `tensor.reciprocal() * number`; a sum over the models, or over a tensor, accumulates in
// float32 and is rounded once; `mean` is that float32 sum divided by the count in float32,
// rounded once (torch 2.2 on: ReduceOps.cpp's mean_out); a comparison with a number takes
// the number in the dtype.
// tests/mergekit/torch_reference.py checks it against torch itself. Compiled with
// -ffp-contract=off: no product and sum may fuse.
#include "merging/in_dtype.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include "formats/half.h"
#include "merging/block_pass.h"
#include "merging/generalized.h"
#include "merging/mergekit_kernels.h"
#include "merging/ram_fusion.h"
#include "merging/selection.h"
#include "merging/torch_like.h"

namespace compatbench::merging {

namespace {

using torch_like::Inputs;
using torch_like::reduced;
using torch_like::Torch;
using torch_like::Values;

// Into buffers kept for the next tensor (no fresh pages to fault in for each one).
Inputs& load(TensorBlocks& in, Torch r) {
    const std::size_t n = in.numel(), k = in.models();
    thread_local Inputs v;
    v.base.resize(n);
    v.x.resize(k);
    for (Values& x : v.x) x.resize(n);
    last_pass::read_blocks(
        in, blocks::kBlock,
        [&](std::size_t begin, std::size_t count, const float* base, const auto& x) {
            for (std::size_t j = 0; j < count; ++j) v.base[begin + j] = r(base[j]);
            for (std::size_t i = 0; i < k; ++i)
                for (std::size_t j = 0; j < count; ++j) v.x[i][begin + j] = r(x[i][j]);
        });
    return v;
}

// a.abs().sum() of a whole tensor, as torch reduces it (torch_like::reduced).
float l1(Torch r, const Values& a) {
    return reduced(r, 0, a.size(), [&](std::size_t j) { return double{std::abs(a[j])}; });
}

// The keep probabilities as sparsify.py computes them in its work dtype: `full_like(density)`,
// and DELLA's ranks (rounded: a bfloat16 rank above 256 is not exact), their ramp and probs.
struct KeepInDtype final : KeepProbability {
    Torch r;
    explicit KeepInDtype(Torch w) : r(w) {}
    double random(double density) const override { return r.number(density); }
    double della(std::size_t rank, std::size_t cols, double d, double e) const override {
        // argsort(argsort).to(work_dtype) + 1: the rank rounded, then 1 added in the dtype.
        const float ranks = r(r(static_cast<float>(rank)) + 1.0f), lo = 1.0f,
                    hi = r(r(static_cast<float>(cols - 1)) + 1.0f);
        const float norm = std::clamp(r(r(ranks - lo) / r(hi - lo)), 0.0f, 1.0f);
        return r(r.number(d - e) + r.times(r.times(norm, 2.0), e));
    }
};

// sparsify.py on task vector i: the mask applied (tau · 0 where dropped, so −0 stays −0)
// and, with `rescale`, rescaled_masked_tensor's L1 factor. bernoulli and della_magprune work
// in float32 for a float16 tensor (torch has no float16 bernoulli on the CPU).
void sparsify(const MergeParams& p, const TensorScope& s, Torch r, std::size_t i, Values& tau) {
    const double density = density_of(p, i);
    if (p.sparsify == Sparsify::none || density >= 1.0) return;
    const bool random = p.sparsify == Sparsify::random || p.sparsify == Sparsify::della;
    const Torch w{random && r.a == Arithmetic::float16 ? Arithmetic::float32 : r.a};
    const std::size_t n = tau.size();
    if (p.sparsify == Sparsify::della && density <= 0.0)
        return std::fill(tau.begin(), tau.end(), 0.0f);
    std::vector<double>& mag = magnitudes(n);
    for (std::size_t j = 0; j < n; ++j) mag[j] = std::abs(tau[j]);
    Selection keep{false, 1.0, std::vector<std::uint64_t>((n + 63) / 64, 0)};
    select_bits(p, s, i, n, mag, keep.bits, KeepInDtype(w));
    const float before = p.rescale ? l1(w, tau) : 0.0f;
    for (std::size_t j = 0; j < n; ++j)
        if (!keep.kept(j)) tau[j] *= 0.0f;
    if (p.rescale) {
        const float after = l1(w, tau);
        if (before >= w.number(1e-7) && after >= w.number(1e-7)) {
            const float factor = w(before / after);
            for (float& t : tau) t = w(t * factor);
        }
    }
    for (float& t : tau) t = r(t);
}

// generalized_task_arithmetic.py's GTATask.execute and get_mask(method="sum").
Values gta(const MergeParams& p, const TensorScope& s, Torch r, Inputs& v) {
    const std::size_t n = v.n(), k = v.x.size();
    std::vector<float> w(k);
    for (std::size_t i = 0; i < k; ++i) {
        w[i] = r.number(p.weights.empty() ? 1.0 : p.weights.at(i));
        Values& tau = v.x[i];  // the model's values become its weighted task vector
        for (std::size_t j = 0; j < n; ++j) tau[j] = r(tau[j] - v.base[j]);
        sparsify(p, s, r, i, tau);
        for (float& t : tau) t = r(t * w[i]);
    }
    Values theta(n);
    for (std::size_t j = 0; j < n; ++j) {
        float mixed = 0.0f, divisor = 0.0f;
        if (p.consensus) {
            float sign_weight = 0.0f;
            for (std::size_t i = 0; i < k; ++i) sign_weight += v.x[i][j];
            const bool negative = r(sign_weight) < 0.0f;  // the majority sign, + for 0
            for (std::size_t i = 0; i < k; ++i) {
                const float t = v.x[i][j];
                const bool agrees = t != 0.0f && (t < 0.0f) == negative;
                mixed += agrees ? t : 0.0f;
                divisor += agrees ? w[i] : 0.0f;
            }
            divisor = r(divisor);
            if (divisor == 0.0f) divisor = 1.0f;
        } else {
            for (std::size_t i = 0; i < k; ++i) mixed += v.x[i][j];
            for (std::size_t i = 0; i < k; ++i) divisor += w[i];
            divisor = r(divisor);
            if (std::abs(divisor) < r.number(1e-8)) divisor = 1.0f;
        }
        mixed = r(mixed);
        if (p.normalize == Normalize::mean) mixed = r(mixed / divisor);
        if (p.coef != 1.0) mixed = r.times(mixed, p.coef);
        theta[j] = r(v.base[j] + mixed);
    }
    return theta;
}

// linear.py: (weights · tensors).sum(0), divided by weights.sum(0) with `normalize`.
Values linear(const MergeParams& p, Torch r, const Inputs& v) {
    const std::size_t n = v.n(), k = v.x.size();
    std::vector<float> w(k);
    float total = 0.0f;
    for (std::size_t i = 0; i < k; ++i) {
        w[i] = r.number(p.weights.empty() ? 1.0 : p.weights.at(i));
        total += w[i];
    }
    total = r(total);
    Values theta(n);
    for (std::size_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (std::size_t i = 0; i < k; ++i) sum += r(w[i] * v.x[i][j]);
        theta[j] = p.normalize == Normalize::mean ? r(r(sum) / total) : r(sum);
    }
    return theta;
}

// nearswap.py: weight = (t / |a − b|.clamp(min=1e-6)).clamp(0, 1); w·b + (1 − w)·a.
Values nearswap(const MergeParams& p, Torch r, const Inputs& v) {
    const float floor = r.number(1e-6);
    Values theta(v.n());
    for (std::size_t j = 0; j < v.n(); ++j) {
        const float a = v.base[j], b = v.x[0][j];
        const float absdiff = std::max(r(std::abs(r(a - b))), floor);
        const float weight = std::clamp(r.times(r(1.0f / absdiff), p.t), 0.0f, 1.0f);
        theta[j] = r(r(weight * b) + r(r(1.0f - weight) * a));
    }
    return theta;
}

// passthrough.py: tensor · scale (the scale a Python number).
Values passthrough(const MergeParams& p, Torch r, const Inputs& v) {
    Values theta(v.x[0]);
    if (p.scale != 1.0)
        for (float& x : theta) x = r.times(x, p.scale);
    return theta;
}

// sce.py's sce_merge: sce_mask (torch.var over the models, the ⌊nnz · select_topk⌋ largest,
// ties to the lower index), get_mask's sign election and sce_weight (mean τ², normalised).
Values sce(const MergeParams& p, Torch r, Inputs& v) {
    const std::size_t n = v.n(), k = v.x.size();
    for (Values& tau : v.x)
        for (std::size_t j = 0; j < n; ++j) tau[j] = r(tau[j] - v.base[j]);
    if (p.select_topk < 1.0) {
        Selection keep{false, 1.0, std::vector<std::uint64_t>((n + 63) / 64, 0)};
        std::vector<double>& var = magnitudes(n);
        for (std::size_t j = 0; j < n; ++j) {
            double mean = 0.0, sq = 0.0;
            for (const Values& tau : v.x) mean += tau[j];
            mean /= static_cast<double>(k);
            for (const Values& tau : v.x) sq += (tau[j] - mean) * (tau[j] - mean);
            var[j] = r(static_cast<float>(sq / static_cast<double>(k)));
        }
        if (p.select_topk > 0.0) mark_largest_variances(p, var, n, keep);
        for (Values& tau : v.x)
            for (std::size_t j = 0; j < n; ++j)
                if (!keep.kept(j)) tau[j] *= 0.0f;
    }
    std::vector<float> weight(k);
    float total = 0.0f;
    for (std::size_t i = 0; i < k; ++i) {
        double sq = 0.0;
        for (const float t : v.x[i]) sq += r(t * t);
        weight[i] = r.over(static_cast<float>(sq), static_cast<double>(n));  // mean
        total += weight[i];
    }
    total = r(total);
    for (float& w : weight)
        w = std::abs(double{total}) < 1e-6 ? r.over(1.0f, static_cast<double>(k))  // .item()
                                           : r.over(w, total);
    const float floor = r.number(1e-6);
    Values theta(n);
    for (std::size_t j = 0; j < n; ++j) {
        float sign_weight = 0.0f, merged = 0.0f, divisor = 0.0f;
        for (const Values& tau : v.x) sign_weight += tau[j];
        const bool negative = r(sign_weight) < 0.0f;
        for (std::size_t i = 0; i < k; ++i) {
            const float t = v.x[i][j];
            const float erased = t != 0.0f && (t < 0.0f) == negative ? weight[i] : 0.0f;
            merged += r(t * erased);
            divisor += erased;
        }
        theta[j] = r(v.base[j] + r(r(merged) / std::max(r(divisor), floor)));
    }
    return theta;
}

// model_stock.py on the coordinates [begin, end) (the whole tensor, or with filter_wise one
// row of its last dimension): t from the mean cosine of every pair of offsets θ_i − θ0
// (torch.norm, their product clamped at 1e-6), then t · mean θ_i + (1 − t) · θ0.
void model_stock_row(Torch r, const Inputs& v, const std::vector<Values>& off, std::size_t begin,
                     std::size_t end, Values& theta) {
    const std::size_t k = off.size();
    std::vector<float> norm(k);
    for (std::size_t i = 0; i < k; ++i)
        norm[i] = r(static_cast<float>(std::sqrt(
            static_cast<double>(reduced(Torch{Arithmetic::float32}, begin, end, [&](std::size_t j) {
                return double{off[i][j]} * off[i][j];
            })))));
    float cos_sum = 0.0f;
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t q = i + 1; q < k; ++q) {
            const float dot = reduced(r, begin, end, [&](std::size_t j) {
                return static_cast<double>(r(off[i][j] * off[q][j]));
            });
            const float product = std::max(r(norm[i] * norm[q]), r.number(1e-6));
            cos_sum += std::clamp(r(dot / product), -1.0f, 1.0f);
        }
    const auto pairs = static_cast<double>(k * (k - 1) / 2), models = static_cast<double>(k);
    const float cos = r.over(cos_sum, pairs);  // stack(cos_thetas).mean(dim=0)
    const float t = r(r.times(cos, models) / r(1.0f + r.times(cos, models - 1.0)));
    const float rest = r(1.0f - t);
    for (std::size_t j = begin; j < end; ++j) {
        float sum = v.x[0][j];  // Python's sum(ws): 0 + w_1 + w_2 + …
        for (std::size_t i = 1; i < k; ++i) sum = r(sum + v.x[i][j]);
        theta[j] = r(r(t * r.over(sum, models)) + r(rest * v.base[j]));
    }
}

Values model_stock(const MergeParams& p, const TensorScope& s, Torch r, const Inputs& v) {
    const std::size_t n = v.n();
    std::vector<Values> off(v.x.size(), Values(n));
    for (std::size_t i = 0; i < off.size(); ++i)
        for (std::size_t j = 0; j < n; ++j) off[i][j] = r(v.x[i][j] - v.base[j]);
    const std::size_t row =
        p.filter_wise && s.last_dim > 0 ? s.last_dim : std::max<std::size_t>(n, 1);
    Values theta(n);
    for (std::size_t begin = 0; begin < n; begin += row)
        model_stock_row(r, v, off, begin, std::min(n, begin + row), theta);
    return theta;
}

// Any other method: the exact arithmetic on the inputs in the dtype, rounded to it.
Values exact_then_rounded(const MergeParams& p, const TensorScope& s, Torch r, const Inputs& v) {
    MergeParams q = p;
    q.arithmetic = Arithmetic::exact;
    Values theta(v.n());
    const auto models = v.models();
    merge_tensor(q, s, v.base, models, theta);
    for (float& x : theta) x = r(x);
    return theta;
}

Values merged(const MergeParams& p, const TensorScope& s, Torch r, Inputs& v) {
    switch (p.method) {
        case Method::task_arithmetic:
        case Method::generalized:
            return gta(p, s, r, v);
        case Method::linear:
            return linear(p, r, v);
        case Method::nearswap:
            return nearswap(p, r, v);
        case Method::passthrough:
            return passthrough(p, r, v);
        case Method::sce:
            return sce(p, r, v);
        case Method::model_stock:
            return model_stock(p, s, r, v);
        case Method::ram:
        case Method::ramplus_tl:
        case Method::arcee_fusion:
            return ram_fusion(p, s, r, v);
        case Method::slerp:
        case Method::multislerp:
        case Method::nuslerp:
        case Method::karcher:
            return exact_then_rounded(p, s, r, v);
        default:
            throw std::invalid_argument(s.name + ": " + method_name(p.method) +
                                        " has no arithmetic in a dtype (mergekit's methods only)");
    }
}

}  // namespace

TensorMergeStats merge_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                                const BlockSink& out, Sums sums) {
    const Torch r{p.arithmetic};
    Inputs& v = load(in, r);
    const Values theta = merged(p, s, r, v);
    TensorMergeStats st;  // against the stored θ0 and θ_i, read again
    st.sums = sums;
    st.numel = in.numel();
    blocks::array_pass(in, out, st, [&](blocks::Block& b) {
        std::copy_n(theta.begin() + static_cast<std::ptrdiff_t>(b.begin), b.count, b.theta.begin());
    });
    return st;
}

}  // namespace compatbench::merging
