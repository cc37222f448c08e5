// Fine-tuning for the merging studies (zoo.md "Backbones for merging"): 8 classification
// tasks defined on the latent scene, full fine-tuning of a backbone with a fresh head per
// task, so that task vectors tau = theta_ft - theta_0 exist.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "zoo/encoder.h"

namespace compatbench::zoo {

// A task's labels come from the scene latents (never from a model).
struct LatentTask {
    std::string name;
    int classes = 2;
    std::string factor;  // concept, semantic, style, detail, geometry
};

// The 8 tasks: concept_group, concept_mod4, semantic_axes, style_a, style_b, detail,
// geometry_argmax, geometry_sign.
std::vector<LatentTask> latent_tasks(const WorldSpec& spec);
const LatentTask& find_latent_task(const std::vector<LatentTask>& tasks, const std::string& name);
std::vector<int> task_labels(const LatentTask& task, const Scenes& scenes, const WorldSpec& spec);

struct FinetuneSpec {
    std::string task;
    int steps = 200;
    double drift = 1.0;  // multiplies steps: specialists trained longer move further
    double lr = 5e-4;
    int batch = 256;
    std::uint64_t seed = 1;
    // Steps (counted after the drift factor) at which `finetune` hands the model in training
    // to its `checkpoint` callback: the fine-tuning trajectory of one run, not separate runs.
    std::vector<int> checkpoints;
};

struct FineTuned {
    Encoder encoder;         // the fine-tuned backbone
    nn::Linear<float> head;  // out_dim -> classes
    TrainSummary summary;
};

// Fine-tunes a copy of `base` (vision backbone) with a new head on `task`.
struct FineTuned;
using CheckpointFn = std::function<void(int step, FineTuned& model)>;
FineTuned finetune(const Encoder& base, const LatentTask& task, const FinetuneSpec& spec,
                   const World& world, const Split& train,
                   const std::atomic<bool>* cancel = nullptr, const CheckpointFn& checkpoint = {});

// Accuracy of encoder + head on the images of `split` for `task`.
double task_accuracy(Encoder& encoder, nn::Linear<float>& head, const LatentTask& task,
                     const Split& split, const WorldSpec& spec);

// theta_ft - theta_0 over the backbone's parameters, flattened in parameter order.
std::vector<float> task_vector(Encoder& finetuned, Encoder& base);

}  // namespace compatbench::zoo
