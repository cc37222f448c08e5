#include "merging/evaluation.h"

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

}  // namespace compatbench::merging
