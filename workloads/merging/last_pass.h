// The last pass of merge_tensor (methods.md §3.2), 8 coordinates at a time in double
// vectors (common/lanes.h): what every operator's last pass adds up, and the fused kernels
// of the operators whose update at a coordinate reads only that coordinate's τ_ij
// (task arithmetic, Model Stock, PRISM, PRISM-hard, norm-matched). A fused kernel does in
// registers, per coordinate and in the same order, the operations that tensor_merge.cpp's
// block loops do through arrays (τ_i, τ̄, Σ w_i τ_i, θ = θ0 + c · update), so the merged
// values are the same to the bit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "common/lanes.h"
#include "merging/operators.h"

namespace compatbench::merging {

// 1 / d when x / d and x · (1 / d) are the same number for every x, else 0: d a power of two
// whose inverse is one too (both give x · 2^-e, correctly rounded). A multiplication costs a
// fraction of a division.
inline double exact_inverse(double d) {
    int e = 0;
    const double m = std::frexp(d, &e);
    return (m == 0.5 || m == -0.5) && e > -1000 && e < 1000 ? 1.0 / d : 0.0;
}

// x[j] /= d for j < n, by exact_inverse's multiplication where it gives the same numbers.
inline void divide(double* x, std::size_t n, double d) {
    const double inverse = exact_inverse(d);
    if (inverse != 0.0)
        for (std::size_t j = 0; j < n; ++j) x[j] *= inverse;
    else
        for (std::size_t j = 0; j < n; ++j) x[j] /= d;
}

}  // namespace compatbench::merging

namespace compatbench::merging::last_pass {

// n ≤ 8 values from p into an 8-lane vector, the rest zero.
template <class V, class T>
inline V load(const T* p, std::size_t n) {
    V v = {};
    if (n == 8)  // a constant size: one load, not a copy loop
        std::memcpy(&v, p, sizeof v);
    else
        std::memcpy(&v, p, n * sizeof(T));
    return v;
}

// ‖τ̄‖² and ‖θ − θ0‖², two running sums in coordinate order (as they always were: the
// reported update norm keeps its bits; 8 lanes would be faster but move it by up to ~70
// ulps), and the coordinates changed, in 8 lanes (an exact count).
struct Stats {
    double mean_tau_sq = 0.0, update_sq = 0.0;
    V8l changed = {};  // -1 per changed coordinate
    // 8 coordinates, n of them real (the others zero): τ̄, θ, θ0; θ goes to `merged` as
    // float32.
    void add(const V8d& mean, const V8d& theta, const V8d& base, float* merged, std::size_t n) {
        const V8f f = __builtin_convertvector(theta, V8f);
        if (n == 8)  // a constant size: one store, not a copy loop
            std::memcpy(merged, &f, sizeof f);
        else
            std::memcpy(merged, &f, n * sizeof(float));
        const V8d u = theta - base;
        for (std::size_t l = 0; l < n; ++l) {
            mean_tau_sq += mean[l] * mean[l];
            update_sq += u[l] * u[l];
        }
        changed += u != 0.0;
    }
    void finish(TensorMergeStats& st) const;
};

// What a fused operator makes of a coordinate's τ̄ and Σ w_i τ_i: its update.
enum class Update {
    weighted,  // Σ w_i τ_i, ÷ Σ w_i for `normalize: mean` (task arithmetic)
    mean,      // τ̄ (Model Stock, scale t)
    soft,      // PRISM: sign(τ̄) max(|τ̄| − λ, 0)
    hard,      // PRISM-hard: τ̄ where |τ̄| > λ
    scaled,    // norm-matched: τ̄ · mean_scale
};
struct Fused {
    Update update = Update::weighted;
    double scale = 1.0;  // θ = θ0 + scale · update
    double lambda = 0.0;
    double mean_scale = 0.0;
};

// Calls f(begin, count, base, x) for every block of `in`, in order: its coordinates
// [begin, begin + count) as float32, the base's and each model's (x[i]).
template <class F>
void read_blocks(TensorBlocks& in, std::size_t block, F&& f) {
    std::vector<const float*> x(in.models());
    const float* base = nullptr;
    for (std::size_t begin = 0; begin < in.numel(); begin += block) {
        const std::size_t count = std::min(block, in.numel() - begin);
        in.read(begin, count, base, x);
        f(begin, count, base, x);
    }
}

// The last pass of an operator with a fused kernel, `block` coordinates at a time: θ to
// `out`, the statistics into `st`. Returns false, doing nothing, for more than 8 models
// (the array loops serve those).
bool fused_pass(const MergeParams& p, const Fused& f, TensorBlocks& in, std::size_t block,
                const BlockSink& out, TensorMergeStats& st);

}  // namespace compatbench::merging::last_pass
