// mergekit's merge arithmetic in the configuration's dtype (docs/mergekit.md, "Arithmetic";
// docs/methods.md §3.2). mergekit converts every input tensor to `dtype` when it loads it and
// computes with torch in that dtype: on the CPU each operation of a bfloat16 or float16 tensor
// runs in float32 and its result is rounded back, and a sum accumulates in float32.
// merge_in_dtype repeats those operations, in mergekit's order and as torch 2 rounds them
// (in_dtype.cpp says how), for linear, the generalized task arithmetic family, model_stock,
// nearswap, sce and passthrough (mergekit at commit
// a6e402884ba9bc30da7f23e8304a35f19485de95: merge_methods/linear.py,
// generalized_task_arithmetic.py, model_stock.py, nearswap.py, sce.py, passthrough.py;
// sparsify.py), and through ram_fusion.h for ram, ramplus_tl and arcee_fusion. The other
// methods (slerp, which mergekit computes in numpy float32, multislerp, nuslerp, karcher)
// read the inputs rounded to the dtype, compute in double and round the result to the dtype.
// linear, generalized task arithmetic, model_stock, nearswap and passthrough stream a block
// at a time in float32 lanes (in_dtype_stream.cpp), slerp through merge_tensor's passes on
// the inputs rounded (slerp_dots, then the last pass rounding them); the others hold a
// tensor's inputs whole, as mergekit does. RAM and Arcee Fusion read a whole tensor before
// they write a coordinate, so they come here in exact arithmetic too (computed in double on
// the stored values).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/lanes.h"
#include "formats/half.h"
#include "merging/operators.h"

namespace compatbench::merging {

// x rounded to the arithmetic's dtype (unchanged for exact and float32). Inline: it follows
// every operation.
inline float round_to(Arithmetic a, float x) {
    if (a == Arithmetic::bfloat16) {
        const std::uint32_t bits = std::uint32_t{formats::f32_to_bf16(x)} << 16;
        float y;
        std::memcpy(&y, &bits, sizeof y);
        return y;
    }
    return a == Arithmetic::float16 ? formats::f16_to_f32(formats::f32_to_f16(x)) : x;
}

// 8 float32 lanes each rounded as round_to rounds it, in registers: bfloat16 on the bit
// patterns (the integer form of round-to-nearest-even, a NaN kept quiet), as torch's
// vectorised CPU kernels round; float16 lane by lane; float32 unchanged.
using V8i = int __attribute__((vector_size(32)));  // a V8f comparison's lanes: 0 or -1

// NanFree: the caller knows that no lane is a NaN (the NaN test left out).
template <Arithmetic A, bool NanFree = false>
inline V8f rounded(V8f x) {
    if constexpr (A == Arithmetic::bfloat16) {
        using V8u = unsigned __attribute__((vector_size(32)));
        V8u u;
        std::memcpy(&u, &x, sizeof u);
        if constexpr (NanFree) {
            u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
            std::memcpy(&x, &u, sizeof x);
            return x;
        }
        const auto nan = (V8u)((V8i)(u & 0x7fffffffu) > 0x7f800000);
        const V8u even = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        const V8u quiet = (u & 0xffff0000u) | 0x00400000u;
        const V8u r = (quiet & nan) | (even & ~nan);
        std::memcpy(&x, &r, sizeof x);
    } else if constexpr (A == Arithmetic::float16) {
        for (int l = 0; l < 8; ++l) x[l] = round_to(A, x[l]);
    }
    return x;
}

// Whether rounded<A> leaves the n values at v as they are (false where it cannot tell): for
// bfloat16 every value's low 16 bits are 0 and none is a NaN (inputs stored in bfloat16).
template <Arithmetic A>
inline bool in_dtype(const float* v, std::size_t n) {
    if constexpr (A == Arithmetic::float32) return true;
    if constexpr (A != Arithmetic::bfloat16) return false;
    std::uint32_t low = 0, nan = 0;
    for (std::size_t j = 0; j < n; ++j) {
        std::uint32_t u;
        std::memcpy(&u, v + j, sizeof u);
        low |= u & 0xffffu;
        nan |= static_cast<std::uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
    }
    return low == 0 && nan == 0;
}

// Whether every one of the n values at v is below 2^32 in magnitude (so finite, no NaN).
inline bool below_2_32(const float* v, std::size_t n) {
    std::uint32_t big = 0;
    for (std::size_t j = 0; j < n; ++j) {
        std::uint32_t u;
        std::memcpy(&u, v + j, sizeof u);
        big |= static_cast<std::uint32_t>((u & 0x7fffffffu) >= 0x4f800000u);  // 2^32
    }
    return big == 0;
}

// Calls f(std::integral_constant<Arithmetic, A>{}) with A = a, a dtype (float32 for exact).
template <class F>
void with_dtype(Arithmetic a, F&& f) {
    if (a == Arithmetic::bfloat16)
        f(std::integral_constant<Arithmetic, Arithmetic::bfloat16>{});
    else if (a == Arithmetic::float16)
        f(std::integral_constant<Arithmetic, Arithmetic::float16>{});
    else
        f(std::integral_constant<Arithmetic, Arithmetic::float32>{});
}

// SLERP's first pass (merge_tensor): θ1·θ1, θ2·θ2 and θ1·θ2 of the two models' values
// rounded to the arithmetic's dtype (as stored for exact), in double, each a running sum in
// coordinate order; and whether rounding changed a model's value (the base, read only for
// the statistics, is never rounded).
struct SlerpDots {
    double aa = 0.0, bb = 0.0, ab = 0.0;
    bool changed = false;
};
SlerpDots slerp_dots(Arithmetic a, TensorBlocks& in);

// linear, the generalized task arithmetic family, model_stock, nearswap and passthrough,
// streamed a block at a time (in_dtype_stream.cpp): false, doing nothing, for any other
// method. Internal to merge_in_dtype.
bool merge_streamed_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                             const BlockSink& out, TensorMergeStats& st);

// Merges one tensor as merge_tensor does, with p.arithmetic other than exact or a
// whole-tensor method (is_whole_tensor_method); its statistics summed as `sums` says.
TensorMergeStats merge_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                                const BlockSink& out, Sums sums);

}  // namespace compatbench::merging
