// Encoders of the model library and the paradigms that train them (zoo.md "Models").
//
// Every model is a pure function of (world seed, spec): its own seeded initialisation and
// minibatch stream, single-threaded Eigen. A contrastive model trains with a partner tower
// of the other modality that is then discarded, so each model is one training run.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "nn/adam.h"
#include "nn/losses.h"
#include "zoo/world.h"

namespace compatbench::zoo {

enum class Modality { vision, text };

// Vision: supervised, clip, siglip, invariance, masked, detail, geometry, untrained.
// Text:   clip, siglip, sentence, invariance, masked, classifier, untrained.
// detail: classification heads on sign pairs of the fine-detail latent (text-in-image-like);
// geometry: regression of the geometry latent (layout-like).
enum class Paradigm {
    supervised,
    clip,
    siglip,
    invariance,
    masked,
    sentence,
    classifier,
    detail,
    geometry,
    untrained
};

const char* modality_name(Modality m);
const char* paradigm_name(Paradigm p);
// Throws std::invalid_argument naming the value and what is allowed for the modality.
Paradigm paradigm_from_name(const std::string& name, Modality modality);

struct EncoderSpec {
    std::string name;
    std::string family;  // e.g. "clip_b": members differ in width, depth, seed
    Modality modality = Modality::vision;
    Paradigm paradigm = Paradigm::supervised;
    int width = 128;   // hidden width
    int depth = 2;     // hidden layers
    int out_dim = 64;  // feature dimension
    std::uint64_t seed = 1;
    int steps = 400;
    int batch = 256;
    double lr = 2e-3;
    double weight_decay = 1e-4;
};

struct TrainSummary {
    double first_loss = 0.0;  // mean of the first 10 steps
    double final_loss = 0.0;  // mean of the last 10 steps
    int steps = 0;
};

class Encoder {
  public:
    Encoder(const EncoderSpec& spec, int input_dim);
    const EncoderSpec& spec() const { return spec_; }
    nn::Mlp<float>& mlp() { return mlp_; }
    // Features of `inputs` (rows), in batches (no gradients kept).
    Mat encode(const Mat& inputs);
    std::vector<nn::Param<float>> params();
    std::size_t parameter_count() { return mlp_.parameter_count(); }
    int input_dim() const { return input_dim_; }

  private:
    EncoderSpec spec_;
    int input_dim_;
    nn::Mlp<float> mlp_;
};

// Trains a fresh encoder on the `train` split of `world`. `cancel`, when set, stops between
// steps (std::runtime_error "cancelled").
Encoder train_encoder(const EncoderSpec& spec, const World& world, const Split& train,
                      TrainSummary& summary, const std::atomic<bool>* cancel = nullptr);

// Linear-probe accuracy: ridge regression (lambda 1e-2 * trace / dim) from features to
// one-hot labels, fitted on `train`, scored by arg-max on `test`.
double linear_probe_accuracy(const Mat& train_x, const std::vector<int>& train_y, const Mat& test_x,
                             const std::vector<int>& test_y, int classes);

}  // namespace compatbench::zoo
