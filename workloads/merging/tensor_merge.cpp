// merge_tensor (operators.h): each operator of methods.md §3.2 as passes over a tensor's
// blocks. Per coordinate j the arithmetic is that of the definitions, in double, on
// τ_ij = θ_ij − θ0_j; every sum over coordinates runs in coordinate order, so the result
// does not depend on the block size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "common/constant.h"
#include "common/lanes.h"
#include "merging/block_pass.h"
#include "merging/generalized.h"
#include "merging/in_dtype.h"
#include "merging/iso_c.h"
#include "merging/last_pass.h"
#include "merging/mergekit_kernels.h"
#include "merging/operators.h"
#include "merging/ram_fusion.h"
#include "merging/selection.h"
#include "merging/tsv.h"

namespace compatbench::merging {

namespace {

using blocks::array_pass;
using blocks::Block;
using blocks::for_blocks;
using blocks::from_delta;
using blocks::kBlock;
using blocks::tau_dots;

// What a first pass sums over the coordinates, for the operators that need a tensor-wide
// quantity before merging (SLERP, Model Stock, the PRISM family).
struct FirstPass {
    double mean_tau_sq = 0.0;  // ‖τ̄‖² (norm-matched only)
    double sum_var = 0.0;      // PRISM: Σ_j max(0, mean_i τ_ij² − τ̄_j²)
    std::vector<double> dots;  // SLERP: θ1·θ1, θ2·θ2, θ1·θ2; Model Stock: τ_i·τ_q, i <= q
};

bool needs_first_pass(const MergeParams& p) {
    return p.method == Method::slerp || (p.method == Method::model_stock && !p.filter_wise) ||
           reads_merge_rho(p.method);
}

// Σ_j a_j b_j over one block, continuing `s`.
inline void add_dot(double& s, const double* a, const double* b, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) s += a[j] * b[j];
}

// `magnitudes`: also keep |τ̄_j| of every coordinate (merging::magnitudes) for PRISM's
// keep-rate floor, so that it needs no pass of its own over the inputs.
// `kernels`: Model Stock's dots in one loop (tau_dots) or, as for more than 8 models, one
// loop each.
FirstPass first_pass(const MergeParams& p, TensorBlocks& in, bool keep_magnitudes,
                     Kernels kernels) {
    const std::size_t k = in.models();
    const bool slerp = p.method == Method::slerp, stock = p.method == Method::model_stock;
    FirstPass f;
    if (slerp) {
        const SlerpDots d = slerp_dots(Arithmetic::exact, in);
        f.dots = {d.aa, d.bb, d.ab};
        return f;
    }
    f.dots.assign(stock ? k * (k + 1) / 2 : 0, 0.0);
    if (stock && kernels == Kernels::fused &&
        with_constant<8>(k, [&](auto K) { tau_dots<K()>(in, f.dots.data()); }))
        return f;
    // Each sum runs in coordinate order. ‖τ̄‖² is summed only for norm-matched, which reads
    // it. (PRISM's sums keep a loop of their own: side by side, the compiler shares or fuses
    // their products differently, and λ moved in its last bits.)
    std::vector<double>* mag = keep_magnitudes ? &magnitudes(in.numel()) : nullptr;
    for_blocks(in, [&](const Block& b) {
        if (mag)
            for (std::size_t j = 0; j < b.count; ++j) (*mag)[b.begin + j] = std::abs(b.mean[j]);
        if (p.method == Method::norm_matched)
            add_dot(f.mean_tau_sq, b.mean.data(), b.mean.data(), b.count);
        if (reads_merge_rho(p.method)) {
            for (std::size_t j = 0; j < b.count; ++j) {
                double sq = 0.0;
                for (const auto& t : b.t) sq += t[j] * t[j];
                f.sum_var += std::max(0.0, sq / static_cast<double>(k) - b.mean[j] * b.mean[j]);
            }
        } else if (stock) {
            std::size_t d = 0;
            for (std::size_t i = 0; i < k; ++i)
                for (std::size_t q = i; q < k; ++q)
                    add_dot(f.dots[d++], b.t[i].data(), b.t[q].data(), b.count);
        }
    });
    return f;
}

// DARE: τ_ij kept with probability 1 − p and rescaled by 1 / (1 − p) (last_pass::Drop).
void dare_drop(const last_pass::Drop& drop, Block& b) {
    for (std::size_t i = 0; i < b.t.size(); ++i)
        for (std::size_t j = 0; j < b.count; ++j) b.t[i][j] = drop(i, b.begin + j, b.t[i][j]);
}

// Whether PRISM's keep-rate floor holds for the tensor: every matrix, and N-D kernels when
// asked (§3.2).
bool floored(const MergeParams& p, const TensorScope& s) {
    return p.keep_floor > 0.0 && (s.matrix || (p.floor_kernels && s.kernel));
}

// The PRISM threshold of one tensor (§3.2): κ σ sqrt(2 ln n), 0 below the ρ-gate, lowered for
// a floored tensor to keep at least `keep_floor` of its coordinates (a floor of every
// coordinate keeps them all: λ = 0).
double prism_lambda(const MergeParams& p, const TensorScope& s, std::size_t n, const FirstPass& f) {
    if (s.merge_rho < p.rho_gate || n < 2) return 0.0;
    const double sigma = std::sqrt(f.sum_var / static_cast<double>(n));
    double lambda = p.kappa * sigma * std::sqrt(2.0 * std::log(static_cast<double>(n)));
    if (!floored(p, s)) return lambda;
    const auto floor_k = static_cast<std::size_t>(std::ceil(p.keep_floor * static_cast<double>(n)));
    if (floor_k >= n) return 0.0;
    const std::vector<double>& mag = magnitudes(n);  // |τ̄_j|, kept by the first pass
    std::size_t survive = 0;
    for (std::size_t j = 0; j < n; ++j) survive += mag[j] > lambda;
    if (survive >= floor_k) return lambda;
    return kth_largest(mag, n, floor_k + 1);  // exactly the top floor_k lie above it
}

// PRISM's update from τ̄ over a block: soft (or, for PRISM-hard, hard) threshold at λ.
void prism_delta(const MergeParams& p, const Block& b, double lambda, std::vector<double>& delta) {
    for (std::size_t j = 0; j < b.count; ++j) {
        const double m = b.mean[j], mag = std::abs(m);
        if (p.method == Method::prism_hard)
            delta[j] = mag > lambda ? m : 0.0;
        else
            delta[j] = mag > lambda ? std::copysign(mag - lambda, m) : 0.0;
    }
}

// The norm-matched mean's scale: ‖PRISM's update‖ / ‖τ̄‖.
double norm_matched_scale(const MergeParams& p, TensorBlocks& in, double mean_tau_sq,
                          double lambda) {
    std::vector<double> delta(std::min(kBlock, in.numel()));
    double sq = 0.0;
    for_blocks(in, [&](const Block& b) {
        prism_delta(p, b, lambda, delta);
        add_dot(sq, delta.data(), delta.data(), b.count);
    });
    const double nm = std::sqrt(mean_tau_sq);
    return nm > 0 ? std::sqrt(sq) / nm : 0.0;
}

// SLERP's weights of θ1 and θ2 at t.
std::pair<double, double> slerp_weights(const MergeParams& p, const std::vector<double>& dots) {
    // mergekit's slerp: each vector normalised only when its norm is above 1e-8.
    const auto norm = [](double sq) {
        const double n = std::sqrt(sq);
        return n > 1e-8 ? n : 1.0;
    };
    const double cos = std::clamp(dots[2] / (norm(dots[0]) * norm(dots[1])), -1.0, 1.0);
    if (!(std::abs(cos) <= 0.9995)) return {1.0 - p.t, p.t};
    const double omega = std::acos(cos), so = std::sin(omega);
    return {std::sin((1.0 - p.t) * omega) / so, std::sin(p.t * omega) / so};
}

// TIES of the studies (§3.2): generalized task arithmetic with the ⌊density · n⌋ largest
// |τ_ij| of each model kept, sign consensus and the mean of the agreeing τ, unweighted.
MergeParams ties_params(const MergeParams& p) {
    MergeParams q = p;
    q.sparsify = Sparsify::magnitude;
    q.consensus = true;
    q.normalize = Normalize::mean;
    q.rescale = false;
    q.weights.clear();
    q.densities.clear();
    return q;
}

// DELLA and Breadcrumbs of the studies: mergekit's methods of those names (mergekit.cpp's
// registry: DELLA with sign consensus, the weights' mean and L1 rescale; Breadcrumbs summed,
// without consensus or rescale), every model at the study's density, with mergekit's default
// ε (0.15) and γ (0.01), unweighted; c scales the mixed update as mergekit's λ does. Where
// mergekit's DELLA is undefined (dimension 1 of one coordinate: a convolution over one input
// channel), each coordinate is kept with probability d, the ramp's mean.
MergeParams study_gta_params(const MergeParams& p) {
    MergeParams q = p;
    const bool della = p.method == Method::della;
    q.sparsify = della ? Sparsify::della : Sparsify::magnitude_outliers;
    q.consensus = della;
    q.normalize = della ? Normalize::mean : Normalize::sum;
    q.rescale = della;
    q.weights.clear();
    q.densities.clear();
    q.gammas.clear();
    q.epsilons.clear();
    q.della_lone_at_density = true;
    return q;
}

// The generalized task arithmetic behind TIES, DELLA, Breadcrumbs and mergekit's methods.
MergeParams gta_params(const MergeParams& p) {
    if (p.method == Method::ties) return ties_params(p);
    return p.method == Method::generalized ? p : study_gta_params(p);
}

// Generalized task arithmetic (TIES, DELLA, Breadcrumbs, mergekit's methods): the selection
// pass of each model, then the mix; consensus without weights has a fused kernel.
void generalized_pass(const MergeParams& q, const TensorScope& s, TensorBlocks& in,
                      const BlockSink& out, TensorMergeStats& st, Kernels kernels) {
    const std::vector<Selection> sel = select(q, s, in);
    if (kernels == Kernels::fused && q.consensus) {
        std::vector<const std::uint64_t*> kept;
        std::vector<double> scales;
        for (const Selection& x : sel) {
            kept.push_back(x.all ? nullptr : x.bits.data());
            scales.push_back(x.scale);
        }
        if (last_pass::fused_pass(q,
                                  {.update = last_pass::Update::ties,
                                   .scale = q.coef,
                                   .kept = kept.data(),
                                   .scales = scales.data()},
                                  in, kBlock, out, st))
            return;
    }
    std::vector<double> delta(std::min(kBlock, in.numel()));
    array_pass(in, out, st, [&](Block& b) {
        combine(q, sel, b.begin, b.count, b.t, delta);
        from_delta(b, delta, q.coef);
    });
}

// The study's DARE: its own drop, then the mean or TIES's mix.
void dare_pass(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
               TensorMergeStats& st, Kernels kernels) {
    MergeParams q = p;
    if (p.dare_then_ties) {
        q.consensus = true;
        q.normalize = Normalize::mean;
        q.weights.clear();
    }
    const last_pass::Drop drop(p, s.name, in.models());
    if (!p.dare_then_ties && kernels == Kernels::fused &&
        last_pass::fused_pass(
            p, {.update = last_pass::Update::dropped, .scale = p.coef, .drop = &drop}, in, kBlock,
            out, st))
        return;
    std::vector<double> delta(std::min(kBlock, in.numel()));
    array_pass(in, out, st, [&](Block& b) {
        dare_drop(drop, b);
        combine(q, {}, b.begin, b.count, b.t, delta);
        from_delta(b, delta, p.coef);
    });
}

// The operators that rebuild a whole matrix's update (Iso-C's flattened spectrum of Σ τ_i,
// iso_c.h; TSV-Merge's decorrelated singular vectors, tsv.h): θ0 + c·update(s, in) where
// `applies`, θ0 + c·τ̄ elsewhere.
template <class Update>
void matrix_pass(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                 TensorMergeStats& st, bool applies, Update update) {
    if (!applies) return array_pass(in, out, st, [&](Block& b) { from_delta(b, b.mean, p.coef); });
    const std::vector<double> merged = update(s, in);
    array_pass(in, out, st, [&](Block& b) {
        for (std::size_t j = 0; j < b.count; ++j)
            b.theta[j] = b.base[j] + p.coef * merged[b.begin + j];
    });
}

// mergekit's linear: Σ_i w_i θ_i, divided by Σ_i w_i for `normalize: mean`.
void linear(const MergeParams& p, Block& b) {
    double total = 0.0;
    std::fill_n(b.theta.begin(), b.count, 0.0);
    for (std::size_t i = 0; i < b.x.size(); ++i) {
        const double w = p.weights.empty() ? 1.0 : p.weights.at(i);
        total += w;
        for (std::size_t j = 0; j < b.count; ++j) b.theta[j] += w * static_cast<double>(b.x[i][j]);
    }
    if (p.normalize == Normalize::mean)
        for (std::size_t j = 0; j < b.count; ++j) b.theta[j] /= total;
}

// The last pass of each operator.
void merge_pass(const MergeParams& p, const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                const FirstPass& f, TensorMergeStats& st, Kernels kernels) {
    std::vector<double> delta(std::min(kBlock, in.numel()));
    const auto fused = [&](const last_pass::Fused& how) {
        return kernels == Kernels::fused && last_pass::fused_pass(p, how, in, kBlock, out, st);
    };
    switch (p.method) {
        case Method::task_arithmetic:
            if (fused({last_pass::Update::weighted, p.coef})) return;
            return array_pass(in, out, st, [&](Block& b) {
                combine(p, {}, b.begin, b.count, b.t, delta);
                from_delta(b, delta, p.coef);
            });
        case Method::ties:
        case Method::della:
        case Method::breadcrumbs:
        case Method::generalized:
            return generalized_pass(gta_params(p), s, in, out, st, kernels);
        case Method::dare:
            return dare_pass(p, s, in, out, st, kernels);
        case Method::iso_c:
            return matrix_pass(p, s, in, out, st, iso_c_flattens(s), iso_c_update);
        case Method::tsv:
            return matrix_pass(p, s, in, out, st, tsv_decorrelates(s), tsv_update);
        case Method::nearswap:
        case Method::sce:
        case Method::multislerp:
        case Method::nuslerp:
        case Method::karcher:
            return mergekit_pass(p, s, in, out, st);
        case Method::ram:  // merge_tensor hands them to merge_in_dtype
        case Method::ramplus_tl:
        case Method::arcee_fusion:
            throw std::logic_error(s.name + ": a whole-tensor method in the block passes");
        case Method::linear:
            return array_pass(in, out, st, [&](Block& b) { linear(p, b); });
        case Method::passthrough:
            return array_pass(in, out, st, [&](Block& b) {
                for (std::size_t j = 0; j < b.count; ++j)
                    b.theta[j] = static_cast<double>(b.x[0][j]) * p.scale;
            });
        case Method::slerp: {
            const auto [wa, wb] = slerp_weights(p, f.dots);
            if (fused({.update = last_pass::Update::slerp, .wa = wa, .wb = wb})) return;
            return array_pass(in, out, st, [&](Block& b) {
                for (std::size_t j = 0; j < b.count; ++j)
                    b.theta[j] =
                        wa * static_cast<double>(b.x[0][j]) + wb * static_cast<double>(b.x[1][j]);
            });
        }
        case Method::model_stock: {
            if (p.filter_wise) return model_stock_filter_wise(s, in, out, st);
            const double t = model_stock_t(f.dots.data(), in.models());
            if (fused({last_pass::Update::mean, t})) return;
            return array_pass(in, out, st, [&](Block& b) { from_delta(b, b.mean, t); });
        }
        case Method::prism:
        case Method::prism_hard:
        case Method::norm_matched: {
            st.lambda = prism_lambda(p, s, in.numel(), f);
            const double scale = p.method == Method::norm_matched
                                     ? norm_matched_scale(p, in, f.mean_tau_sq, st.lambda)
                                     : 0.0;
            const auto update = p.method == Method::prism        ? last_pass::Update::soft
                                : p.method == Method::prism_hard ? last_pass::Update::hard
                                                                 : last_pass::Update::scaled;
            if (fused({update, p.coef, st.lambda, scale})) return;
            return array_pass(in, out, st, [&](Block& b) {
                prism_delta(p, b, st.lambda, delta);
                if (p.method == Method::norm_matched)
                    for (std::size_t j = 0; j < b.count; ++j) delta[j] = b.mean[j] * scale;
                from_delta(b, delta, p.coef);
            });
        }
    }
}

}  // namespace

void TensorBlocks::read_one(std::size_t begin, std::size_t count, std::size_t i, const float*& base,
                            const float*& model) {
    thread_local std::vector<const float*> all;
    all.resize(models());
    read(begin, count, base, all);
    model = all[i];
}

void SpanBlocks::read(std::size_t begin, std::size_t, const float*& base,
                      std::vector<const float*>& models) {
    base = base_.data() + begin;
    for (std::size_t i = 0; i < models_.size(); ++i) models[i] = models_[i].data() + begin;
}

TensorMergeStats merge_tensor(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                              const BlockSink& out, Kernels kernels, Sums sums) {
    const std::size_t k = in.models();
    if (k == 0) throw std::invalid_argument(s.name + ": no models to merge");
    if (p.method == Method::slerp && k != 2)
        throw std::invalid_argument(s.name + ": SLERP merges exactly 2 models");
    TensorMergeStats st;
    st.sums = sums;
    st.numel = in.numel();
    if (!s.in_scope) {  // θ0, unchanged; ‖τ̄‖² still counts
        for_blocks(in, [&](const Block& b) {
            add_dot(st.mean_tau_sq, b.mean.data(), b.mean.data(), b.count);
            out(b.begin, {b.base, b.count});
        });
        return st;
    }
    if (p.arithmetic != Arithmetic::exact && p.method == Method::slerp) {
        // mergekit's slerp in numpy float32 on the inputs in the dtype: here the exact passes
        // on them, θ rounded to the dtype (docs/mergekit.md, "Arithmetic").
        const SlerpDots d = slerp_dots(p.arithmetic, in);
        const auto [wa, wb] = slerp_weights(p, {d.aa, d.bb, d.ab});
        last_pass::fused_pass(p,
                              {.update = last_pass::Update::slerp,
                               .wa = wa,
                               .wb = wb,
                               .round = p.arithmetic,
                               .round_inputs = d.changed},
                              in, kBlock, out, st);
        return st;
    }
    if (p.arithmetic != Arithmetic::exact || is_whole_tensor_method(p.method))
        return merge_in_dtype(p, s, in, out, sums);
    const bool floor = reads_merge_rho(p.method) && floored(p, s);
    const FirstPass f = needs_first_pass(p) ? first_pass(p, in, floor, kernels) : FirstPass{};
    merge_pass(p, s, in, out, f, st, kernels);
    return st;
}

TensorMergeStats merge_tensor(const MergeParams& p, const TensorScope& s,
                              std::span<const float> base,
                              std::span<const std::span<const float>> models, std::span<float> out,
                              Kernels kernels) {
    if (out.size() != base.size()) throw std::invalid_argument(s.name + ": output size differs");
    for (std::size_t i = 0; i < models.size(); ++i) {
        if (models[i].size() != base.size())
            throw std::invalid_argument(s.name + ": model " + std::to_string(i) + " has " +
                                        std::to_string(models[i].size()) + " values, the base " +
                                        std::to_string(base.size()));
    }
    SpanBlocks in(base, {models.begin(), models.end()});
    return merge_tensor(
        p, s, in,
        [&](std::size_t begin, std::span<const float> merged) {
            std::copy(merged.begin(), merged.end(),
                      out.begin() + static_cast<std::ptrdiff_t>(begin));
        },
        kernels);
}

}  // namespace compatbench::merging
