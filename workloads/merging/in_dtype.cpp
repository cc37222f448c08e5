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
        case Method::sce:
            return sce(p, r, v);
        case Method::ram:
        case Method::ramplus_tl:
        case Method::arcee_fusion:
            return ram_fusion(p, s, r, v);
        case Method::multislerp:
        case Method::nuslerp:
        case Method::karcher:
            return exact_then_rounded(p, s, r, v);
        default:
            throw std::invalid_argument(s.name + ": " + method_name(p.method) +
                                        " has no arithmetic in a dtype (mergekit's methods only)");
    }
}

// slerp_dots in the dtype A: a group of 8 coordinates rounded and multiplied in lanes, their
// products then added one by one (a serial sum in coordinate order, as the exact passes sum
// every dot; tail lanes past the tensor hold +0 and leave the sums as they are).
template <Arithmetic A>
SlerpDots dots_in(TensorBlocks& in) {
    SlerpDots d;
    V8i changed = {};
    last_pass::read_blocks(
        in, blocks::kBlock, [&](std::size_t, std::size_t count, const float*, const auto& x) {
            for (std::size_t j = 0; j < count; j += 8) {
                const std::size_t n = std::min<std::size_t>(8, count - j);
                const V8f a = last_pass::load<V8f>(x[0] + j, n);
                const V8f b = last_pass::load<V8f>(x[1] + j, n);
                const V8f ra = rounded<A>(a), rb = rounded<A>(b);
                changed |= (ra != a) | (rb != b);  // a NaN too
                const V8d da = widen(ra), db = widen(rb);
                const V8d aa = da * da, bb = db * db, ab = da * db;  // exact in double
                for (int l = 0; l < 8; ++l) {
                    d.aa += aa[l];
                    d.bb += bb[l];
                    d.ab += ab[l];
                }
            }
        });
    for (int l = 0; l < 8; ++l) d.changed = d.changed || changed[l] != 0;
    return d;
}

}  // namespace

SlerpDots slerp_dots(Arithmetic a, TensorBlocks& in) {
    SlerpDots d;
    with_dtype(a, [&](auto A) { d = dots_in<A()>(in); });
    return d;
}

TensorMergeStats merge_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                                const BlockSink& out, Sums sums) {
    TensorMergeStats st;  // against the stored θ0 and θ_i
    st.sums = sums;
    st.numel = in.numel();
    if (merge_streamed_in_dtype(p, s, in, out, st)) return st;
    const Torch r{p.arithmetic};
    Inputs& v = load(in, r);
    const Values theta = merged(p, s, r, v);  // the stored θ0 and θ_i read again below
    blocks::array_pass(in, out, st, [&](blocks::Block& b) {
        std::copy_n(theta.begin() + static_cast<std::ptrdiff_t>(b.begin), b.count, b.theta.begin());
    });
    return st;
}

}  // namespace compatbench::merging
