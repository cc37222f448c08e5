// Weight-space merging of K fine-tunes of one base (methods.md §3), tensor by tensor: the
// interference statistics of the task vectors (§3.1) and task arithmetic (§3.2). All sums
// are accumulated in double whatever the stored dtype.
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
    std::uint64_t sign_conflicts = 0;  // coordinates where the τ_i have both signs (TIES;
                                       // counted by interference(), not by the stream)

    void add(const InterferenceSums& other);
    double mean_interference() const;  // Ī (NaN for no coordinates)
    double mean_dispersion() const;
    double rho() const;            // ΣC / ΣI (NaN when ΣI = 0)
    double sign_conflict() const;  // fraction of coordinates with a sign conflict
};

// One tensor: `taus[i]` is task vector i (all the same length).
InterferenceSums interference(std::span<const std::span<const float>> taus);

// Screening score c · sqrt(Ī / K) (§3.1).
double screening_score(double mean_interference, int k, double coef);

enum class Normalize { mean, sum };

// θ = θ0 + c · Σ_i w_i τ_i with w_i = 1/K (mean) or 1 (sum) (§3.2, task arithmetic).
void task_arithmetic(std::span<const float> base, std::span<const std::span<const float>> taus,
                     double coef, Normalize normalize, std::span<float> out);

// τ = θ - θ0, element by element.
std::vector<float> task_vector(std::span<const float> finetuned, std::span<const float> base);

}  // namespace compatbench::merging
