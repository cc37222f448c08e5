// The multi-encoder model of the encoder-roles study (zoo.md "Encoder pool", methods.md §4):
// a subset of the pool's encoders (unfrozen, at a lower learning rate) -> their features
// concatenated -> projector (Linear + GELU) -> one classification head per benchmark, trained
// jointly on the 16 benchmarks. Evaluation may zero the features of some encoders
// (inference-time masking); the pre-projector features give each encoder block's effective
// rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "zoo/benchmarks.h"
#include "zoo/encoder.h"

namespace compatbench::zoo {

struct SubsetSpec {
    int proj_dim = 128;
    int steps = 300;
    int batch = 256;
    double lr = 2e-3;               // projector and heads
    double encoder_lr_scale = 0.1;  // the encoders' learning rate, relative to lr
    std::uint64_t seed = 1;         // projector and head initialisation, minibatch order
};

class SubsetModel {
  public:
    // `encoders`: copies of the subset's pool encoders, in pool order; `slots` their pool
    // indices (bit i of a mask is pool encoder i).
    SubsetModel(std::vector<Encoder> encoders, std::vector<int> slots, int proj_dim,
                const std::vector<Benchmark>& benchmarks, std::uint64_t seed);

    // Concatenated pre-projector features of `images` (rows), encoder blocks in pool order.
    Mat features(const Mat& images);
    // One accuracy per benchmark on `split`, with the blocks of the pool encoders in
    // `zeroed` (a bitmask over pool indices) set to zero before the projector.
    std::vector<double> evaluate(const Split& split, const WorldSpec& spec, unsigned zeroed = 0);
    // Effective rank (methods.md §1.5, centred) of each encoder's block of features(images).
    std::vector<double> block_erank(const Mat& images);

    void train(const Split& train, const WorldSpec& spec, const SubsetSpec& s,
               TrainSummary& summary, const std::atomic<bool>* cancel = nullptr);

    // Every parameter: "encoders.<slot>.*", "projector.*", "heads.<b>.*".
    std::vector<nn::Param<float>> params();
    const std::vector<int>& slots() const { return slots_; }
    std::vector<Encoder>& encoders() { return encoders_; }
    std::size_t parameter_count();

  private:
    std::vector<Encoder> encoders_;
    std::vector<int> slots_;
    std::vector<int> offsets_;  // column where each block starts in the features
    std::vector<Benchmark> benchmarks_;
    nn::Random rng_;
    nn::Linear<float> projector_;
    nn::Act<float> act_;
    nn::MultiTaskHeads<float> heads_;
};

// Pool indices of the bits of `mask` (5-bit masks for the default pool of 5).
std::vector<int> mask_members(unsigned mask, int pool_size);

}  // namespace compatbench::zoo
