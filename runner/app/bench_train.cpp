// `compatbench bench train`: GFLOP/s of a full MLP training step (forward, backward, AdamW)
// beside Eigen's plain GEMM GFLOP/s on the same shapes, in the same run, single-threaded.
#include <chrono>
#include <cstdio>
#include <sstream>

#include "app/verbs.h"
#include "common/eigen.h"
#include "exec/signals.h"
#include "nn/adam.h"
#include "nn/losses.h"

namespace compatbench {

namespace {
using Clock = std::chrono::steady_clock;

template <class F>
double seconds_per_call(F&& f, double min_seconds = 0.5) {
    f();  // warm-up
    long calls = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    while (elapsed < min_seconds) {
        f();
        ++calls;
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    return elapsed / static_cast<double>(calls);
}
}  // namespace

int verb_bench_train(const std::vector<int>& dims, int batch) {
    Eigen::setNbThreads(1);
    nn::Random rng(1);
    nn::Mlp<float> mlp({dims, nn::Activation::gelu, true}, rng);
    std::vector<nn::Param<float>> params;
    mlp.params("", params);
    nn::AdamW<float> opt(params, {1e-3});
    nn::Mat<float> x(batch, dims.front());
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.normal());
    std::vector<int> labels(static_cast<std::size_t>(batch));
    for (int i = 0; i < batch; ++i) labels[static_cast<std::size_t>(i)] = i % dims.back();

    const double step_s = seconds_per_call([&] {
        opt.zero_grad();
        nn::Mat<float> d;
        nn::softmax_cross_entropy<float>(mlp.forward(x), labels, d);
        mlp.backward(d);
        opt.step(1e-3);
    });
    const double flops = mlp.train_flops(batch);

    // The same GEMMs alone: per layer, Y = X W^T, dW = dY^T X, dX = dY W.
    double gemm_s = 0.0;
    for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
        const nn::Mat<float> a = nn::Mat<float>::Random(batch, dims[l]);
        const nn::Mat<float> w = nn::Mat<float>::Random(dims[l + 1], dims[l]);
        const nn::Mat<float> dy = nn::Mat<float>::Random(batch, dims[l + 1]);
        nn::Mat<float> y(batch, dims[l + 1]), dw(dims[l + 1], dims[l]), dx(batch, dims[l]);
        gemm_s += seconds_per_call(
            [&] {
                y.noalias() = a * w.transpose();
                dw.noalias() = dy.transpose() * a;
                dx.noalias() = dy * w;
            },
            0.2);
    }
    std::ostringstream shape;
    for (std::size_t i = 0; i < dims.size(); ++i) shape << (i ? "-" : "") << dims[i];
    const double step_gflops = flops / step_s / 1e9, gemm_gflops = flops / gemm_s / 1e9;
    std::printf("MLP %s, batch %d, GELU + LayerNorm, AdamW, float32, 1 thread\n",
                shape.str().c_str(), batch);
    std::printf("training step:      %8.3f ms  %7.2f GFLOP/s\n", 1e3 * step_s, step_gflops);
    std::printf("Eigen GEMMs alone:  %8.3f ms  %7.2f GFLOP/s  (the step's 3 GEMMs per layer)\n",
                1e3 * gemm_s, gemm_gflops);
    std::printf("step / GEMM: %.0f%%  (target >= 50%%: %s)\n", 100.0 * step_gflops / gemm_gflops,
                step_gflops >= 0.5 * gemm_gflops ? "met" : "NOT met");
    return kExitOk;
}

}  // namespace compatbench
