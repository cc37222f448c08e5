// Representation similarity on paired probe features (methods.md §1): mutual k-NN overlap
// ("ease", §1.1), linear CKA (§1.4) and effective rank (§1.5).
//
// Rows of every matrix are the same probe samples. k-NN lists are computed once per model
// (knn_lists) and reused by every pair it takes part in (mutual_knn): the predictor's cost
// grows with the number of models, not of pairs.
#pragma once

#include <cstdint>
#include <vector>

#include "common/eigen.h"

namespace compatbench::similarity {

// Nearest-neighbour lists of every row: n x k indices, each row ordered by cosine similarity
// (descending), ties by the lower index; the row itself is excluded (§1.1 step 2). A prefix
// of length k' < k of each list is the k'-NN list, so one computation serves every k' <= k.
struct KnnLists {
    int n = 0;
    int k = 0;
    std::vector<std::int32_t> index;  // row-major n x k
    const std::int32_t* row(int i) const { return index.data() + static_cast<std::size_t>(i) * k; }
};

// Rows are L2-normalised first; a zero (or non-finite) row is std::invalid_argument naming
// it. Memory is O(n k + block n): similarities are formed `block` rows at a time.
// Requires 1 <= k < n.
KnnLists knn_lists(const MatF& features, int k, int block = 256);

// o_i = |N_A(i) ∩ N_B(i)| / k over the first k entries of each list (k <= both lists' k);
// ease = mean_i o_i (§1.1 steps 3-4).
std::vector<double> mutual_knn_overlap(const KnnLists& a, const KnnLists& b, int k);
double mutual_knn(const KnnLists& a, const KnnLists& b, int k);

// Ease above chance (§1.1, "Permutation null"): ease of a against b with b's rows shuffled
// (b's lists relabelled, N_b'(i) = π⁻¹(N_b(π(i))): no neighbour search again), over `draws`
// seeded permutations (Fisher-Yates over SplitMix64 from `seed`): their mean and sample sd.
struct NullEase {
    double mean = 0.0, sd = 0.0;
};
NullEase mutual_knn_null(const KnnLists& a, const KnnLists& b, int k, int draws,
                         std::uint64_t seed);

// Linear CKA of row-normalised features (§1.4), biased HSIC, no epsilon in the denominator.
// Computed as ||Xcᵀ Yc||²_F / (||Xcᵀ Xc||_F ||Ycᵀ Yc||_F) with column-centred Xc, Yc, which
// equals tr(KHLH) / sqrt(tr(KHKH) tr(LHLH)) without forming the n x n kernels.
double linear_cka(const MatD& x, const MatD& y);

// Effective rank (§1.5) of an N x K matrix: exp of the entropy of the normalised singular
// values; `center` subtracts column means first. Zero matrix: NaN.
double effective_rank(const MatD& a, bool center = false);

// Rows L2-normalised (zero row: std::invalid_argument).
MatD normalized_rows(const MatD& x);

}  // namespace compatbench::similarity
