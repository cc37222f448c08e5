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
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/hash.h"
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

// ‖τ̄‖² and ‖θ − θ0‖² as `sums` says (operators.h: in coordinate order, two running sums, or
// in 8 lanes, which moves them by up to ~70 ulps), and the coordinates changed, in 8 lanes
// (an exact count).
struct Stats {
    Sums sums;
    double mean_tau_sq = 0.0, update_sq = 0.0;
    V8d mean_tau_lanes = {}, update_lanes = {};
    V8l changed = {};  // -1 per changed coordinate
    explicit Stats(Sums how) : sums(how) {}
    // 8 coordinates, n of them real (the others zero): τ̄, θ, θ0; θ goes to `merged` as
    // float32.
    void add(const V8d& mean, const V8d& theta, const V8d& base, float* merged, std::size_t n) {
        const V8f f = __builtin_convertvector(theta, V8f);
        if (n == 8)  // a constant size: one store, not a copy loop
            std::memcpy(merged, &f, sizeof f);
        else
            std::memcpy(merged, &f, n * sizeof(float));
        const V8d u = theta - base;
        if (sums == Sums::lanes) {  // a tail's lanes past n hold zeros
            mean_tau_lanes += mean * mean;
            update_lanes += u * u;
        } else {
            for (std::size_t l = 0; l < n; ++l) {
                mean_tau_sq += mean[l] * mean[l];
                update_sq += u[l] * u[l];
            }
        }
        changed += u != 0.0;
    }
    void finish(TensorMergeStats& st) const;
};

using V8u = unsigned long long __attribute__((vector_size(64)));

// common/hash.h's splitmix64 in 8 lanes.
inline V8u splitmix64_lanes(V8u x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The integer form of a keep rate: unit_double(h) < rate exactly when h >> 11 is below it.
inline std::uint64_t draws_below(double rate) {
    return rate > 0.0 ? static_cast<std::uint64_t>(std::ceil(std::ldexp(std::min(rate, 1.0), 53)))
                      : 0;
}

// DARE's drop (methods.md §3.2): τ_ij is kept when splitmix64(stream_i + j) >> 11 is below
// `below` (unit_double of the draw below the keep rate 1 − p, compared as integers) and then
// rescaled by 1 / (1 − p): × inverse where that is exact, else ÷ keep. The draw depends only
// on (seed, tensor, model, coordinate), whatever rank or order merges it.
struct Drop {
    struct Rate {
        std::uint64_t below = 0;
        double keep = 1.0, inverse = 0.0;
    } rate;
    std::vector<std::uint64_t> streams;  // per model
    Drop(const MergeParams& p, const std::string& tensor, std::size_t models);
    double operator()(std::size_t i, std::size_t j, double t) const {
        if ((splitmix64(streams[i] + j) >> 11) >= rate.below) return 0.0;
        return rate.inverse != 0.0 ? t * rate.inverse : t / rate.keep;
    }
};

// What a fused operator makes of a coordinate's τ̄ and Σ w_i τ_i: its update.
enum class Update {
    weighted,  // Σ w_i τ_i, ÷ Σ w_i for `normalize: mean` (task arithmetic)
    mean,      // τ̄ (Model Stock, scale t)
    soft,      // PRISM: sign(τ̄) max(|τ̄| − λ, 0)
    hard,      // PRISM-hard: τ̄ where |τ̄| > λ
    scaled,    // norm-matched: τ̄ · mean_scale
    dropped,   // DARE under unit weights: Σ drop(τ_i), ÷ K for `normalize: mean`
    ties,      // TIES under unit weights: the kept τ_i that agree with their sum's sign,
               // summed, ÷ how many for `normalize: mean`
    slerp,     // SLERP of 2 models: θ = wa θ_1 + wb θ_2 itself, not θ0 + scale · update
};
struct Fused {
    Update update = Update::weighted;
    double scale = 1.0;  // θ = θ0 + scale · update
    double lambda = 0.0;
    double mean_scale = 0.0;
    double wa = 0.0, wb = 0.0;                   // SLERP's weights
    const Drop* drop = nullptr;                  // DARE's
    const std::uint64_t* const* kept = nullptr;  // TIES: per model, the bits of the τ kept
    const double* scales = nullptr;              // TIES: per model, the kept τ's L1 rescale
    // SLERP in a dtype (merge_in_dtype): θ from the inputs rounded to it, itself rounded to
    // it; the statistics of the stored values.
    Arithmetic round = Arithmetic::exact;
    bool round_inputs = true;  // false: every input is in the dtype already
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

// Calls f(begin, count, base, x_i) for every block of `in`, in order, reading the base and
// model i only.
template <class F>
void read_model_blocks(TensorBlocks& in, std::size_t i, std::size_t block, F&& f) {
    const float *base = nullptr, *x = nullptr;
    for (std::size_t begin = 0; begin < in.numel(); begin += block) {
        const std::size_t count = std::min(block, in.numel() - begin);
        in.read_one(begin, count, i, base, x);
        f(begin, count, base, x);
    }
}

// The last pass of an operator with a fused kernel, `block` coordinates at a time: θ to
// `out`, the statistics into `st`. Returns false, doing nothing, where the array loops serve
// instead: more than 8 models, DARE or TIES with weights, SLERP of other than 2.
bool fused_pass(const MergeParams& p, const Fused& f, TensorBlocks& in, std::size_t block,
                const BlockSink& out, TensorMergeStats& st);

}  // namespace compatbench::merging::last_pass
