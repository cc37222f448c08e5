// A merge's evaluation over its K tasks, as the studies score it.
#pragma once

#include <span>

namespace compatbench::merging {

// A merge's evaluation over its K tasks (§3.3): the means of the merged, fine-tuned and base
// accuracies, the retention (the mean of merged / fine-tuned) and whether it is destructive
// (its mean below the base's). The three spans hold one accuracy per task, in one order.
struct MergeScores {
    double merged = 0, finetuned = 0, base = 0, retention = 0;
    bool destructive = false;
};
MergeScores merge_scores(std::span<const double> merged, std::span<const double> finetuned,
                         std::span<const double> base);
// Destructive by a margin (methods.md §3.3): the merged mean below the base's by more than
// `z` paired standard errors `diff_se` of merged − base over the evaluation items.
MergeScores with_margin(MergeScores s, double diff_se, double z);

}  // namespace compatbench::merging
