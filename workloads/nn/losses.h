// Training objectives of the model library (zoo.md "Models"), each returning the loss and
// the gradient with respect to its inputs. Rows of every matrix are samples.
#pragma once

#include <vector>

#include "nn/layers.h"

namespace compatbench::nn {

// Mean softmax cross-entropy of `logits` (N x C) against class `labels`; fills dlogits.
template <class T>
T softmax_cross_entropy(const Mat<T>& logits, const std::vector<int>& labels, Mat<T>& dlogits);

// Fraction of rows whose arg-max is the label.
template <class T>
double accuracy(const Mat<T>& logits, const std::vector<int>& labels);

template <class T>
struct PairLoss {
    T loss = 0;
    Mat<T> da, db;     // gradients for the two inputs (before their L2 normalisation)
    T dlog_scale = 0;  // gradient for the log of the logit scale
    T dbias = 0;       // gradient for the logit bias (sigmoid loss)
};

// CLIP-like symmetric InfoNCE: logits = exp(log_scale) * norm(a) norm(b)^T, the i-th row of
// a matches the i-th of b; loss = (CE over rows + CE over columns) / 2.
template <class T>
PairLoss<T> info_nce(const Mat<T>& a, const Mat<T>& b, T log_scale);

// SigLIP-like pairwise sigmoid loss: logits = exp(log_scale) * norm(a) norm(b)^T + bias,
// label +1 on the diagonal and -1 elsewhere; loss = -sum log sigmoid(label * logit) / N.
template <class T>
PairLoss<T> sigmoid_pairwise(const Mat<T>& a, const Mat<T>& b, T log_scale, T bias);

// Two-view augmentation invariance without collapse (VICReg): invariance (mean squared
// difference of the views) * 25 + variance hinge (per-dimension std below 1) * 25 +
// covariance (squared off-diagonal covariances / d) * 1, for both views.
template <class T>
PairLoss<T> invariance_vicreg(const Mat<T>& a, const Mat<T>& b);

// Masked reconstruction: mean squared error of `reconstruction` against `target` over the
// entries where `mask` is 1; fills the gradient for the reconstruction.
template <class T>
T masked_mse(const Mat<T>& reconstruction, const Mat<T>& target, const Mat<T>& mask, Mat<T>& grad);

// Several classification heads on shared features; the loss is the mean of the heads'
// cross-entropies.
template <class T>
class MultiTaskHeads {
  public:
    MultiTaskHeads(int features, const std::vector<int>& classes, Random& rng);
    std::vector<Mat<T>> forward(const Mat<T>& features);
    // Loss over the last forward's heads; adds parameter gradients, returns d features.
    T backward(const std::vector<std::vector<int>>& labels, Mat<T>& dfeatures);
    void params(const std::string& prefix, std::vector<Param<T>>& out);
    void zero_grad();
    std::size_t heads() const { return heads_.size(); }
    Linear<T>& head(std::size_t i) { return heads_[i]; }

  private:
    std::vector<Linear<T>> heads_;
    std::vector<Mat<T>> logits_;
};

}  // namespace compatbench::nn
