// The block passes behind merge_tensor (operators.h) and mergekit's kernels
// (mergekit_kernels.h): a tensor read a block at a time, τ_i = θ_i − θ0 and their mean in
// double, and the last pass that sends θ on as float32 with the update's statistics.
// Internal to merging/.
#pragma once

#include <algorithm>
#include <vector>

#include "common/lanes.h"
#include "merging/last_pass.h"
#include "merging/operators.h"

namespace compatbench::merging::blocks {

constexpr std::size_t kBlock = 2048;

// One block of a tensor: θ0, the task vectors τ_i = θ_i − θ0 in double, their mean, and
// the merged values. The loops over a block run as the definitions read over a whole
// tensor (model by model, coordinate by coordinate), so the compiler vectorises them the
// same way; a block only bounds the memory.
struct Block {
    std::size_t begin = 0, count = 0;
    const float* base = nullptr;
    std::vector<const float*> x;         // θ_i
    std::vector<std::vector<double>> t;  // τ_i
    std::vector<double> mean, theta;
};

// Calls f(block) for every block of `in`, in order, with τ and their mean filled in.
template <class F>
void for_blocks(TensorBlocks& in, F&& f) {
    const std::size_t k = in.models();
    Block b;
    b.t.assign(k, std::vector<double>(std::min(kBlock, in.numel())));
    b.mean.resize(std::min(kBlock, in.numel()));
    b.theta.resize(b.mean.size());
    last_pass::read_blocks(
        in, kBlock, [&](std::size_t begin, std::size_t count, const float* base, const auto& x) {
            b.begin = begin;
            b.count = count;
            b.base = base;
            b.x = x;
            for (std::size_t i = 0; i < k; ++i)
                for (std::size_t j = 0; j < b.count; ++j)
                    b.t[i][j] = static_cast<double>(b.x[i][j]) - b.base[j];
            std::fill_n(b.mean.begin(), b.count, 0.0);
            for (std::size_t i = 0; i < k; ++i)
                for (std::size_t j = 0; j < b.count; ++j) b.mean[j] += b.t[i][j];
            divide(b.mean.data(), b.count, static_cast<double>(k));
            f(b);
        });
}

// The last pass: rule(block) fills block.theta; θ goes on as float32, with ‖τ̄‖² and the
// update's statistics (last_pass::Stats).
template <class Rule>
void array_pass(TensorBlocks& in, const BlockSink& out, TensorMergeStats& st, Rule&& rule) {
    std::vector<float> merged(std::min(kBlock, in.numel()));
    last_pass::Stats all(st.sums);
    for_blocks(in, [&](Block& b) {
        rule(b);
        last_pass::Stats stats = all;  // in registers for the loop
        for (std::size_t j = 0; j < b.count; j += 8) {
            using last_pass::load;
            const std::size_t n = std::min<std::size_t>(8, b.count - j);
            stats.add(load<V8d>(&b.mean[j], n), load<V8d>(&b.theta[j], n),
                      widen(load<V8f>(b.base + j, n)), &merged[j], n);
        }
        all = stats;
        out(b.begin, {merged.data(), b.count});
    });
    all.finish(st);
}

// θ = θ0 + scale · delta over a block.
inline void from_delta(Block& b, const std::vector<double>& delta, double scale) {
    for (std::size_t j = 0; j < b.count; ++j) b.theta[j] = b.base[j] + scale * delta[j];
}

// s + a · b as the compiler computes tensor_merge.cpp's add_dot (`s += a * b`): one fused
// multiply-add where the machine has one (it contracts the two there), else a product, then
// a sum.
inline double mul_add(double a, double b, double s) {
#if defined(__FP_FAST_FMA)
    return __builtin_fma(a, b, s);
#else
    return s + a * b;
#endif
}

// The K(K + 1) / 2 dot products τ_i · τ_q, i <= q, in that order, from the blocks as read,
// in one loop: τ of 8 coordinates at a time in lanes, then each dot a running sum in
// coordinate order, as add_dot sums it (mul_add), so the chains overlap and the sums keep
// their bits (tail lanes past the tensor hold τ = 0 and add +0).
template <int K>
void tau_dots(TensorBlocks& in, double* dots) {
    constexpr int pairs = K * (K + 1) / 2;
    last_pass::read_blocks(
        in, kBlock,
        [&](std::size_t, std::size_t count, const float* base, const std::vector<const float*>& x) {
            double s[pairs];
            std::copy_n(dots, pairs, s);
            for (std::size_t j = 0; j < count; j += 8) {
                const std::size_t n = std::min<std::size_t>(8, count - j);
                const V8d b = widen(last_pass::load<V8f>(base + j, n));
                V8d t[K];
                for (int i = 0; i < K; ++i) t[i] = widen(last_pass::load<V8f>(x[i] + j, n)) - b;
                for (int l = 0; l < 8; ++l) {
                    int d = 0;
                    for (int i = 0; i < K; ++i)
                        for (int q = i; q < K; ++q, ++d) s[d] = mul_add(t[i][l], t[q][l], s[d]);
                }
            }
            std::copy_n(s, pairs, dots);
        });
}

}  // namespace compatbench::merging::blocks
