#include "merging/evaluation.h"

#include <cmath>
#include <string>

#include <stdexcept>

namespace compatbench::merging {

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

MergeScores with_margin(MergeScores s, double diff_se, double z) {
    if (!(diff_se >= 0.0) || !std::isfinite(diff_se))
        throw std::invalid_argument("diff_se must be a finite standard error >= 0, got " +
                                    std::to_string(diff_se));
    s.destructive = s.merged - s.base < -z * diff_se;
    return s;
}

}  // namespace compatbench::merging
