// Every objective, trained with AdamW on a small synthetic problem, lowers its loss; the
// optimiser and schedule behave as documented; training is deterministic.
#include <gtest/gtest.h>

#include "nn/adam.h"
#include "nn/losses.h"

using namespace compatbench::nn;
using M = Mat<float>;

namespace {
// Classes around random centres in 8 dimensions; a second "view" with fresh noise.
struct Data {
    M x, view;
    std::vector<int> labels;
};

Data make_data(int n, Random& rng) {
    Data d{M(n, 8), M(n, 8), {}};
    M centres(4, 8);
    for (Eigen::Index i = 0; i < centres.size(); ++i)
        centres.data()[i] = static_cast<float>(2 * rng.normal());
    for (int i = 0; i < n; ++i) {
        const int c = i % 4;
        d.labels.push_back(c);
        for (int j = 0; j < 8; ++j) {
            d.x(i, j) = centres(c, j) + static_cast<float>(0.5 * rng.normal());
            d.view(i, j) = centres(c, j) + static_cast<float>(0.5 * rng.normal());
        }
    }
    return d;
}

std::vector<Param<float>> params_of(Mlp<float>& m) {
    std::vector<Param<float>> p;
    m.params("", p);
    return p;
}
}  // namespace

TEST(Schedule, WarmupThenCosine) {
    EXPECT_DOUBLE_EQ(scheduled_lr(1.0, 0, 100, 10), 0.1);
    EXPECT_DOUBLE_EQ(scheduled_lr(1.0, 9, 100, 10), 1.0);
    EXPECT_DOUBLE_EQ(scheduled_lr(1.0, 10, 100, 10), 1.0);
    EXPECT_NEAR(scheduled_lr(1.0, 55, 100, 10), 0.5, 1e-12);
    EXPECT_NEAR(scheduled_lr(1.0, 100, 100, 10, 0.1), 0.1, 1e-12);
}

TEST(AdamW, MinimisesAQuadraticAndDecaysWeights) {
    Vec<double> x = Vec<double>::Constant(3, 5.0), g(3);
    std::vector<Param<double>> p = {{"x", x.data(), g.data(), 3, {3}}};
    AdamW<double> opt(p, {0.1, 0.9, 0.999, 1e-8, 0.0});
    for (int i = 0; i < 500; ++i) {
        g = 2 * x;  // d/dx |x|^2
        opt.step(0.1);
    }
    EXPECT_LT(x.norm(), 1e-2);
    Mat<double> w = Mat<double>::Constant(2, 2, 1.0), gw = Mat<double>::Zero(2, 2);
    AdamW<double> decay({{"w", w.data(), gw.data(), 4, {2, 2}}}, {0.1, 0.9, 0.999, 1e-8, 0.5});
    decay.step(0.1);
    EXPECT_NEAR(w(0, 0), 1.0 - 0.1 * 0.5, 1e-12);  // zero gradient: only the decoupled decay
}

TEST(Training, EveryObjectiveLowersItsLoss) {
    Random rng(11);
    const Data data = make_data(64, rng);
    const int steps = 150;
    auto run = [&](const std::string& name, auto&& step_fn) {
        float first = 0, last = 0;
        for (int s = 0; s < steps; ++s) {
            const float loss = step_fn(s);
            if (s == 0) first = loss;
            last = loss;
        }
        EXPECT_LT(last, 0.7f * first) << name << ": " << first << " -> " << last;
    };
    {  // supervised classification
        Mlp<float> m({{8, 32, 4}, Activation::gelu, true}, rng);
        AdamW<float> opt(params_of(m), {1e-2});
        run("cross-entropy", [&](int s) {
            opt.zero_grad();
            M d;
            const float l = softmax_cross_entropy<float>(m.forward(data.x), data.labels, d);
            m.backward(d);
            opt.step(scheduled_lr(1e-2, s, steps, 10));
            return l;
        });
    }
    for (int kind = 0; kind < 3; ++kind) {  // InfoNCE, sigmoid, VICReg: two towers / views
        Mlp<float> a({{8, 32, 16}, Activation::gelu, true}, rng),
            b({{8, 32, 16}, Activation::relu, false}, rng);
        auto p = params_of(a);
        auto q = params_of(b);
        p.insert(p.end(), q.begin(), q.end());
        float log_scale = std::log(1 / 0.07f), bias = -10, dls = 0, db = 0;
        p.push_back({"log_scale", &log_scale, &dls, 1, {}});
        p.push_back({"bias", &bias, &db, 1, {}});
        AdamW<float> opt(p, {3e-3});
        const char* names[] = {"infonce", "sigmoid", "vicreg"};
        run(names[kind], [&](int s) {
            opt.zero_grad();
            const M za = a.forward(data.x), zb = b.forward(data.view);
            const PairLoss<float> g = kind == 0   ? info_nce<float>(za, zb, log_scale)
                                      : kind == 1 ? sigmoid_pairwise<float>(za, zb, log_scale, bias)
                                                  : invariance_vicreg<float>(za, zb);
            a.backward(g.da);
            b.backward(g.db);
            dls = g.dlog_scale;
            db = g.dbias;
            opt.step(scheduled_lr(3e-3, s, steps, 10));
            return g.loss;
        });
    }
    {  // masked reconstruction through an encoder-decoder
        Mlp<float> ae({{8, 32, 8, 32, 8}, Activation::gelu, true}, rng);
        AdamW<float> opt(params_of(ae), {1e-2});
        M mask = M::Zero(data.x.rows(), 8);
        for (Eigen::Index i = 0; i < mask.rows(); ++i) mask(i, i % 8) = mask(i, (i + 3) % 8) = 1;
        const M visible = data.x.cwiseProduct(M::Ones(mask.rows(), 8) - mask);
        run("masked reconstruction", [&](int s) {
            opt.zero_grad();
            M g;
            const float l = masked_mse<float>(ae.forward(visible), data.x, mask, g);
            ae.backward(g);
            opt.step(scheduled_lr(1e-2, s, steps, 10));
            return l;
        });
    }
    {  // multi-task heads on a shared trunk
        Mlp<float> trunk({{8, 32, 16}, Activation::gelu, true}, rng);
        MultiTaskHeads<float> heads(16, {4, 2}, rng);
        auto p = params_of(trunk);
        heads.params("", p);
        AdamW<float> opt(p, {1e-2});
        std::vector<int> parity;
        for (int l : data.labels) parity.push_back(l % 2);
        run("multi-task", [&](int s) {
            opt.zero_grad();
            heads.forward(trunk.forward(data.x));
            M df;
            const float l = heads.backward({data.labels, parity}, df);
            trunk.backward(df);
            opt.step(scheduled_lr(1e-2, s, steps, 10));
            return l;
        });
    }
}

TEST(Training, SameSeedSameBytes) {
    auto train = [](std::uint64_t seed) {
        Random rng(seed);
        const Data data = make_data(32, rng);
        Mlp<float> m({{8, 16, 4}, Activation::gelu, true}, rng);
        AdamW<float> opt(params_of(m), {1e-2});
        for (int s = 0; s < 20; ++s) {
            opt.zero_grad();
            M d;
            softmax_cross_entropy<float>(m.forward(data.x), data.labels, d);
            m.backward(d);
            opt.step(1e-2);
        }
        std::vector<float> flat;
        for (const auto& p : params_of(m)) flat.insert(flat.end(), p.value, p.value + p.size);
        return flat;
    };
    EXPECT_EQ(train(5), train(5));
    EXPECT_NE(train(5), train(6));
}
