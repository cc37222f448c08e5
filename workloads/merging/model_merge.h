// One model merge (methods.md §3.1, §3.2) of K models with one base, tensor by tensor, in two
// passes: first the interference of the in-scope tensors, whose ρ PRISM's gate reads; then
// each tensor merged by merge_tensor. The tensors come from a TensorSource: checkpoint
// files (CheckpointSource, read a chunk at a time) or values in memory (MemorySource). Each pass
// takes one tensor at a time and its sums add up, so callers may spread the tensors over
// ranks and combine the sums.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "merging/interference.h"
#include "merging/operators.h"
#include "merging/stream.h"

namespace compatbench::merging {

class TensorSource {
  public:
    virtual ~TensorSource() = default;
    virtual std::size_t size() const = 0;
    virtual const std::string& name(std::size_t i) const = 0;
    virtual bool matrix(std::size_t i) const = 0;             // a 2-D tensor
    virtual bool kernel(std::size_t) const { return false; }  // an N-D tensor, N > 2
    virtual bool mergeable(std::size_t i) const = 0;  // floating point (others keep the base's)
    virtual std::uint64_t numel(std::size_t i) const = 0;
    // Coordinates along dimension 1 (a matrix's columns; a vector's length; d1 of an N-D
    // tensor), and how far apart they lie in memory (1, or d2·…·dN of an N-D tensor).
    virtual std::uint64_t row_length(std::size_t i) const { return numel(i); }
    virtual std::uint64_t rank_stride(std::size_t) const { return 1; }
    virtual std::uint64_t last_dim(std::size_t i) const { return numel(i); }
    // Tensor i's own parameters, when the merge has per-tensor ones (else the merge's).
    virtual const MergeParams* params(std::size_t) const { return nullptr; }
    // Tensor i's interference sums across the models (§3.1).
    virtual InterferenceSums interference(std::size_t i) const = 0;
    // Tensor i's values, a block at a time as float32 (valid while the source lives; one
    // at a time: the blocks may share the source's buffers).
    virtual std::unique_ptr<TensorBlocks> blocks(std::size_t i) const = 0;
};

// One output tensor of a planned merge: which tensor of which checkpoint is θ0 (and gives
// the output's shape and dtype, and its bytes when not floating point) and which are the
// θ_i, under what name it is written, and the operator's parameters for it.
struct PlannedTensor {
    struct Input {
        std::size_t checkpoint = 0;  // index into the source's checkpoints
        std::string tensor;
    };
    std::string name;
    Input base;
    std::vector<Input> models;
    MergeParams params;
};

// Checkpoint files as a TensorSource, read a chunk at a time. Either the base and K models
// tensor by tensor under the base's names, or a planned merge (slices, per-tensor
// parameters). Every floating-point tensor merged must be in each input with the base's
// shape, and with its dtype too unless `any_float_dtype` (formats::FormatError naming the
// file and the tensor, before anything is read). Mixed dtypes are read through float32.
class CheckpointSource final : public TensorSource {
  public:
    // The base's tensors (those matching `scope`, empty: all, are checked in every model).
    CheckpointSource(const formats::Checkpoint& base,
                     const std::vector<formats::Checkpoint>& models,
                     const std::vector<std::string>& scope = {}, bool any_float_dtype = false);
    // A planned merge over `checkpoints`; each tensor with its own parameters.
    CheckpointSource(std::vector<const formats::Checkpoint*> checkpoints,
                     std::vector<PlannedTensor> plan, bool any_float_dtype = true);
    std::size_t size() const override { return plan_.size(); }
    const std::string& name(std::size_t i) const override { return plan_[i].name; }
    bool matrix(std::size_t i) const override;
    bool kernel(std::size_t i) const override;
    bool mergeable(std::size_t i) const override;
    std::uint64_t numel(std::size_t i) const override;
    std::uint64_t row_length(std::size_t i) const override;
    std::uint64_t rank_stride(std::size_t i) const override;
    std::uint64_t last_dim(std::size_t i) const override;
    const MergeParams* params(std::size_t i) const override {
        return planned_ ? &plan_[i].params : nullptr;
    }
    InterferenceSums interference(std::size_t i) const override;
    std::unique_ptr<TensorBlocks> blocks(std::size_t i) const override;
    const formats::TensorInfo& info(std::size_t i) const;  // the base's
    // mergekit's `dtype`: every input is converted to it as read (none: they keep their
    // stored dtypes). It decides compute_dtype and result_dtype; the values read stay as
    // stored (compute_in_dtype's arithmetic rounds them).
    void set_merge_dtype(std::optional<formats::DType> dtype) { merge_dtype_ = dtype; }
    // The dtype torch computes tensor i in: the merge's dtype, else from the inputs' dtypes,
    // promoted over every input for the methods whose arithmetic mixes them as they are
    // (promotes_dtypes), else the base's.
    formats::DType compute_dtype(std::size_t i) const;
    // The dtype of tensor i's merged values when the merge sets no out_dtype: compute_dtype,
    // but float32 (float64 from float64) for ramplus_tl and arcee_fusion, whose float32
    // λ and mask promote torch's result (ram_fusion.h), and the one model's own for
    // multislerp of one model (returned as it is).
    formats::DType result_dtype(std::size_t i) const;
    // Sets every planned tensor's arithmetic (MergeParams::arithmetic) to mergekit's: in its
    // compute_dtype (float64: exact).
    void compute_in_dtype();
    const formats::SafetensorsFile& base_file(std::size_t i) const;
    const formats::Checkpoint& base_checkpoint() const { return *checkpoints_.front(); }
    // Per input (the base, then each model): its raw chunk and its float32 block.
    struct Buffers {
        std::vector<std::vector<std::uint8_t>> raw;
        std::vector<std::vector<float>> floats;
    };

  private:
    void check(const PlannedTensor& t, bool any_float_dtype) const;
    // The base's and each model's tensor i, asked to be read ahead (posix_fadvise WILLNEED).
    std::vector<TensorRef> refs(std::size_t i) const;
    std::vector<const formats::Checkpoint*> checkpoints_;
    std::vector<PlannedTensor> plan_;
    bool planned_ = false;
    mutable Buffers buffers_;  // reused across tensors
    std::optional<formats::DType> merge_dtype_;
};

// Named float32 tensors in memory: the base's values and each model's, in the same order.
class MemorySource final : public TensorSource {
  public:
    struct Tensor {
        std::string name;
        bool matrix = false;
        std::vector<float> base;
        std::vector<std::vector<float>> models;
        bool kernel = false;  // more than two dimensions
    };
    explicit MemorySource(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {}
    std::size_t size() const override { return tensors_.size(); }
    const std::string& name(std::size_t i) const override { return tensors_[i].name; }
    bool matrix(std::size_t i) const override { return tensors_[i].matrix; }
    bool kernel(std::size_t i) const override { return tensors_[i].kernel; }
    bool mergeable(std::size_t) const override { return true; }
    std::uint64_t numel(std::size_t i) const override { return tensors_[i].base.size(); }
    InterferenceSums interference(std::size_t i) const override;
    std::unique_ptr<TensorBlocks> blocks(std::size_t i) const override;

  private:
    std::vector<Tensor> tensors_;
};

// What the merge's in-scope tensors add up to.
struct MergeTotals {
    double update_sq = 0, mean_tau_sq = 0, kept = 0, numel = 0, lambda_sum = 0, lambda_n = 0;
    void add(const TensorMergeStats& st);
    void add(const MergeTotals& other);
    double update_pct() const;     // 100 ‖θ - θ0‖ / ‖τ̄‖ (NaN for none)
    double keep_fraction() const;  // coordinates changed (NaN for none)
    double lambda_mean() const;    // PRISM's mean threshold (0 for none)
    // As six numbers (to combine across ranks) and back.
    std::array<double, 6> values() const;
    static MergeTotals from_values(const std::array<double, 6>& v);
};

class ModelMerge {
  public:
    // `scope`: shell patterns of the tensors to merge (empty: all); the others keep θ0.
    // `sums`: how each tensor's statistics are added up (operators.h).
    ModelMerge(MergeParams params, std::vector<std::string> scope, Sums sums = Sums::ordered);
    const MergeParams& params() const { return params_; }
    bool in_scope(const std::string& name) const { return merging::in_scope(name, scope_); }
    // Whether the operator reads the merge's ρ (the PRISM family): pass 1 must come first.
    bool needs_rho() const;

    // Pass 1: adds tensor i's interference when it is mergeable and in scope.
    void measure(const TensorSource& source, std::size_t i);
    const InterferenceSums& sums() const { return sums_; }
    // ΣC / ΣI of `sums` (0 without interference: nothing to gate).
    static double rho_of(const InterferenceSums& sums);

    // Pass 2: tensor i merged with the merge's ρ, sent to `out` a block at a time; its
    // statistics are added to totals() when in scope.
    void merge(const TensorSource& source, std::size_t i, double rho, const BlockSink& out);
    // The same into float32 values in memory.
    std::vector<float> merge(const TensorSource& source, std::size_t i, double rho);
    const MergeTotals& totals() const { return totals_; }

  private:
    MergeParams params_;
    std::vector<std::string> scope_;
    Sums stat_sums_;
    InterferenceSums sums_;
    MergeTotals totals_;
};

}  // namespace compatbench::merging
