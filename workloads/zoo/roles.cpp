#include "zoo/roles.h"

#include <numeric>
#include <stdexcept>

#include "common/hash.h"
#include "similarity/similarity.h"

namespace compatbench::zoo {

namespace {
std::vector<int> classes_of(const std::vector<Benchmark>& benchmarks) {
    std::vector<int> c;
    for (const auto& b : benchmarks) c.push_back(b.classes);
    return c;
}

int total_dim(const std::vector<Encoder>& encoders) {
    int d = 0;
    for (const auto& e : encoders) d += e.spec().out_dim;
    return d;
}
}  // namespace

std::vector<int> mask_members(unsigned mask, int pool_size) {
    std::vector<int> out;
    for (int i = 0; i < pool_size; ++i)
        if (mask & (1u << i)) out.push_back(i);
    return out;
}

SubsetModel::SubsetModel(std::vector<Encoder> encoders, std::vector<int> slots, int proj_dim,
                         const std::vector<Benchmark>& benchmarks, std::uint64_t seed)
    : encoders_(std::move(encoders)),
      slots_(std::move(slots)),
      benchmarks_(benchmarks),
      rng_(splitmix64(seed ^ fnv1a64("subset-model"))),
      projector_(total_dim(encoders_), proj_dim, rng_),
      act_(nn::Activation::gelu),
      heads_(proj_dim, classes_of(benchmarks), rng_) {
    if (encoders_.empty()) throw std::invalid_argument("a subset model needs an encoder");
    if (encoders_.size() != slots_.size())
        throw std::invalid_argument("subset model: one pool slot per encoder");
    int at = 0;
    for (const auto& e : encoders_) {
        offsets_.push_back(at);
        at += e.spec().out_dim;
    }
}

Mat SubsetModel::features(const Mat& images) {
    Mat f(images.rows(), projector_.in());
    for (std::size_t e = 0; e < encoders_.size(); ++e)
        f.middleCols(offsets_[e], encoders_[e].spec().out_dim) = encoders_[e].encode(images);
    return f;
}

std::vector<double> SubsetModel::evaluate(const Split& split, const WorldSpec& spec,
                                          unsigned zeroed) {
    Mat f = features(split.images);
    for (std::size_t e = 0; e < encoders_.size(); ++e)
        if (zeroed & (1u << slots_[e]))
            f.middleCols(offsets_[e], encoders_[e].spec().out_dim).setZero();
    const auto logits = heads_.forward(act_.forward(projector_.forward(f)));
    std::vector<double> acc;
    for (std::size_t b = 0; b < benchmarks_.size(); ++b)
        acc.push_back(
            nn::accuracy<float>(logits[b], benchmark_labels(benchmarks_[b], split.scenes, spec)));
    return acc;
}

std::vector<double> SubsetModel::block_erank(const Mat& images) {
    const Mat f = features(images);
    std::vector<double> out;
    for (std::size_t e = 0; e < encoders_.size(); ++e)
        out.push_back(similarity::effective_rank(
            f.middleCols(offsets_[e], encoders_[e].spec().out_dim).cast<double>(), true));
    return out;
}

std::size_t SubsetModel::parameter_count() {
    std::size_t n = 0;
    for (auto& e : encoders_) n += e.parameter_count();
    std::vector<nn::Param<float>> p;
    projector_.params("", p);
    heads_.params("", p);
    for (const auto& q : p) n += static_cast<std::size_t>(q.size);
    return n;
}

std::vector<nn::Param<float>> SubsetModel::params() {
    std::vector<nn::Param<float>> p;
    for (std::size_t e = 0; e < encoders_.size(); ++e)
        encoders_[e].mlp().params("encoders." + std::to_string(slots_[e]) + ".", p);
    projector_.params("projector.", p);
    heads_.params("", p);
    return p;
}

void SubsetModel::train(const Split& train, const WorldSpec& spec, const SubsetSpec& s,
                        TrainSummary& summary, const std::atomic<bool>* cancel) {
    std::vector<nn::Param<float>> enc_params, top_params;
    for (std::size_t e = 0; e < encoders_.size(); ++e)
        encoders_[e].mlp().params("encoders." + std::to_string(slots_[e]) + ".", enc_params);
    projector_.params("projector.", top_params);
    heads_.params("", top_params);
    nn::AdamW<float> enc_opt(enc_params, {s.lr * s.encoder_lr_scale, 0.9, 0.999, 1e-8, 0.0});
    nn::AdamW<float> top_opt(top_params, {s.lr, 0.9, 0.999, 1e-8, 0.0});
    std::vector<std::vector<int>> labels;
    for (const auto& b : benchmarks_) labels.push_back(benchmark_labels(b, train.scenes, spec));
    const int n = static_cast<int>(train.images.rows());
    const int window = std::min(10, s.steps);
    double first = 0.0, last = 0.0;
    for (int step = 0; step < s.steps; ++step) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            throw std::runtime_error("cancelled");
        enc_opt.zero_grad();
        top_opt.zero_grad();
        for (auto& e : encoders_) e.mlp().zero_grad();
        projector_.zero_grad();
        heads_.zero_grad();
        const int rows = std::min(n, s.batch);
        Mat x(rows, train.images.cols());
        std::vector<std::vector<int>> y(benchmarks_.size());
        for (int r = 0; r < rows; ++r) {
            const int i = static_cast<int>(rng_.below(static_cast<std::uint64_t>(n)));
            x.row(r) = train.images.row(i);
            for (std::size_t b = 0; b < y.size(); ++b)
                y[b].push_back(labels[b][static_cast<std::size_t>(i)]);
        }
        Mat f(rows, projector_.in());
        for (std::size_t e = 0; e < encoders_.size(); ++e)
            f.middleCols(offsets_[e], encoders_[e].spec().out_dim) = encoders_[e].mlp().forward(x);
        heads_.forward(act_.forward(projector_.forward(f)));
        Mat dfeat;
        const double loss = heads_.backward(y, dfeat);
        const Mat df = projector_.backward(act_.backward(dfeat));
        for (std::size_t e = 0; e < encoders_.size(); ++e)
            encoders_[e].mlp().backward(df.middleCols(offsets_[e], encoders_[e].spec().out_dim));
        const double scale = nn::scheduled_lr(1.0, step, s.steps, std::max(1, s.steps / 20), 0.1);
        enc_opt.step(s.lr * s.encoder_lr_scale * scale);
        top_opt.step(s.lr * scale);
        if (step < window) first += loss;
        if (step >= s.steps - window) last += loss;
    }
    summary = {first / window, last / window, s.steps};
}

}  // namespace compatbench::zoo
