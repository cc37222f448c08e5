// MLP building blocks with forward and manual backward passes, over Eigen, for a batch of
// row vectors (N x features). Templated on the scalar: float to train, double for
// finite-difference gradient checks. Single-threaded: parallelism is across ranks.
//
// Each layer caches what its backward pass needs from the last forward pass; backward()
// adds to the parameter gradients (zero them with zero_grad()) and returns dL/dinput.
#pragma once

#include <string>
#include <vector>

#include "common/eigen.h"
#include "nn/random.h"

namespace compatbench::nn {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// A named parameter tensor and its gradient (for optimisers and checkpoints).
template <class T>
struct Param {
    std::string name;
    T* value;
    T* grad;
    Eigen::Index size;
    std::vector<std::uint64_t> shape;
};

// y = x W^T + b; W is (out x in), like torch.nn.Linear.
template <class T>
class Linear {
  public:
    Linear(int in, int out, Random& rng);
    // Takes x by value: it is kept for the backward pass (move it in to avoid a copy).
    Mat<T> forward(Mat<T> x);
    Mat<T> backward(const Mat<T>& dy);
    void params(const std::string& prefix, std::vector<Param<T>>& out);
    void zero_grad();
    int in() const { return static_cast<int>(w_.cols()); }
    int out() const { return static_cast<int>(w_.rows()); }
    Mat<T>& weight() { return w_; }
    Vec<T>& bias() { return b_; }

  private:
    Mat<T> w_, dw_;
    Vec<T> b_, db_;
    Mat<T> x_;
};

// Per-row normalisation with a learned scale and shift (epsilon 1e-5).
template <class T>
class LayerNorm {
  public:
    explicit LayerNorm(int dim);
    Mat<T> forward(const Mat<T>& x);
    Mat<T> backward(const Mat<T>& dy);
    void params(const std::string& prefix, std::vector<Param<T>>& out);
    void zero_grad();

  private:
    Vec<T> gamma_, beta_, dgamma_, dbeta_;
    Mat<T> xhat_;
    Vec<T> inv_std_;
};

enum class Activation { gelu, relu, none };

template <class T>
class Act {
  public:
    explicit Act(Activation kind) : kind_(kind) {}
    Mat<T> forward(Mat<T> x);  // kept for the backward pass, like Linear
    Mat<T> backward(const Mat<T>& dy) const;

  private:
    Activation kind_;
    Mat<T> x_;
    Mat<T> cdf_;  // GELU: Phi(x) of the last forward pass
};

struct MlpSpec {
    std::vector<int> dims;  // input, hidden..., output
    Activation activation = Activation::gelu;
    bool layer_norm = true;  // before each hidden activation
};

// Linear -> [LayerNorm] -> activation, repeated; the last Linear has no activation.
template <class T>
class Mlp {
  public:
    Mlp(const MlpSpec& spec, Random& rng);
    Mat<T> forward(const Mat<T>& x);
    Mat<T> backward(const Mat<T>& dy);
    void params(const std::string& prefix, std::vector<Param<T>>& out);
    void zero_grad();
    const MlpSpec& spec() const { return spec_; }
    std::size_t parameter_count();
    // FLOPs of one forward + backward pass on a batch of n rows (multiply-adds count 2).
    double train_flops(Eigen::Index n) const;

  private:
    MlpSpec spec_;
    std::vector<Linear<T>> linear_;
    std::vector<LayerNorm<T>> norm_;
    std::vector<Act<T>> act_;
};

}  // namespace compatbench::nn
