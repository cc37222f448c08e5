// Cross-modal alignment of frozen encoders (methods.md §2): the CSA adapter (§2.1), the
// trained linear adapter (§2.2) and image->text Recall@k (§2.3).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/eigen.h"

namespace compatbench::alignment {

using VecD = Eigen::VectorXd;

struct CsaParams {
    int dim = 200;      // kept components: min(d_v, d_t, dim)
    double eps = 1e-6;  // added to the diagonals of both covariances
};

// A fitted CSA adapter: train means, canonical directions and correlations.
struct CsaModel {
    VecD mean_v, mean_t;
    MatD w_v, w_t;  // d x dim
    VecD rho;       // dim canonical correlations, descending
    // (x - mean) W, L2-normalised per row (§2.1 step 3).
    MatD embed_vision(const MatF& x) const;
    MatD embed_text(const MatF& x) const;
};

// Fits on paired rows (row i of `vision` with row i of `text`). std::invalid_argument for
// mismatched or too few rows.
CsaModel fit_csa(const MatF& vision, const MatF& text, const CsaParams& params = {});

// sim(v, t) = Σ_i rho_i ẑ_v,i ẑ_t,i as a captions x images matrix (column j: image j).
MatD csa_similarity(const CsaModel& model, const MatF& images, const MatF& captions);

struct LinearAdapterParams {
    int dim = 64;               // shared space
    int epochs = 10;            // passes over the training images
    int batch = 256;            // images per step (each with one of its captions)
    double lr = 1e-3;           // Adam
    double temperature = 0.05;  // InfoNCE temperature (fixed)
    std::uint64_t seed = 0;
};

struct LinearAdapterModel {
    MatD w_v, w_t;  // d x dim
    VecD b_v, b_t;  // dim
    double final_loss = 0.0;
    long steps = 0;
};

// Trains W_v, W_t with symmetric InfoNCE (§2.2). `caption_image[c]` is the image row of
// caption row c.
LinearAdapterModel fit_linear_adapter(const MatF& images, const MatF& captions,
                                      const std::vector<int>& caption_image,
                                      const LinearAdapterParams& params);

// Cosine similarity in the shared space, captions x images.
MatD linear_adapter_similarity(const LinearAdapterModel& model, const MatF& images,
                               const MatF& captions);

// Image->text Recall@k (§2.3) from a captions x images similarity matrix: for each image,
// every caption is ranked by similarity (ties: lower caption index first); a hit when one of
// its own captions ranks within the first k. Returns one value per entry of `ks`.
std::vector<double> recall_at_k(const MatD& caption_by_image, const std::vector<int>& caption_image,
                                std::span<const int> ks);

}  // namespace compatbench::alignment
