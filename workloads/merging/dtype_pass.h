// The lanes of merge_streamed_in_dtype's methods (in_dtype_stream.cpp): a few models' 8
// coordinates in float32 registers, and the last pass that merges a tensor with them in a
// dtype. Internal to merging/; its includer compiles with -ffp-contract=off (a product and a
// sum must round apart, as torch rounds them).
#pragma once

#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "merging/block_pass.h"
#include "merging/in_dtype.h"
#include "merging/last_pass.h"

namespace compatbench::merging::dtype_lanes {

using last_pass::load;

inline V8f masked(const V8f& x, const V8i& keep) {  // x where keep, +0 elsewhere
    return (V8f)((V8i)x & keep);
}
constexpr V8i kLane = {0, 1, 2, 3, 4, 5, 6, 7};
inline V8f choose(const V8i& where, const V8f& a, const V8f& b) {  // a where `where`, else b
    return (V8f)(((V8i)a & where) | ((V8i)b & ~where));
}

// N values of a kind: a fixed array for N > 0 (in registers), else n of them.
template <class T, int N>
struct Few {
    std::array<T, N> v{};
    explicit Few(std::size_t) {}
    static constexpr std::size_t size() { return N; }
    T& operator[](std::size_t i) { return v[i]; }
    const T& operator[](std::size_t i) const { return v[i]; }
};
template <class T>
struct Few<T, 0> {
    std::vector<T> v;
    explicit Few(std::size_t n) : v(n) {}
    std::size_t size() const { return v.size(); }
    T& operator[](std::size_t i) { return v[i]; }
    const T& operator[](std::size_t i) const { return v[i]; }
};
template <int K>
using ModelLanes = Few<V8f, K>;  // the lanes of K models (K = 0: as many as there are)

// Calls group(round_inputs, nan_free), each a std::bool_constant, for one block of the base
// and k models: round_inputs where a value is not in the dtype A (else the values are used as
// stored), nan_free where `bounded` (the caller's operations cannot overflow from inputs
// below 2^32) and every value is below 2^32.
template <Arithmetic A, class Group>
void with_block_kind(const float* base, const std::vector<const float*>& x, std::size_t count,
                     bool bounded, Group&& group) {
    bool as_stored = in_dtype<A>(base, count);  // no input to round in this block
    for (std::size_t i = 0; i < x.size() && as_stored; ++i) as_stored = in_dtype<A>(x[i], count);
    bool small = bounded && below_2_32(base, count);  // then no NaN can arise
    for (std::size_t i = 0; i < x.size() && small; ++i) small = below_2_32(x[i], count);
    if (as_stored && small)
        group(std::false_type{}, std::true_type{});
    else if (as_stored)
        group(std::false_type{}, std::false_type{});
    else
        group(std::true_type{}, std::false_type{});
}

// The last pass of a method in the dtype: rule(j, rb, rx) gives θ in the dtype at the 8
// coordinates from j, from the base's (rb) and the models' (rx) values there rounded to the
// dtype; the statistics are of the stored values, as blocks::array_pass takes them (τ̄ from
// θ_i − θ0 in double).
template <int K, Arithmetic A, class Rule>
void dtype_pass(TensorBlocks& in, const BlockSink& out, TensorMergeStats& st, bool bounded,
                Rule&& rule) {
    const std::size_t k = in.models();
    std::vector<float> merged(std::min(blocks::kBlock, in.numel()));
    last_pass::Stats all(st.sums);
    ModelLanes<K> models(K > 0 ? 0 : k);  // K = 0's lanes (K > 0: a local array per group)
    last_pass::read_blocks(
        in, blocks::kBlock,
        [&](std::size_t begin, std::size_t count, const float* base, const auto& x) {
            with_block_kind<A>(base, x, count, bounded, [&](auto round_inputs, auto nan_free) {
                last_pass::Stats stats = all;  // in registers for the loop
                for (std::size_t j = 0; j < count; j += 8) {
                    const auto one = [&](ModelLanes<K>& rx) {
                        const std::size_t n = std::min<std::size_t>(8, count - j);
                        const V8f b = load<V8f>(base + j, n);
                        const V8d bd = widen(b);
                        V8d m = {};
                        for (std::size_t i = 0; i < rx.size(); ++i) {
                            const V8f xi = load<V8f>(x[i] + j, n);
                            m += widen(xi) - bd;
                            rx[i] = round_inputs ? rounded<A>(xi) : xi;
                        }
                        m /= static_cast<double>(K > 0 ? K : k);  // K: ÷ 2 is a product
                        V8f theta = rule(begin + j, round_inputs ? rounded<A>(b) : b, rx, nan_free);
                        theta = masked(theta, kLane < static_cast<int>(n));  // a tail's: 0
                        stats.add(m, widen(theta), bd, &merged[j], n);
                    };
                    if constexpr (K > 0) {
                        ModelLanes<K> rx(k);  // a local array: in registers
                        one(rx);
                    } else {
                        one(models);
                    }
                }
                all = stats;
            });
            out(begin, {merged.data(), count});
        });
    all.finish(st);
}

}  // namespace compatbench::merging::dtype_lanes
