#include "zoo/finetune.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/hash.h"

namespace compatbench::zoo {

namespace {
int sign_pair(const Mat& m, std::size_t row, int c0, int c1) {
    const auto r = static_cast<Eigen::Index>(row);
    return (m(r, c0) > 0 ? 1 : 0) + (m(r, c1) > 0 ? 2 : 0);
}
}  // namespace

std::vector<LatentTask> latent_tasks(const WorldSpec& spec) {
    return {
        {"concept_group", 8, "concept"},
        {"concept_mod4", 4, "concept"},
        {"semantic_axes", 4, "semantic"},
        {"style_a", 4, "style"},
        {"style_b", 4, "style"},
        {"detail", 4, "detail"},
        {"geometry_argmax", std::max(2, spec.geometry_dim), "geometry"},
        {"geometry_sign", 4, "geometry"},
    };
}

const LatentTask& find_latent_task(const std::vector<LatentTask>& tasks, const std::string& name) {
    for (const auto& t : tasks) {
        if (t.name == name) return t;
    }
    std::string known;
    for (const auto& t : tasks) known += (known.empty() ? "" : ", ") + t.name;
    throw std::invalid_argument("unknown fine-tuning task '" + name + "' (known: " + known + ")");
}

std::vector<int> task_labels(const LatentTask& task, const Scenes& s, const WorldSpec& spec) {
    std::vector<int> y(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const int c = s.concept_id[i];
        if (task.name == "concept_group") {
            y[i] = c * 8 / spec.concepts;
        } else if (task.name == "concept_mod4") {
            y[i] = c % 4;
        } else if (task.name == "semantic_axes") {
            y[i] = sign_pair(s.semantic, i, 0, 1);
        } else if (task.name == "style_a") {
            y[i] = sign_pair(s.style, i, 0, 1);
        } else if (task.name == "style_b") {
            y[i] = sign_pair(s.style, i, 2, 3);
        } else if (task.name == "detail") {
            y[i] = sign_pair(s.detail, i, 0, 1);
        } else if (task.name == "geometry_argmax") {
            Eigen::Index arg = 0;
            s.geometry.row(static_cast<Eigen::Index>(i)).maxCoeff(&arg);
            y[i] = static_cast<int>(arg);
        } else if (task.name == "geometry_sign") {
            y[i] =
                sign_pair(s.geometry, i, std::min(2, spec.geometry_dim - 1), spec.geometry_dim - 1);
        } else {
            throw std::invalid_argument("unknown fine-tuning task '" + task.name + "'");
        }
    }
    return y;
}

FineTuned finetune(const Encoder& base, const LatentTask& task, const FinetuneSpec& spec,
                   const World& world, const Split& train, const std::atomic<bool>* cancel,
                   const CheckpointFn& checkpoint) {
    if (base.spec().modality != Modality::vision)
        throw std::invalid_argument("fine-tuning needs a vision backbone");
    nn::Random rng(
        splitmix64(spec.seed ^ fnv1a64("finetune/" + base.spec().name + "/" + task.name)));
    FineTuned ft{base, nn::Linear<float>(base.spec().out_dim, task.classes, rng), {}};
    std::vector<nn::Param<float>> params = ft.encoder.params();
    ft.head.params("head.", params);
    nn::AdamW<float> opt(params, {spec.lr, 0.9, 0.999, 1e-8, 0.0});
    const std::vector<int> labels = task_labels(task, train.scenes, world.spec());
    const int steps = std::max(1, static_cast<int>(std::lround(spec.steps * spec.drift)));
    const int n = static_cast<int>(train.images.rows());
    const int window = std::min(10, steps);
    double first = 0.0, last = 0.0;
    auto& mlp = ft.encoder.mlp();
    for (int s = 0; s < steps; ++s) {
        if (cancel && cancel->load(std::memory_order_relaxed))
            throw std::runtime_error("cancelled");
        opt.zero_grad();
        Mat x(std::min(n, spec.batch), train.images.cols());
        std::vector<int> y;
        for (Eigen::Index r = 0; r < x.rows(); ++r) {
            const int i = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
            x.row(r) = train.images.row(i);
            y.push_back(labels[static_cast<std::size_t>(i)]);
        }
        nn::Mat<float> d;
        const float l = nn::softmax_cross_entropy<float>(ft.head.forward(mlp.forward(x)), y, d);
        mlp.backward(ft.head.backward(d));
        if (s < window) first += l;
        if (s >= steps - window) last += l;
        opt.step(nn::scheduled_lr(spec.lr, s, steps, std::max(1, steps / 20), 0.1));
        if (checkpoint && std::find(spec.checkpoints.begin(), spec.checkpoints.end(), s + 1) !=
                              spec.checkpoints.end())
            checkpoint(s + 1, ft);
    }
    ft.summary = {first / window, last / window, steps};
    return ft;
}

double task_accuracy(Encoder& encoder, nn::Linear<float>& head, const LatentTask& task,
                     const Split& split, const WorldSpec& spec) {
    const Mat logits = head.forward(encoder.encode(split.images));
    return nn::accuracy<float>(logits, task_labels(task, split.scenes, spec));
}

std::vector<float> task_vector(Encoder& finetuned, Encoder& base) {
    const auto a = finetuned.params();
    const auto b = base.params();
    if (a.size() != b.size())
        throw std::invalid_argument("task_vector: models of different shapes");
    std::vector<float> tau;
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (a[k].size != b[k].size)
            throw std::invalid_argument("task_vector: parameter " + a[k].name + " differs in size");
        for (Eigen::Index i = 0; i < a[k].size; ++i) tau.push_back(a[k].value[i] - b[k].value[i]);
    }
    return tau;
}

}  // namespace compatbench::zoo
