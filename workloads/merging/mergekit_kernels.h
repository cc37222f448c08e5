// mergekit's merge methods that the studies do not sweep and that are no generalized task
// arithmetic, as mergekit computes them (mergekit at commit
// a6e402884ba9bc30da7f23e8304a35f19485de95, merge_methods/): per coordinate in double on the
// stored values, each tensor-wide quantity summed in coordinate order.
//
//   nearswap    θ = w θ_1 + (1 − w) θ0, w = clamp(t / max(|θ0 − θ_1|, 1e-6), 0, 1)
//               (nearswap.py; exactly one model besides the base).
//   sce         sce.py: with select_topk < 1 every τ_i keeps only the ⌊nnz(var)·select_topk⌋
//               coordinates of largest variance across the models (torch.var, unbiased=False;
//               ties: the lower index); each τ_i weighs w_i = mean_j τ_ij² / Σ_q mean_j τ_qj²
//               (1/K when that sum is below 1e-6); the τ that agree with the sign of their sum
//               (≥ 0: +) are averaged with those weights, the weights' sum clamped at 1e-6.
//   multislerp  multislerp.py: v_i = τ_i with a base, else θ_i; u_i = v_i / (‖v_i‖ + ε); the
//               weighted mean m = Σ w_i u_i (w normalised to sum 1 unless normalize_weights is
//               false) mapped back onto the sphere through the tangent space at m/‖m‖, scaled by
//               Σ w_i ‖v_i‖, plus the base. One model: θ_1 itself; ‖m‖ < ε: the weighted sum of
//               two models, an error for more. As every step is linear in the v_i, the result is
//               Σ_i c_i v_i with c_i from the Gram matrix of the v_i (one pass), then one pass.
//   nuslerp     nuslerp.py: two models (task vectors with a base), t = w_2 / (w_1 + w_2) (0.5
//               when |w_1 + w_2| < 1e-6); SLERP of v_1 and v_2 as they are (their units only
//               give the angle, norms clamped at 1e-7) per vector: the whole tensor
//               (nuslerp_flatten, the default), else each row of the last dimension, or with
//               nuslerp_row_wise each vector along dimension 0; linear where |sin θ| < 1e-8.
//   karcher     karcher.py: every input (the base too) at weight 1/n; the Riemannian mean of
//               the unit vectors of norm above tol by at most max_iter steps, times the mean
//               norm; as multislerp, on coefficients from the Gram matrix.
#pragma once

#include "merging/generalized.h"
#include "merging/operators.h"

namespace compatbench::merging {

// Model Stock's t from the dots τ_i·τ_q (i <= q, row-major over the upper triangle) of k
// task vectors: k·c / (1 + (k − 1)·c), c the mean pairwise cosine (model_stock.py: the norms'
// product clamped at 1e-6, each cosine to [−1, 1]).
double model_stock_t(const double* dots, std::size_t k);

// Model Stock with filter_wise: one t per row of the last dimension (model_stock.py's norms
// along dim=-1; a 1-D tensor is one row), θ = θ0 + t_row · τ̄.
void model_stock_filter_wise(const TensorScope& s, TensorBlocks& in, const BlockSink& out,
                             TensorMergeStats& st);

// SCE's sce_mask: sets in keep.bits the ⌊nnz(var)·select_topk⌋ coordinates of largest
// variance var[0..n) (the count in float32, as torch multiplies it; ties to the lower index).
void mark_largest_variances(const MergeParams& p, const std::vector<double>& var, std::size_t n,
                            Selection& keep);

// Whether mergekit's method mixes its inputs in the dtypes they have (torch.stack, a − b,
// w·a + b), so that its result has torch's promoted dtype (F16 with BF16 or F32: F32):
// linear, multislerp, model_stock, nearswap, sce, nuslerp. The generalized task arithmetic
// methods convert the models to the base's dtype and cast back; slerp and karcher keep their
// first input's; passthrough its one input's.
bool promotes_dtypes(Method m);

// Whether merge_tensor hands the method to mergekit_pass.
bool is_mergekit_kernel(Method m);

// The method's passes over one in-scope tensor; std::invalid_argument naming the tensor
// where mergekit raises (multislerp's zero mean of more than two models).
void mergekit_pass(const MergeParams& p, const TensorScope& s, TensorBlocks& in,
                   const BlockSink& out, TensorMergeStats& st);

}  // namespace compatbench::merging
