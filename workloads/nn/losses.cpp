#include "nn/losses.h"

#include <cmath>
#include <stdexcept>

namespace compatbench::nn {

namespace {
// Row-wise L2 normalisation and its backward pass.
template <class T>
Mat<T> normalise_rows(const Mat<T>& x, Vec<T>& norms) {
    norms = exact_sqrt(x.rowwise().squaredNorm().array()).max(static_cast<T>(1e-12)).matrix();
    return x.array().colwise() / norms.array();
}

template <class T>
Mat<T> normalise_rows_backward(const Mat<T>& xhat, const Vec<T>& norms, const Mat<T>& dxhat) {
    const Vec<T> dot = (xhat.array() * dxhat.array()).rowwise().sum();
    Mat<T> dx = dxhat - (xhat.array().colwise() * dot.array()).matrix();
    return dx.array().colwise() / norms.array();
}

// Row-wise softmax of `logits` into `probs`; returns the sum over rows of log-sum-exp.
// Whole-matrix passes: exp vectorises down the contiguous columns (a loop over the strided
// rows would call the scalar exp).
template <class T>
T softmax_rows(const Mat<T>& logits, Mat<T>& probs) {
    const Vec<T> m = logits.rowwise().maxCoeff();
    probs.resize(logits.rows(), logits.cols());
    for (Eigen::Index c = 0; c < logits.cols(); ++c)
        probs.col(c) = (logits.col(c) - m).array().exp().matrix();
    const Vec<T> z = probs.rowwise().sum();
    probs = probs.array().colwise() / z.array();
    return (z.array().log() + m.array()).sum();
}

// log-softmax rows of `logits` and the CE gradient against the diagonal (row i -> class i).
template <class T>
T diagonal_ce(const Mat<T>& logits, Mat<T>& dlogits) {
    const Eigen::Index n = logits.rows();
    const T loss = softmax_rows(logits, dlogits) - logits.diagonal().sum();
    dlogits.diagonal().array() -= 1;
    dlogits /= static_cast<T>(n);
    return loss / static_cast<T>(n);
}
}  // namespace

template <class T>
T softmax_cross_entropy(const Mat<T>& logits, const std::vector<int>& labels, Mat<T>& dlogits) {
    const Eigen::Index n = logits.rows();
    if (static_cast<Eigen::Index>(labels.size()) != n) {
        throw std::invalid_argument("softmax_cross_entropy: labels do not match rows");
    }
    T loss = softmax_rows(logits, dlogits);
    for (Eigen::Index i = 0; i < n; ++i) {
        const int y = labels[static_cast<std::size_t>(i)];
        if (y < 0 || y >= logits.cols()) {
            throw std::invalid_argument("softmax_cross_entropy: label out of range");
        }
        loss -= logits(i, y);
        dlogits(i, y) -= 1;
    }
    dlogits /= static_cast<T>(n);
    return loss / static_cast<T>(n);
}

template <class T>
double accuracy(const Mat<T>& logits, const std::vector<int>& labels) {
    std::size_t hits = 0;
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
        Eigen::Index arg = 0;
        logits.row(i).maxCoeff(&arg);
        hits += arg == labels[static_cast<std::size_t>(i)];
    }
    return logits.rows() ? static_cast<double>(hits) / static_cast<double>(logits.rows()) : 0.0;
}

template <class T>
PairLoss<T> info_nce(const Mat<T>& a, const Mat<T>& b, T log_scale) {
    Vec<T> na, nb;
    const Mat<T> ah = normalise_rows(a, na), bh = normalise_rows(b, nb);
    const T scale = std::exp(log_scale);
    const Mat<T> cos = ah * bh.transpose();
    const Mat<T> logits = scale * cos;
    Mat<T> drow, dcol;
    const T lr = diagonal_ce<T>(logits, drow);
    const T lc = diagonal_ce<T>(Mat<T>(logits.transpose()), dcol);
    const Mat<T> dlogits = static_cast<T>(0.5) * (drow + dcol.transpose());
    PairLoss<T> out;
    out.loss = static_cast<T>(0.5) * (lr + lc);
    out.dlog_scale = (dlogits.array() * cos.array()).sum() * scale;
    const Mat<T> dcos = scale * dlogits;
    out.da = normalise_rows_backward<T>(ah, na, dcos * bh);
    out.db = normalise_rows_backward<T>(bh, nb, dcos.transpose() * ah);
    return out;
}

template <class T>
PairLoss<T> sigmoid_pairwise(const Mat<T>& a, const Mat<T>& b, T log_scale, T bias) {
    Vec<T> na, nb;
    const Mat<T> ah = normalise_rows(a, na), bh = normalise_rows(b, nb);
    const T scale = std::exp(log_scale);
    const Mat<T> cos = ah * bh.transpose();
    const Eigen::Index n = a.rows();
    Mat<T> dlogits(n, n);
    T loss = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
        for (Eigen::Index i = 0; i < n; ++i) {
            const T z = i == j ? 1 : -1;
            const T x = z * (scale * cos(i, j) + bias);
            // -log sigmoid(x) = softplus(-x), computed stably
            loss += x > 0 ? std::log1p(std::exp(-x)) : -x + std::log1p(std::exp(x));
            const T s = static_cast<T>(1) / (static_cast<T>(1) + std::exp(x));  // sigmoid(-x)
            dlogits(i, j) = -z * s;
        }
    }
    const T inv_n = static_cast<T>(1) / static_cast<T>(n);
    dlogits *= inv_n;
    PairLoss<T> out;
    out.loss = loss * inv_n;
    out.dbias = dlogits.sum();
    out.dlog_scale = (dlogits.array() * cos.array()).sum() * scale;
    const Mat<T> dcos = scale * dlogits;
    out.da = normalise_rows_backward<T>(ah, na, dcos * bh);
    out.db = normalise_rows_backward<T>(bh, nb, dcos.transpose() * ah);
    return out;
}

namespace {
// Variance hinge + covariance terms of one view; adds weighted gradients to dz.
template <class T>
T vicreg_view(const Mat<T>& z, T var_weight, T cov_weight, Mat<T>& dz) {
    const Eigen::Index n = z.rows(), d = z.cols();
    const T nm1 = static_cast<T>(n - 1);
    const Mat<T> zc = z.rowwise() - z.colwise().mean();
    const Vec<T> var = zc.array().square().colwise().sum().transpose() / nm1;
    const Vec<T> sd = exact_sqrt(var.array() + static_cast<T>(1e-4));
    T v = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
        if (sd(j) < 1) {
            v += 1 - sd(j);
            // d(1 - sd_j)/dz_ij = -(z_ij - mean_j) / ((n - 1) sd_j); the mean's part sums to 0.
            dz.col(j) -= (var_weight / static_cast<T>(d)) * zc.col(j) / (nm1 * sd(j));
        }
    }
    v /= static_cast<T>(d);
    const Mat<T> cov = zc.transpose() * zc / nm1;
    Mat<T> off = cov;
    off.diagonal().setZero();
    const T c = off.array().square().sum() / static_cast<T>(d);
    // dc/dcov = 2 off / d; dcov/dzc gives dzc = 2 zc G / (n - 1) for symmetric G.
    dz += cov_weight * (zc * (static_cast<T>(2) * off / static_cast<T>(d))) *
          (static_cast<T>(2) / nm1);
    return var_weight * v + cov_weight * c;
}
}  // namespace

template <class T>
PairLoss<T> invariance_vicreg(const Mat<T>& a, const Mat<T>& b) {
    const T lambda = 25, mu = 25, nu = 1;
    const T count = static_cast<T>(a.size());
    PairLoss<T> out;
    const Mat<T> diff = a - b;
    out.loss = lambda * diff.array().square().sum() / count;
    out.da = (static_cast<T>(2) * lambda / count) * diff;
    out.db = -out.da;
    out.loss += vicreg_view<T>(a, mu, nu, out.da);
    out.loss += vicreg_view<T>(b, mu, nu, out.db);
    return out;
}

template <class T>
T masked_mse(const Mat<T>& reconstruction, const Mat<T>& target, const Mat<T>& mask, Mat<T>& grad) {
    const T count = std::max(mask.sum(), static_cast<T>(1));
    const Mat<T> diff = (reconstruction - target).cwiseProduct(mask);
    grad = (static_cast<T>(2) / count) * diff;
    return diff.array().square().sum() / count;
}

template <class T>
MultiTaskHeads<T>::MultiTaskHeads(int features, const std::vector<int>& classes, Random& rng) {
    for (int c : classes) heads_.emplace_back(features, c, rng);
}

template <class T>
std::vector<Mat<T>> MultiTaskHeads<T>::forward(const Mat<T>& features) {
    logits_.clear();
    for (auto& h : heads_) logits_.push_back(h.forward(features));
    return logits_;
}

template <class T>
T MultiTaskHeads<T>::backward(const std::vector<std::vector<int>>& labels, Mat<T>& dfeatures) {
    T loss = 0;
    const T inv = static_cast<T>(1) / static_cast<T>(heads_.size());
    for (std::size_t h = 0; h < heads_.size(); ++h) {
        Mat<T> dl;
        loss += softmax_cross_entropy<T>(logits_[h], labels[h], dl);
        dl *= inv;
        const Mat<T> df = heads_[h].backward(dl);
        if (h == 0) {
            dfeatures = df;
        } else {
            dfeatures += df;
        }
    }
    return loss * inv;
}

template <class T>
void MultiTaskHeads<T>::params(const std::string& prefix, std::vector<Param<T>>& out) {
    for (std::size_t h = 0; h < heads_.size(); ++h)
        heads_[h].params(prefix + "heads." + std::to_string(h) + ".", out);
}

template <class T>
void MultiTaskHeads<T>::zero_grad() {
    for (auto& h : heads_) h.zero_grad();
}

#define COMPATBENCH_LOSSES(T)                                                             \
    template T softmax_cross_entropy<T>(const Mat<T>&, const std::vector<int>&, Mat<T>&); \
    template double accuracy<T>(const Mat<T>&, const std::vector<int>&);                  \
    template PairLoss<T> info_nce<T>(const Mat<T>&, const Mat<T>&, T);                    \
    template PairLoss<T> sigmoid_pairwise<T>(const Mat<T>&, const Mat<T>&, T, T);         \
    template PairLoss<T> invariance_vicreg<T>(const Mat<T>&, const Mat<T>&);              \
    template T masked_mse<T>(const Mat<T>&, const Mat<T>&, const Mat<T>&, Mat<T>&);       \
    template class MultiTaskHeads<T>;
COMPATBENCH_LOSSES(float)
COMPATBENCH_LOSSES(double)
#undef COMPATBENCH_LOSSES

}  // namespace compatbench::nn
