// TSV-Merge (methods.md §3.2; Gargiulo et al., "Task Singular Vectors: Reducing Task
// Interference in Model Merging", CVPR 2025), as its authors' code defines it
// (github.com/AntoAndGar/task_singular_vectors, src/utils/TSVM_utils.py
// `compute_and_sum_svd_mem_reduction`, commit a6c97188f7aa0bb20753de4f2939be89dd64f1c3):
// for a 2-D tensor whose name does not hold "text_projection", each of the T task vectors
// keeps its k = int(min(rows, cols) · (1/T)) leading singular triplets, τ_i ≈ U_i S_i V_iᵀ;
// their singular vectors are put side by side, U = [U_1 … U_T], V = [V_1 … V_T], and
// decorrelated by their polar factors (the orthogonal matrix nearest each: P Qᵀ of its thin
// SVD P Σ Qᵀ); the merged task vector is polar(U) diag(S_1 … S_T) polar(V)ᵀ. Every other
// tensor takes the mean task vector. The merge is θ = θ0 + c·(that), c the scaling
// coefficient the authors call α (they search it in (0, 3]).
#pragma once

#include <vector>

#include "merging/operators.h"

namespace compatbench::merging {

// Whether TSV-Merge decorrelates this tensor's singular vectors (else the mean task vector).
bool tsv_decorrelates(const TensorScope& scope);

// The merged task vector of a matrix, row-major (scope.row_length columns), reading `in` once
// per model (one task vector in memory at a time, in double). std::invalid_argument when the
// tensor is not a matrix of that row length.
std::vector<double> tsv_update(const TensorScope& scope, TensorBlocks& in);

}  // namespace compatbench::merging
