// The screening statistics (methods.md §3.1) of every subset of M task vectors of one base
// from a single pass over the tensors (§3.4). Per coordinate j the pass adds the Gram
// matrices G_ab = Σ_j τ_aj τ_bj and A_ab = Σ_j |τ_aj| |τ_bj|, and counts the coordinates of
// each sign pattern (which task vectors are > 0, which < 0). For a subset S of K:
//   Σ_j I_j = (1/K) Σ_{a∈S} G_aa − (1/K²) Σ_{a,b∈S} G_ab
//   Σ_j D_j = (1/K) Σ_{a∈S} G_aa − (1/K²) Σ_{a,b∈S} A_ab,   Σ_j C_j = ΣI − ΣD
// and its sign conflicts are the coordinates whose pattern has both signs within S. These
// are the study's sums in exact arithmetic; the pass sums in double where the study's kernel
// rounds each coordinate's value to float32, so the two agree to about 1e-7 relative (sign
// conflicts exactly).
#pragma once

#include <cstdint>
#include <vector>

#include "common/eigen.h"
#include "merging/interference.h"
#include "merging/operators.h"

namespace compatbench::merging {

class SubsetScreen {
  public:
    // Sign patterns are counted for up to kMaxPatternModels task vectors (4^M counters);
    // beyond, sign conflicts are kept for pairs only.
    static constexpr std::size_t kMaxPatternModels = 10;
    static constexpr std::size_t kMaxModels = 32;  // sign patterns are 32-bit masks

    explicit SubsetScreen(std::size_t models);
    std::size_t models() const { return models_; }
    // Adds one tensor (every block of the base and the M models).
    void add(TensorBlocks& in);
    // The sums of a subset (indices into the models, each once, at least 2). sign_conflicts
    // is 0 for a subset of more than 2 when patterns are not counted (has_sign_conflicts).
    InterferenceSums sums(const std::vector<std::size_t>& subset) const;
    bool has_sign_conflicts(std::size_t k) const { return k == 2 || patterns_counted(); }
    // ‖τ_a‖ / ‖θ0‖ over the coordinates seen (NaN for a zero base). Fine-tunes stay below 1
    // (real ones here: 0.02 to 0.77); a model of the same shape trained apart, with weights
    // of similar norm centred near zero, is near √2.
    double relative_norm(std::size_t a) const;
    // The state of another pass (other tensors, e.g. another rank's) added to this one.
    std::vector<double> packed() const;
    void add_packed(const std::vector<double>& values);

  private:
    bool patterns_counted() const { return models_ <= kMaxPatternModels; }
    void add_block(const float* base, const std::vector<const float*>& models, std::size_t count);
    void count_patterns(std::size_t count);
    template <bool Diagonal, bool Abs>
    void add_tile(const double* x, const double* y, std::size_t n, Eigen::MatrixXd& g,
                  std::size_t a, std::size_t b);

    static constexpr std::size_t kBlock = 1024;  // a block's τ stays in the L2 cache
    // One vector register of doubles per column pair's partial sums, and a tile of kTile² pairs
    // whose accumulators and 2·kTile loaded columns fit the target's registers: 32 with
    // AVX-512 (16 + 8), 16 with AVX or SSE2 (9 + 6).
#if defined(__AVX512F__)
    static constexpr std::size_t kLanes = 8, kTile = 4;
#elif defined(__AVX__)
    static constexpr std::size_t kLanes = 4, kTile = 3;
#else
    static constexpr std::size_t kLanes = 2, kTile = 3;
#endif

    std::size_t models_;
    Eigen::MatrixXd gram_, abs_gram_;
    std::uint64_t count_ = 0;
    double base_sq_ = 0.0;                  // Σ θ0²
    std::vector<std::uint64_t> patterns_;   // [pos mask · 2^M + neg mask], when counted
    Eigen::MatrixXd pair_conflicts_;        // counts, when patterns are not
    std::vector<double> block_;             // one block's τ: columns of kBlock, M rounded up
                                            // to kTile (the rest zeros)
    std::vector<std::uint32_t> pos_, neg_;  // its coordinates' sign patterns (bit a: model a)
};

// A subset with its sums and screening score c·√(Ī/K).
struct RankedSubset {
    std::vector<std::size_t> members;
    InterferenceSums sums;
    double score = 0.0;
};

// Every subset of k of the screen's models, lowest score first (ties: members in order);
// when there are more than `limit`, the greedy ones instead: from each pair, the model that
// keeps the score lowest added until k (duplicates dropped).
std::vector<RankedSubset> rank_subsets(const SubsetScreen& screen, std::size_t k, double coef,
                                       std::size_t limit = 100000);

}  // namespace compatbench::merging
