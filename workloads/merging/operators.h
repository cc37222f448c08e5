// Merge operators of methods.md §3.2, applied tensor by tensor: task arithmetic, TIES, DARE,
// SLERP, Model Stock, PRISM (soft threshold, ρ-gate, keep-rate floor), PRISM-hard, the
// norm-matched mean, DELLA, Breadcrumbs and Iso-C (iso_c.h; the one operator that holds a
// whole matrix, Σ_i τ_i in double, for its SVD). A tensor is read a block at a time as float32 (the
// base and each model), in as many passes as the operator needs (one for task arithmetic and DARE;
// a first pass for norms, dots or PRISM's σ; TIES a selection pass per model), and the merged
// values leave a block at a time: memory stays at a few blocks, plus one double per
// coordinate for TIES's selection and PRISM's keep-rate floor. Per coordinate the
// arithmetic is in double, and sums run in coordinate order.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "merging/interference.h"

namespace compatbench::merging {

enum class Normalize { mean, sum };

enum class Method {
    task_arithmetic,
    ties,
    dare,
    slerp,
    model_stock,
    prism,
    prism_hard,
    norm_matched,
    della,        // mergekit's `della` at the study's density (generalized.h)
    breadcrumbs,  // mergekit's `breadcrumbs` at the study's density
    iso_c,        // Iso-C (iso_c.h)
    tsv,          // TSV-Merge (tsv.h)
    // mergekit's operators that the studies do not sweep (compatbench merge only):
    generalized,  // generalized task arithmetic (generalized.h): TIES, DARE, DELLA, Breadcrumbs
    linear,       // Σ w_i θ_i (/ Σ w_i)
    passthrough,  // θ_1 · scale
    nearswap,     // mergekit_kernels.h: θ0 moved toward θ_1 where they lie within t
    sce,          // mergekit_kernels.h: SCE's variance selection, sign election, τ² weights
    multislerp,   // mergekit_kernels.h: the weighted mean on the hypersphere
    nuslerp,      // mergekit_kernels.h: SLERP of two models' rows, columns or whole tensors
    karcher,      // mergekit_kernels.h: the Riemannian mean of the models' directions
    ram,          // ram_fusion.h: τ_i where one model moves a coordinate, their mean where more do
    ramplus_tl,   // ram_fusion.h: RAM with each model's lone moves scaled by its λ_i
    arcee_fusion  // ram_fusion.h: θ0 + τ_1 where |τ_1|·KL of the row is past median + 1.5 IQR
};
const char* method_name(Method m);
// The studies' operators' names, in the order of Method (task_arithmetic .. tsv).
const std::vector<std::string>& method_names();
// Those a K-way sweep runs when it names none (task_arithmetic .. norm_matched).
const std::vector<std::string>& default_method_names();
// Whether the operator reads the merge's ρ (the PRISM family: prism, prism_hard,
// norm_matched), which the merge's first pass measures.
bool reads_merge_rho(Method m);
// std::invalid_argument listing the known names.
Method method_from_name(const std::string& name);

// How a merge's arithmetic rounds (docs/mergekit.md, "Arithmetic"): exact (double, rounded
// once at the end), or as mergekit's torch code computes in one dtype (in_dtype.h): each
// operation in float32 and its result rounded to that dtype.
enum class Arithmetic { exact, float32, float16, bfloat16 };

// How generalized task arithmetic sparsifies each task vector (mergekit's sparsify.py).
enum class Sparsify { none, magnitude, random, magnitude_outliers, della };

struct MergeParams {
    Method method = Method::task_arithmetic;
    double coef = 1.0;                      // c on the merged task vector
    Normalize normalize = Normalize::mean;  // task arithmetic (and DARE's final step)
    double density = 0.2;                   // TIES: fraction of each τ_i kept (per tensor)
    double drop = 0.5;                      // DARE: p, the probability of dropping a coordinate
    bool dare_then_ties = false;            // DARE followed by TIES instead of the mean
    double t = 0.5;                         // SLERP
    double kappa = 1.0;                     // PRISM: λ = κ σ sqrt(2 ln n)
    double rho_gate = 0.1;                  // PRISM: no threshold when the merge's ρ is below
    double keep_floor = 0.001;              // PRISM: fraction a matrix keeps at least
    bool floor_kernels = false;             // PRISM: the floor holds for N-D kernels too
    std::uint64_t seed = 0;                 // DARE's masks
    std::vector<double> weights;            // task arithmetic / DARE: w_i (empty: all 1)
    // Generalized task arithmetic (generalized.h); TIES is its magnitude + consensus case.
    Sparsify sparsify = Sparsify::none;
    bool consensus = false;                // TIES's sign election
    bool rescale = false;                  // L1 rescale of each sparsified τ_i
    std::vector<double> densities;         // per model (empty: `density` for all)
    std::vector<double> gammas, epsilons;  // per model: Breadcrumbs' γ, DELLA's ε
    // DELLA on a dimension 1 of one coordinate, where mergekit's rank ramp is 0/0 (and its
    // bernoulli raises): refused, or (the studies' `della`) kept with probability d.
    bool della_lone_at_density = false;
    double scale = 1.0;         // passthrough
    double select_topk = 1.0;   // SCE: the fraction of coordinates of largest variance kept
    double eps = 1e-8;          // multislerp
    bool has_base = true;       // multislerp without a base: the θ_i themselves, not τ_i
    bool filter_wise = false;   // Model Stock: one t per row of the last dimension
    bool row_wise = false;      // nuslerp: SLERP along dimension 0 (a matrix's columns)
    bool flatten = true;        // nuslerp: SLERP of the whole tensor (over row_wise)
    int max_iter = 10;          // karcher
    double tol = 1e-5;          // karcher
    double ram_epsilon = 1e-5;  // ram, ramplus_tl: |τ| above it moves a coordinate
    double ram_r = 0.1, ram_alpha = 0.2;        // ramplus_tl: λ_i = 1 + r · clamp(ρ_i, 0, α)
    Arithmetic arithmetic = Arithmetic::exact;  // mergekit's methods only
};

// What the operator needs to know of the tensor beyond its values.
struct TensorScope {
    std::string name;
    bool matrix = false;          // a 2-D tensor (PRISM's keep-rate floor applies to these)
    bool kernel = false;          // an N-D tensor, N > 2 (a convolution kernel: floored only
                                  // with MergeParams::floor_kernels)
    bool in_scope = true;         // out-of-scope tensors keep θ0 (PRISM, and every method when
                                  // a scope is given)
    double merge_rho = 1.0;       // ρ of the whole merge over the in-scope tensors (§3.1)
    std::size_t row_length = 0;   // coordinates along dimension 1 (DELLA ranks along it,
                                  // as mergekit's torch code does): a 2-D tensor's columns,
                                  // a 1-D tensor's length, d1 of an N-D one; 0: unknown
    std::size_t rank_stride = 1;  // memory distance between those coordinates (d2·…·dN)
    std::size_t last_dim = 0;     // the last dimension's length (Model Stock's filter_wise
                                  // rows); 0: unknown (the tensor is one row)
};

// How the last pass adds up ‖τ̄‖² and ‖θ − θ0‖² over a tensor's coordinates: each as a
// running sum in coordinate order, which keeps the studies' statistics to the bit, or in 8
// lanes (common/lanes.h), without the serial chain of additions that bounds a fused pass
// (about 4 cycles per coordinate), for `compatbench merge`, which prints them to two
// decimals and adds its ranks' totals in any order. The merged values are the same.
enum class Sums { ordered, lanes };

struct TensorMergeStats {
    Sums sums = Sums::ordered;  // how the two sums below are taken (merge_tensor's)
    double update_sq = 0.0;     // ‖θ - θ0‖²
    double mean_tau_sq = 0.0;   // ‖τ̄‖²
    std::uint64_t kept = 0;     // coordinates with a non-zero update
    std::uint64_t numel = 0;
    double lambda = 0.0;  // PRISM's threshold (0 otherwise)
};

// One tensor's values, a block at a time, as float32: the base's and each model's.
class TensorBlocks {
  public:
    virtual ~TensorBlocks() = default;
    virtual std::size_t numel() const = 0;
    virtual std::size_t models() const = 0;
    // Points `base` and `models[i]` at elements [begin, begin + count), valid until the next
    // call. Blocks are read in order, and each pass reads them all again.
    virtual void read(std::size_t begin, std::size_t count, const float*& base,
                      std::vector<const float*>& models) = 0;
    // The same for the base and model i only (a pass that reads no other model).
    virtual void read_one(std::size_t begin, std::size_t count, std::size_t i, const float*& base,
                          const float*& model);
};

// Values in memory as blocks: pointers into them (the views are kept, not the values).
class SpanBlocks final : public TensorBlocks {
  public:
    SpanBlocks(std::span<const float> base, std::vector<std::span<const float>> models)
        : base_(base), models_(std::move(models)) {}
    std::size_t numel() const override { return base_.size(); }
    std::size_t models() const override { return models_.size(); }
    void read(std::size_t begin, std::size_t count, const float*& base,
              std::vector<const float*>& models) override;

  private:
    std::span<const float> base_;
    std::vector<std::span<const float>> models_;
};

// Receives the merged values θ, a block at a time, in order.
using BlockSink = std::function<void(std::size_t begin, std::span<const float> merged)>;

// How the last pass runs: the fused per-coordinate kernels of last_pass.h where the operator
// has one and there are at most 8 models, or always the block arrays (the reference the
// fused kernels equal to the bit; tests compare the two).
enum class Kernels { fused, arrays };

// Merges one tensor: θ from the base θ0 and the fine-tuned θ_i of `in`.
TensorMergeStats merge_tensor(const MergeParams& params, const TensorScope& scope, TensorBlocks& in,
                              const BlockSink& out, Kernels kernels = Kernels::fused,
                              Sums sums = Sums::ordered);
// The same on values in memory: `models[i]` are the θ_i, `out` receives θ.
TensorMergeStats merge_tensor(const MergeParams& params, const TensorScope& scope,
                              std::span<const float> base,
                              std::span<const std::span<const float>> models, std::span<float> out,
                              Kernels kernels = Kernels::fused);

// Shell-style pattern match (`*`, `?`, `[...]`) of a tensor name against any of `patterns`
// (empty: everything matches).
bool in_scope(const std::string& name, const std::vector<std::string>& patterns);

}  // namespace compatbench::merging
