// Weight-space merging of K fine-tunes of one base (methods.md §3), tensor by tensor: the
// interference statistics of the task vectors (§3.1). Per-element statistics are float32
// (as the tensors are), a block's sums are added in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace compatbench::merging {

// Sums over coordinates of I_j (population variance of the K task-vector values),
// D_j (dispersion) and C_j (cancellation); I_j = D_j + C_j (§3.1).
struct InterferenceSums {
    double interference = 0.0;
    double dispersion = 0.0;
    double cancellation = 0.0;
    std::uint64_t count = 0;
    std::uint64_t sign_conflicts = 0;  // coordinates where the τ_i have both signs (TIES)

    void add(const InterferenceSums& other);
    double mean_interference() const;  // Ī (NaN for no coordinates)
    double mean_dispersion() const;
    double rho() const;            // ΣC / ΣI (NaN when ΣI = 0)
    double sign_conflict() const;  // fraction of coordinates with a sign conflict
};

// One tensor: task vector i is models[i] - base (all the same length; std::invalid_argument
// otherwise). The same kernel as stream_interference (merging/stream.h), which reads the
// tensors from their files a chunk at a time.
InterferenceSums interference(std::span<const float> base,
                              std::span<const std::span<const float>> models);

// Screening score c · sqrt(Ī / K) (§3.1).
double screening_score(double mean_interference, int k, double coef);

enum class Normalize { mean, sum };

// A merge's evaluation over its K tasks (§3.3): the means of the merged, fine-tuned and base
// accuracies, the retention (the mean of merged / fine-tuned) and whether it is destructive
// (its mean below the base's). The three spans hold one accuracy per task, in one order.
struct MergeScores {
    double merged = 0, finetuned = 0, base = 0, retention = 0;
    bool destructive = false;
};
MergeScores merge_scores(std::span<const double> merged, std::span<const double> finetuned,
                         std::span<const double> base);

}  // namespace compatbench::merging
