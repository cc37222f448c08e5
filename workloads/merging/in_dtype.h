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
// A tensor's inputs are held whole in memory, as mergekit holds them. RAM and Arcee Fusion
// read a whole tensor before they write a coordinate, so they come here in exact arithmetic
// too (computed in double on the stored values).
#pragma once

#include <cstdint>
#include <cstring>

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

// Merges one tensor as merge_tensor does, with p.arithmetic other than exact or a
// whole-tensor method (is_whole_tensor_method); its statistics summed as `sums` says.
TensorMergeStats merge_in_dtype(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                                const BlockSink& out, Sums sums);

}  // namespace compatbench::merging
