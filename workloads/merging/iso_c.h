// Iso-C (methods.md §3.2; Marczak et al., "No Task Left Behind: Isotropic Model Merging with
// Common and Task-Specific Subspaces", 2025), as its authors' code defines it
// (github.com/danielm1405/iso-merging, src/utils/iso.py `iso_c`, commit d34010af): for a 2-D
// tensor whose name does not hold "text_projection", the task vectors are summed,
// Δ = Σ_i τ_i, and Δ's singular values are all replaced by their mean: Δ' = σ̄ U Vᵀ with
// Δ = U Σ Vᵀ (thin SVD) and σ̄ = mean(Σ). Every other tensor takes the mean τ̄. The merge is
// θ = θ0 + c·Δ' (or θ0 + c·τ̄), c the scaling coefficient the authors call α.
#pragma once

#include <vector>

#include "merging/operators.h"

namespace compatbench::merging {

// Whether Iso-C flattens this tensor's spectrum (else it takes the mean task vector).
bool iso_c_flattens(const TensorScope& scope);

// σ̄ U Vᵀ of Δ = Σ_i τ_i, row-major (scope.row_length columns), read from `in` in one pass.
// std::invalid_argument when the tensor is not a matrix of that row length.
std::vector<double> iso_c_update(const TensorScope& scope, TensorBlocks& in);

}  // namespace compatbench::merging
