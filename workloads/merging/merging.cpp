#include "merging/merging.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace compatbench::merging {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

void InterferenceSums::add(const InterferenceSums& o) {
    interference += o.interference;
    dispersion += o.dispersion;
    cancellation += o.cancellation;
    count += o.count;
    sign_conflicts += o.sign_conflicts;
}

double InterferenceSums::sign_conflict() const {
    return count ? static_cast<double>(sign_conflicts) / static_cast<double>(count) : kNaN;
}

double InterferenceSums::mean_interference() const {
    return count ? interference / static_cast<double>(count) : kNaN;
}
double InterferenceSums::mean_dispersion() const {
    return count ? dispersion / static_cast<double>(count) : kNaN;
}
double InterferenceSums::rho() const {
    return interference > 0.0 ? cancellation / interference : kNaN;
}

double screening_score(double mean_interference, int k, double coef) {
    return coef * std::sqrt(mean_interference / static_cast<double>(k));
}

MergeScores merge_scores(std::span<const double> merged, std::span<const double> finetuned,
                         std::span<const double> base) {
    if (merged.empty() || finetuned.size() != merged.size() || base.size() != merged.size())
        throw std::invalid_argument("merge_scores: one accuracy per task in each of the three");
    MergeScores s;
    for (std::size_t i = 0; i < merged.size(); ++i) {
        s.merged += merged[i];
        s.finetuned += finetuned[i];
        s.base += base[i];
        s.retention += merged[i] / finetuned[i];
    }
    const double k = static_cast<double>(merged.size());
    s.merged /= k;
    s.finetuned /= k;
    s.base /= k;
    s.retention /= k;
    s.destructive = s.merged < s.base;
    return s;
}

}  // namespace compatbench::merging
