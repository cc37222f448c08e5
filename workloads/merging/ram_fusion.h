// mergekit's RAM (ram, ramplus_tl: merge_methods/ram.py) and Arcee Fusion
// (merge_methods/arcee_fusion.py), at commit a6e402884ba9bc30da7f23e8304a35f19485de95; methods.md
// §3.2. Each reads a whole tensor before it writes a coordinate (RAM+'s per-model counts,
// Arcee Fusion's quantiles), so merge_in_dtype (in_dtype.h) holds the tensor's inputs whole
// and calls them, in exact arithmetic (double) or as torch computes in the dtype.
//
//   ram          τ_i = θ_i − θ0 moves coordinate j when |τ_ij| > ε; with n_j movers,
//                θ_j = θ0_j + Σ_i τ_ij (n_j = 1) or Σ_i τ_ij / n_j (n_j > 1).
//   ramplus_tl   as ram, each model's lone moves scaled by λ_i = 1 + r · clamp(ρ_i, 0, α),
//                ρ_i = (its shared moves) / max(its lone moves, ε), over the tensor.
//   arcee_fusion one model besides the base: importance_j = |τ_j| · KL(p ‖ q) of its row of the
//                last dimension, p = softmax(θ_1 row) + 1e-8, q = softmax(θ0 row) + 1e-8;
//                θ = θ0 + τ where importance ≥ median + 1.5 (q3 − q1), the quantiles at the
//                sorted index ⌊q · (n − 1)⌋ (q · (n − 1) in float32) over every value (mergekit
//                samples 10^6 of them at random above that size).
//
// In a dtype, torch's promotions show: RAM+'s λ_i are float32 and make its result float32,
// and Arcee Fusion's float32 mask makes θ0 + masked τ float32 (result_dtype says so).
#pragma once

#include "merging/torch_like.h"

namespace compatbench::merging {

// Whether the method is one of these (merge_tensor hands them to merge_in_dtype).
bool is_whole_tensor_method(Method m);

// The merged tensor from inputs held whole (rounded to the dtype when r is not exact).
torch_like::Values ram_fusion(const MergeParams& p, const TensorScope& s, torch_like::Torch r,
                              const torch_like::Inputs& v);

}  // namespace compatbench::merging
