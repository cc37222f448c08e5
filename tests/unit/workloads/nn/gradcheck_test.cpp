// Finite-difference gradient checks (double precision, central differences) for every
// layer and loss of the training engine.
#include <gtest/gtest.h>

#include <functional>

#include "nn/losses.h"

using namespace compatbench::nn;
using M = Mat<double>;

namespace {

M random_matrix(Eigen::Index r, Eigen::Index c, Random& rng, double scale = 1.0) {
    M m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.normal();
    return m;
}

// Checks d loss / d x[i] for every element of `x` (up to 60, spread over it).
void check(const std::string& what, double* x, Eigen::Index n, const double* analytic,
           const std::function<double()>& loss, double tol = 1e-6) {
    const double h = 1e-6;
    const Eigen::Index stride = std::max<Eigen::Index>(1, n / 60);
    for (Eigen::Index i = 0; i < n; i += stride) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss();
        x[i] = keep - h;
        const double down = loss();
        x[i] = keep;
        const double numeric = (up - down) / (2 * h);
        const double err = std::abs(numeric - analytic[i]) /
                           std::max(1.0, std::abs(numeric) + std::abs(analytic[i]));
        ASSERT_LT(err, tol) << what << "[" << i << "]: analytic " << analytic[i] << " numeric "
                            << numeric;
    }
}

// A module with forward/backward/params, checked through loss = sum(forward(x) .* R).
template <class Module>
void check_module(const std::string& what, Module& module, M x, Random& rng) {
    M probe_out = module.forward(x);
    const M r = random_matrix(probe_out.rows(), probe_out.cols(), rng);
    auto loss = [&]() { return (module.forward(x).array() * r.array()).sum(); };
    module.zero_grad();
    module.forward(x);
    const M dx = module.backward(r);
    check(what + " input", x.data(), x.size(), dx.data(), loss);
    std::vector<Param<double>> params;
    module.params("", params);
    for (auto& p : params) check(what + " " + p.name, p.value, p.size, p.grad, loss);
}

}  // namespace

TEST(GradCheck, Linear) {
    Random rng(1);
    Linear<double> layer(5, 4, rng);
    check_module("linear", layer, random_matrix(6, 5, rng), rng);
}

TEST(GradCheck, LayerNorm) {
    Random rng(2);
    LayerNorm<double> norm(7);
    std::vector<Param<double>> p;
    norm.params("", p);
    for (auto& q : p)
        for (Eigen::Index i = 0; i < q.size; ++i) q.value[i] += 0.3 * rng.normal();
    check_module("layernorm", norm, random_matrix(5, 7, rng, 2.0), rng);
}

TEST(GradCheck, Activations) {
    for (Activation a : {Activation::gelu, Activation::relu}) {
        Random rng(3);
        Act<double> act(a);
        M x = random_matrix(4, 6, rng);
        const M r = random_matrix(4, 6, rng);
        act.forward(x);
        const M dx = act.backward(r);
        check(a == Activation::gelu ? "gelu" : "relu", x.data(), x.size(), dx.data(),
              [&]() { return (act.forward(x).array() * r.array()).sum(); });
    }
}

TEST(GradCheck, MlpWithAndWithoutLayerNorm) {
    for (bool ln : {true, false}) {
        Random rng(4);
        Mlp<double> mlp({{6, 8, 7, 3}, Activation::gelu, ln}, rng);
        check_module(ln ? "mlp+ln" : "mlp", mlp, random_matrix(5, 6, rng), rng);
    }
}

TEST(GradCheck, SoftmaxCrossEntropy) {
    Random rng(5);
    M logits = random_matrix(6, 4, rng, 2.0);
    const std::vector<int> labels = {0, 3, 1, 1, 2, 0};
    M d;
    softmax_cross_entropy<double>(logits, labels, d);
    M scratch;
    check("ce", logits.data(), logits.size(), d.data(),
          [&]() { return softmax_cross_entropy<double>(logits, labels, scratch); });
}

TEST(GradCheck, InfoNceWithLearnableScale) {
    Random rng(6);
    M a = random_matrix(5, 4, rng), b = random_matrix(5, 4, rng);
    double log_scale = 1.3;
    const auto g = info_nce<double>(a, b, log_scale);
    auto loss = [&]() { return info_nce<double>(a, b, log_scale).loss; };
    check("infonce a", a.data(), a.size(), g.da.data(), loss);
    check("infonce b", b.data(), b.size(), g.db.data(), loss);
    check("infonce scale", &log_scale, 1, &g.dlog_scale, loss);
}

TEST(GradCheck, SigmoidPairwise) {
    Random rng(7);
    M a = random_matrix(5, 3, rng), b = random_matrix(5, 3, rng);
    double log_scale = std::log(10.0), bias = -2.0;
    const auto g = sigmoid_pairwise<double>(a, b, log_scale, bias);
    auto loss = [&]() { return sigmoid_pairwise<double>(a, b, log_scale, bias).loss; };
    check("sigmoid a", a.data(), a.size(), g.da.data(), loss);
    check("sigmoid b", b.data(), b.size(), g.db.data(), loss);
    check("sigmoid scale", &log_scale, 1, &g.dlog_scale, loss);
    check("sigmoid bias", &bias, 1, &g.dbias, loss);
}

TEST(GradCheck, VicregInvariance) {
    Random rng(8);
    // Small spread so that the variance hinge is active in some dimensions.
    M a = random_matrix(8, 5, rng, 0.6), b = random_matrix(8, 5, rng, 1.4);
    const auto g = invariance_vicreg<double>(a, b);
    auto loss = [&]() { return invariance_vicreg<double>(a, b).loss; };
    check("vicreg a", a.data(), a.size(), g.da.data(), loss);
    check("vicreg b", b.data(), b.size(), g.db.data(), loss);
}

TEST(GradCheck, MaskedMse) {
    Random rng(9);
    M x = random_matrix(4, 6, rng), target = random_matrix(4, 6, rng);
    M mask = M::Zero(4, 6);
    for (Eigen::Index i = 0; i < mask.size(); i += 3) mask.data()[i] = 1;
    M g, scratch;
    masked_mse<double>(x, target, mask, g);
    check("masked mse", x.data(), x.size(), g.data(),
          [&]() { return masked_mse<double>(x, target, mask, scratch); });
    EXPECT_EQ(g(0, 1), 0.0);  // unmasked entries get no gradient
}

TEST(GradCheck, MultiTaskHeads) {
    Random rng(10);
    MultiTaskHeads<double> heads(5, {3, 2, 4}, rng);
    M f = random_matrix(6, 5, rng);
    const std::vector<std::vector<int>> labels = {
        {0, 1, 2, 0, 1, 2}, {1, 0, 1, 0, 1, 1}, {3, 2, 1, 0, 3, 2}};
    auto loss = [&]() {
        heads.forward(f);
        M d;
        MultiTaskHeads<double> copy = heads;  // backward adds gradients: use a copy
        copy.forward(f);
        return copy.backward(labels, d);
    };
    heads.zero_grad();
    heads.forward(f);
    M df;
    heads.backward(labels, df);
    check("heads features", f.data(), f.size(), df.data(), loss);
    std::vector<Param<double>> p;
    heads.params("", p);
    for (auto& q : p) check("heads " + q.name, q.value, q.size, q.grad, loss);
}
