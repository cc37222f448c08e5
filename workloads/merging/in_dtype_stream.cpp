// merge_streamed_in_dtype (in_dtype.h): mergekit's linear, generalized task arithmetic,
// model_stock, nearswap and passthrough in the dtype, as in_dtype.cpp's header says torch
// computes them, but streamed: a tensor is read a block at a time (with TIES, DARE and DELLA
// a selection pass per model first, with Model Stock a pass for its norms and dots), and each
// block is merged 8 coordinates at a time in float32 lanes, every result rounded to the dtype
// in registers (in_dtype.h's rounded), so memory stays at a few blocks, as in the exact mode.
// Per coordinate the operations, their order and their roundings are those of mergekit's
// torch code statement by statement (merge_methods/linear.py,
// generalized_task_arithmetic.py, sparsify.py, model_stock.py, nearswap.py, passthrough.py
// at commit a6e402884ba9bc30da7f23e8304a35f19485de95). Compiled with -ffp-contract=off.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "common/constant.h"
#include "merging/block_pass.h"
#include "merging/dtype_pass.h"
#include "merging/generalized.h"
#include "merging/in_dtype.h"
#include "merging/last_pass.h"
#include "merging/torch_like.h"

namespace compatbench::merging {

namespace {

using last_pass::load;
using torch_like::Torch;
using namespace dtype_lanes;

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

// What generalized task arithmetic does to model i's τ before mixing (sparsify.py, then the
// weight): the bits kept (null: all), and rescaled_masked_tensor's L1 factor.
struct TaskVector {
    float w = 1.0f;
    const std::uint64_t* bits = nullptr;
    bool sparsified = false, rescaled = false;
    bool factor_in_float32 = false;  // bernoulli's work dtype for a float16 tensor
    float factor = 1.0f;
};

// The selection pass of each sparsified model, then each model's TaskVector. bernoulli and
// della_magprune work in float32 for a float16 tensor (torch has no float16 bernoulli on
// the CPU).
std::vector<TaskVector> task_vectors(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                                     std::vector<Selection>& sel) {
    const Torch r{p.arithmetic};
    const bool random = p.sparsify == Sparsify::random || p.sparsify == Sparsify::della;
    const Torch w{random && r.a == Arithmetic::float16 ? Arithmetic::float32 : r.a};
    const KeepInDtype keep(w);
    sel = select(p, s, in, {p.arithmetic, &keep});
    std::vector<TaskVector> tv(in.models());
    for (std::size_t i = 0; i < tv.size(); ++i) {
        tv[i].w = r.number(p.weights.empty() ? 1.0 : p.weights.at(i));
        if (sel[i].all) continue;
        tv[i].sparsified = true;
        tv[i].bits = sel[i].bits.data();
        const float before = w(static_cast<float>(sel[i].l1)),
                    after = w(static_cast<float>(sel[i].kept_l1));
        tv[i].rescaled = p.rescale && before >= w.number(1e-7) && after >= w.number(1e-7);
        tv[i].factor = tv[i].rescaled ? w(before / after) : 1.0f;
        tv[i].factor_in_float32 = w.a == Arithmetic::float32;
    }
    return tv;
}

// Model i's bits of the 8 coordinates from j (j % 8 = 0) as lanes.
V8i kept_lanes(const std::uint64_t* bits, std::size_t j) {
    const auto byte = static_cast<int>((bits[j >> 6] >> (j & 63)) & 0xff);
    return ((V8i{} + byte) & V8i{1, 2, 4, 8, 16, 32, 64, 128}) != 0;
}

// generalized_task_arithmetic.py's GTATask.execute and get_mask(method="sum").
template <int K, Arithmetic A>
void gta(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
         TensorMergeStats& st) {
    std::vector<Selection> sel;
    const std::vector<TaskVector> tv = task_vectors(p, s, in, sel);
    const Torch r{A};
    float sum_w = 0.0f;
    for (const TaskVector& t : tv) sum_w += t.w;
    float divisor = r(sum_w);
    if (std::abs(divisor) < r.number(1e-8)) divisor = 1.0f;
    const bool mean = p.normalize == Normalize::mean, scaled = p.coef != 1.0;
    const auto coef = static_cast<float>(p.coef);
    const double inverse_d = exact_inverse(divisor);  // a float's: 2^−126 .. 2^127
    const float inverse = std::abs(inverse_d) >= 0x1p-126 && std::abs(inverse_d) <= 0x1p127
                              ? static_cast<float>(inverse_d)
                              : 0.0f;
    const auto within = [](double x, double lo) {
        return x == 0.0 || (std::abs(x) >= lo && std::abs(x) <= 0x1p10);
    };
    bool bounded =
        tv.size() <= 8 && within(p.coef, 0.0) && (p.consensus || !mean || within(divisor, 0x1p-10));
    for (const TaskVector& v : tv)
        bounded = bounded && within(v.w, 0x1p-10) && within(v.factor, 0.0);
    dtype_pass<K, A>(
        in, out, st, bounded, [&](std::size_t j, const V8f& rb, ModelLanes<K>& tau, auto nan_free) {
            // With inputs below 2^32 and these bounds every value stays below 2^100: no NaN.
            const auto rounded = [](const V8f& v) {
                return merging::rounded<A, decltype(nan_free)::value>(v);
            };
            for (std::size_t i = 0; i < tau.size(); ++i) {  // the values become weighted τ
                V8f t = rounded(tau[i] - rb);
                const TaskVector& v = tv[i];
                if (v.sparsified) {  // the mask applied as tau · 0, so −0 stays −0
                    if (v.bits) t = choose(kept_lanes(v.bits, j), t, t * 0.0f);
                    if (v.rescaled) t = v.factor_in_float32 ? t * v.factor : rounded(t * v.factor);
                    t = rounded(t);
                }
                tau[i] = v.w == 1.0f ? t : rounded(t * v.w);  // t · 1 is t, already rounded
            }
            V8f mixed = {}, div = V8f{} + divisor;
            if (p.consensus) {
                V8f sign_weight = {};
                for (std::size_t i = 0; i < tau.size(); ++i) sign_weight += tau[i];
                const V8i negative = rounded(sign_weight) < 0.0f;  // the majority sign, + for 0
                div = V8f{};
                for (std::size_t i = 0; i < tau.size(); ++i) {
                    const V8i agrees = (tau[i] != 0.0f) & ((tau[i] < 0.0f) == negative);
                    mixed += masked(tau[i], agrees);
                    div += masked(V8f{} + tv[i].w, agrees);
                }
                div = rounded(div);
                div = choose(div == 0.0f, V8f{} + 1.0f, div);
            } else {
                for (std::size_t i = 0; i < tau.size(); ++i) mixed += tau[i];
            }
            mixed = rounded(mixed);
            if (mean && inverse != 0.0f && !p.consensus)  // x / 2^e is x · 2^−e, to the bit
                mixed = rounded(mixed * inverse);
            else if (mean)
                mixed = rounded(mixed / div);
            if (scaled) mixed = rounded(mixed * coef);
            return rounded(rb + mixed);
        });
}

// linear.py: (weights · tensors).sum(0), divided by weights.sum(0) with `normalize`.
template <int K, Arithmetic A>
void linear(const MergeParams& p, TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    const Torch r{A};
    std::vector<float> w(in.models());
    float total = 0.0f;
    for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] = r.number(p.weights.empty() ? 1.0 : p.weights.at(i));
        total += w[i];
    }
    total = r(total);
    const bool mean = p.normalize == Normalize::mean;
    dtype_pass<K, A>(in, out, st, false, [&](std::size_t, const V8f&, ModelLanes<K>& x, auto) {
        V8f sum = {};
        for (std::size_t i = 0; i < x.size(); ++i) sum += rounded<A>(w[i] * x[i]);
        return mean ? rounded<A>(rounded<A>(sum) / total) : rounded<A>(sum);
    });
}

// nearswap.py: weight = (t / |a − b|.clamp(min=1e-6)).clamp(0, 1); w·b + (1 − w)·a.
template <Arithmetic A>
void nearswap(const MergeParams& p, TensorBlocks& in, const BlockSink& out, TensorMergeStats& st) {
    const Torch r{A};
    const float floor = r.number(1e-6), t = static_cast<float>(p.t);
    dtype_pass<0, A>(in, out, st, false, [&](std::size_t, const V8f& a, ModelLanes<0>& x, auto) {
        const V8f b = x[0], diff = rounded<A>(a - b);
        V8f absdiff = rounded<A>((V8f)((V8i)diff & 0x7fffffff));
        absdiff = choose(absdiff < floor, V8f{} + floor, absdiff);  // std::max(x, floor)
        V8f weight = rounded<A>(rounded<A>(1.0f / absdiff) * t);    // std::clamp(w, 0, 1)
        weight = choose(weight < 0.0f, V8f{}, weight);
        weight = choose(1.0f < weight, V8f{} + 1.0f, weight);
        return rounded<A>(rounded<A>(weight * b) + rounded<A>(rounded<A>(1.0f - weight) * a));
    });
}

// passthrough.py: tensor · scale (the scale a Python number).
template <Arithmetic A>
void passthrough(const MergeParams& p, TensorBlocks& in, const BlockSink& out,
                 TensorMergeStats& st) {
    const auto scale = static_cast<float>(p.scale);
    const bool scaled = p.scale != 1.0;
    dtype_pass<0, A>(in, out, st, false, [&](std::size_t, const V8f&, ModelLanes<0>& x, auto) {
        return scaled ? rounded<A>(x[0] * scale) : x[0];
    });
}

// Model Stock's t and 1 − t for each row: with filter_wise the rows of the last dimension,
// else the whole tensor as one.
struct StockRows {
    std::size_t row = 1;
    std::vector<float> t, rest;
};

// model_stock.py after its norms and dots of one row: t from the mean cosine of every pair of
// offsets (torch.norm in float32, their product clamped at 1e-6, each cosine to [−1, 1]).
template <class Sq, class Dot>
void add_stock_row(Torch r, const Sq& sq, const Dot& dot, StockRows& rows) {
    const std::size_t k = sq.size();
    std::vector<float> norm(k);
    for (std::size_t i = 0; i < k; ++i)
        norm[i] = r(static_cast<float>(std::sqrt(static_cast<double>(static_cast<float>(sq[i])))));
    float cos_sum = 0.0f;
    for (std::size_t i = 0, d = 0; i < k; ++i)
        for (std::size_t q = i + 1; q < k; ++q, ++d) {
            const float product = std::max(r(norm[i] * norm[q]), r.number(1e-6));
            cos_sum += std::clamp(r(r(static_cast<float>(dot[d])) / product), -1.0f, 1.0f);
        }
    const auto pairs = static_cast<double>(k * (k - 1) / 2), models = static_cast<double>(k);
    const float cos = r.over(cos_sum, pairs);  // stack(cos_thetas).mean(dim=0)
    const float t = r(r.times(cos, models) / r(1.0f + r.times(cos, models - 1.0)));
    rows.t.push_back(t);
    rows.rest.push_back(r(1.0f - t));
}

// The first pass of Model Stock: per row, ‖r(θ_i − θ0)‖² and the dots r(o_i · o_q) of the
// offsets o, in double, each one running sum in coordinate order (of 8 coordinates rounded
// at a time in lanes). Offsets of inputs below 2^32 and their products cannot be NaN
// (with_block_kind's bound).
template <int K, Arithmetic A>
StockRows stock_rows(const MergeParams& p, const TensorScope& s, TensorBlocks& in) {
    const std::size_t n = in.numel(), k = in.models(), pairs = k * (k - 1) / 2;
    StockRows rows;
    rows.row = p.filter_wise && s.last_dim > 0 ? s.last_dim : std::max<std::size_t>(n, 1);
    constexpr int kPairs = K * (K - 1) / 2;
    Few<double, K> sq_all(k);
    Few<double, kPairs> dot_all(pairs);
    std::size_t left_all = rows.row;  // of the current row, the coordinates still to come
    const auto end_row = [&](Few<double, K> sq, Few<double, kPairs> dot) {
        add_stock_row(Torch{A}, sq, dot, rows);
    };
    const auto block = [&](std::size_t count, const float* base, const auto& x, auto round_inputs,
                           auto nan_free) {
        const auto r = [](const V8f& v) { return rounded<A, decltype(nan_free)::value>(v); };
        const auto input = [&](const V8f& v) { return round_inputs ? rounded<A>(v) : v; };
        Few<double, K> sq = sq_all;  // locals for the loop: in registers
        Few<double, kPairs> dot = dot_all;
        ModelLanes<K> off(k);
        Few<V8f, kPairs> prod(pairs);  // the rounded products r(o_i · o_q)
        std::size_t left = left_all;
        for (std::size_t j = 0; j < count; j += 8) {
            const std::size_t n8 = std::min<std::size_t>(8, count - j);
            const V8f rb = input(load<V8f>(base + j, n8));
            for (std::size_t i = 0; i < off.size(); ++i)
                off[i] = r(input(load<V8f>(x[i] + j, n8)) - rb);
            for (std::size_t i = 0, d = 0; i < off.size(); ++i)
                for (std::size_t q = i + 1; q < off.size(); ++q, ++d) prod[d] = r(off[i] * off[q]);
            for (std::size_t l = 0; l < n8; ++l) {
                for (std::size_t i = 0; i < off.size(); ++i)
                    sq[i] += static_cast<double>(off[i][l]) * off[i][l];
                for (std::size_t d = 0; d < prod.size(); ++d) dot[d] += prod[d][l];
                if (--left > 0) continue;
                end_row(sq, dot);  // copies: the sums themselves stay in registers
                sq = Few<double, K>(k);
                dot = Few<double, kPairs>(pairs);
                left = rows.row;
            }
        }
        sq_all = sq;
        dot_all = dot;
        left_all = left;
    };
    last_pass::read_blocks(
        in, blocks::kBlock, [&](std::size_t, std::size_t count, const float* base, const auto& x) {
            with_block_kind<A>(base, x, count, true, [&](auto round_inputs, auto nan_free) {
                block(count, base, x, round_inputs, nan_free);
            });
        });
    if (left_all != rows.row) end_row(sq_all, dot_all);  // a last, short row
    return rows;
}

// model_stock.py: t · mean θ_i + (1 − t) · θ0, with t of the coordinate's row.
template <int K, Arithmetic A>
void model_stock(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                 TensorMergeStats& st) {
    const StockRows rows = stock_rows<K, A>(p, s, in);
    const auto models = static_cast<float>(in.models());
    const std::size_t last = rows.t.empty() ? 0 : rows.t.size() - 1;
    bool bounded = in.models() <= 1024;  // with |t|, |1 − t| ≤ 2^10 every value stays finite
    for (std::size_t r = 0; r < rows.t.size(); ++r)
        bounded = bounded && std::abs(rows.t[r]) <= 0x1p10f && std::abs(rows.rest[r]) <= 0x1p10f;
    dtype_pass<K, A>(
        in, out, st, bounded, [&](std::size_t j, const V8f& rb, ModelLanes<K>& x, auto nan_free) {
            const auto r = [](const V8f& v) { return rounded<A, decltype(nan_free)::value>(v); };
            const std::size_t first = std::min(j / rows.row, last);
            V8f t = V8f{} + rows.t[first], rest = V8f{} + rows.rest[first];
            if (first < last && j % rows.row + 8 > rows.row) {  // a row ends within the 8
                for (std::size_t l = 1; l < 8; ++l) {  // a tail's lanes past the last row: its t
                    const std::size_t row = std::min((j + l) / rows.row, last);
                    t[l] = rows.t[row];
                    rest[l] = rows.rest[row];
                }
            }
            V8f sum = x[0];  // Python's sum(ws): 0 + w_1 + w_2 + …
            for (std::size_t i = 1; i < x.size(); ++i) sum = r(sum + x[i]);
            return r(r(t * r(sum / models)) + r(rest * rb));
        });
}

// Calls method(K) with K = k models for 1 <= k <= 4 (the loops over them unrolled), else
// with K = 0.
template <class F>
void with_models(std::size_t k, F&& method) {
    if (!with_constant<4>(k, method)) method(std::integral_constant<int, 0>{});
}

}  // namespace

bool merge_streamed_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                             const BlockSink& out, TensorMergeStats& st) {
    bool streamed = true;
    with_dtype(p.arithmetic, [&](auto A) {
        const std::size_t k = in.models();
        switch (p.method) {
            case Method::task_arithmetic:
            case Method::generalized:
                return with_models(k, [&](auto K) { gta<K(), A()>(p, s, in, out, st); });
            case Method::linear:
                return with_models(k, [&](auto K) { linear<K(), A()>(p, in, out, st); });
            case Method::model_stock:
                return with_models(k, [&](auto K) { model_stock<K(), A()>(p, s, in, out, st); });
            case Method::nearswap:
                return nearswap<A()>(p, in, out, st);
            case Method::passthrough:
                return passthrough<A()>(p, in, out, st);
            default:
                streamed = false;
        }
    });
    return streamed;
}

}  // namespace compatbench::merging
