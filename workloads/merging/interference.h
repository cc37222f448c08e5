// The interference statistics of K task vectors (methods.md §3.1), tensor by tensor, and
// the screening score built from them. Per-element statistics are float32
// (as the tensors are), a block's sums are added in double.
#pragma once

#include <cstdint>
#include <span>

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

}  // namespace compatbench::merging
