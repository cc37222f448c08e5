#include "nn/layers.h"

#include <cmath>
#include <unsupported/Eigen/SpecialFunctions>

namespace compatbench::nn {

// ---- Linear -------------------------------------------------------------------------
template <class T>
Linear<T>::Linear(int in, int out, Random& rng) : w_(out, in), dw_(out, in), b_(out), db_(out) {
    // torch's default: U(-1/sqrt(in), 1/sqrt(in)) for weights and bias.
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    for (Eigen::Index c = 0; c < w_.cols(); ++c) {
        for (Eigen::Index r = 0; r < w_.rows(); ++r)
            w_(r, c) = static_cast<T>(rng.uniform(-bound, bound));
    }
    for (Eigen::Index r = 0; r < b_.size(); ++r) b_(r) = static_cast<T>(rng.uniform(-bound, bound));
    zero_grad();
}

template <class T>
Mat<T> Linear<T>::forward(Mat<T> x) {
    x_ = std::move(x);
    Mat<T> y = x_ * w_.transpose();
    y.rowwise() += b_.transpose();
    return y;
}

template <class T>
Mat<T> Linear<T>::backward(const Mat<T>& dy) {
    dw_.noalias() += dy.transpose() * x_;
    db_ += dy.colwise().sum().transpose();
    return dy * w_;
}

template <class T>
void Linear<T>::params(const std::string& prefix, std::vector<Param<T>>& out) {
    out.push_back({prefix + "weight",
                   w_.data(),
                   dw_.data(),
                   w_.size(),
                   {static_cast<std::uint64_t>(w_.rows()), static_cast<std::uint64_t>(w_.cols())}});
    out.push_back({prefix + "bias",
                   b_.data(),
                   db_.data(),
                   b_.size(),
                   {static_cast<std::uint64_t>(b_.size())}});
}

template <class T>
void Linear<T>::zero_grad() {
    dw_.setZero();
    db_.setZero();
}

// ---- LayerNorm ------------------------------------------------------------------------
template <class T>
LayerNorm<T>::LayerNorm(int dim)
    : gamma_(Vec<T>::Ones(dim)),
      beta_(Vec<T>::Zero(dim)),
      dgamma_(Vec<T>::Zero(dim)),
      dbeta_(Vec<T>::Zero(dim)) {}

template <class T>
Mat<T> LayerNorm<T>::forward(const Mat<T>& x) {
    const auto d = static_cast<T>(x.cols());
    const Vec<T> mean = x.rowwise().sum() / d;
    xhat_ = x.colwise() - mean;
    const Vec<T> var = xhat_.array().square().rowwise().sum() / d;
    inv_std_ = exact_rsqrt(var.array() + static_cast<T>(1e-5));
    xhat_ = xhat_.array().colwise() * inv_std_.array();
    Mat<T> y = xhat_.array().rowwise() * gamma_.transpose().array();
    y.rowwise() += beta_.transpose();
    return y;
}

template <class T>
Mat<T> LayerNorm<T>::backward(const Mat<T>& dy) {
    dgamma_ += (dy.array() * xhat_.array()).colwise().sum().transpose().matrix();
    dbeta_ += dy.colwise().sum().transpose();
    const Mat<T> g = dy.array().rowwise() * gamma_.transpose().array();
    const auto d = static_cast<T>(dy.cols());
    const Vec<T> mean_g = g.rowwise().sum() / d;
    const Vec<T> mean_gx = (g.array() * xhat_.array()).rowwise().sum().matrix() / d;
    Mat<T> dx = g.colwise() - mean_g;
    dx -= (xhat_.array().colwise() * mean_gx.array()).matrix();
    return dx.array().colwise() * inv_std_.array();
}

template <class T>
void LayerNorm<T>::params(const std::string& prefix, std::vector<Param<T>>& out) {
    out.push_back({prefix + "weight",
                   gamma_.data(),
                   dgamma_.data(),
                   gamma_.size(),
                   {static_cast<std::uint64_t>(gamma_.size())}});
    out.push_back({prefix + "bias",
                   beta_.data(),
                   dbeta_.data(),
                   beta_.size(),
                   {static_cast<std::uint64_t>(beta_.size())}});
}

template <class T>
void LayerNorm<T>::zero_grad() {
    dgamma_.setZero();
    dbeta_.setZero();
}

// ---- activations ------------------------------------------------------------------------
template <class T>
Mat<T> Act<T>::forward(Mat<T> x) {
    x_ = std::move(x);
    switch (kind_) {
        case Activation::gelu:  // exact GELU: x * Phi(x), with Eigen's vectorised erf
            cdf_ = (static_cast<T>(0.5) *
                    (static_cast<T>(1) + (x_.array() * static_cast<T>(M_SQRT1_2)).erf()))
                       .matrix();
            return (x_.array() * cdf_.array()).matrix();
        case Activation::relu:
            return x_.cwiseMax(static_cast<T>(0));
        case Activation::none:
            return x_;
    }
    return x_;
}

template <class T>
Mat<T> Act<T>::backward(const Mat<T>& dy) const {
    switch (kind_) {
        case Activation::gelu: {  // d/dx x Phi(x) = Phi(x) + x phi(x)
            const auto v = x_.array();
            const auto pdf =
                (static_cast<T>(-0.5) * v.square()).exp() * static_cast<T>(0.3989422804014327);
            return (dy.array() * (cdf_.array() + v * pdf)).matrix();
        }
        case Activation::relu:
            return dy.binaryExpr(x_, [](T g, T v) { return v > 0 ? g : static_cast<T>(0); });
        case Activation::none:
            return dy;
    }
    return dy;
}

// ---- Mlp ------------------------------------------------------------------------------
template <class T>
Mlp<T>::Mlp(const MlpSpec& spec, Random& rng) : spec_(spec) {
    for (std::size_t i = 0; i + 1 < spec.dims.size(); ++i) {
        linear_.emplace_back(spec.dims[i], spec.dims[i + 1], rng);
        if (i + 2 < spec.dims.size()) {
            if (spec.layer_norm) norm_.emplace_back(spec.dims[i + 1]);
            act_.emplace_back(spec.activation);
        }
    }
}

template <class T>
Mat<T> Mlp<T>::forward(const Mat<T>& x) {
    Mat<T> h = x;
    for (std::size_t i = 0; i < linear_.size(); ++i) {
        h = linear_[i].forward(std::move(h));
        if (i < act_.size()) {
            if (spec_.layer_norm) h = norm_[i].forward(h);
            h = act_[i].forward(std::move(h));
        }
    }
    return h;
}

template <class T>
Mat<T> Mlp<T>::backward(const Mat<T>& dy) {
    Mat<T> g = dy;
    for (std::size_t i = linear_.size(); i-- > 0;) {
        if (i < act_.size()) {
            g = act_[i].backward(g);
            if (spec_.layer_norm) g = norm_[i].backward(g);
        }
        g = linear_[i].backward(g);
    }
    return g;
}

template <class T>
void Mlp<T>::params(const std::string& prefix, std::vector<Param<T>>& out) {
    for (std::size_t i = 0; i < linear_.size(); ++i) {
        linear_[i].params(prefix + "layers." + std::to_string(i) + ".", out);
        if (i < norm_.size()) norm_[i].params(prefix + "norms." + std::to_string(i) + ".", out);
    }
}

template <class T>
void Mlp<T>::zero_grad() {
    for (auto& l : linear_) l.zero_grad();
    for (auto& n : norm_) n.zero_grad();
}

template <class T>
std::size_t Mlp<T>::parameter_count() {
    std::vector<Param<T>> p;
    params("", p);
    std::size_t n = 0;
    for (const auto& q : p) n += static_cast<std::size_t>(q.size);
    return n;
}

template <class T>
double Mlp<T>::train_flops(Eigen::Index n) const {
    // Per Linear: forward 2*n*in*out; backward dW and dX: 4*n*in*out.
    double f = 0.0;
    for (std::size_t i = 0; i + 1 < spec_.dims.size(); ++i) {
        f += 6.0 * static_cast<double>(n) * spec_.dims[i] * spec_.dims[i + 1];
    }
    return f;
}

template class Linear<float>;
template class Linear<double>;
template class LayerNorm<float>;
template class LayerNorm<double>;
template class Act<float>;
template class Act<double>;
template class Mlp<float>;
template class Mlp<double>;

}  // namespace compatbench::nn
