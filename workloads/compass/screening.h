// Screening merges before evaluating them (methods.md §3.1, PRISM): how well a score
// separates destructive from harmless merges — AUROC (Mann–Whitney, ties count half), the
// threshold with the best Youden J (TPR − FPR) and its confusion counts.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace compatbench::compass {

// P(score of a destructive merge > score of a harmless one) + ½ P(equal); NaN without both.
double auroc(std::span<const double> score, std::span<const std::uint8_t> positive);

// A percentile bootstrap interval of the AUROC (`level`, e.g. 0.95): `draws` resamples of
// the merges with replacement (seeded), each with both kinds of merge (others drawn again).
struct Interval {
    double lo = std::numeric_limits<double>::quiet_NaN(), hi = lo;
};
Interval auroc_interval(std::span<const double> score, std::span<const std::uint8_t> positive,
                        int draws, std::uint64_t seed, double level = 0.95);

struct Confusion {
    std::int64_t tp = 0, fp = 0, tn = 0, fn = 0;
};
// Flags score > threshold as destructive.
Confusion confusion(std::span<const double> score, std::span<const std::uint8_t> positive,
                    double threshold);

struct BestThreshold {
    double threshold = 0.0;  // midway between two adjacent distinct scores (or below all)
    double youden = 0.0;
    Confusion counts;
};
// Over every cut between distinct scores (and below the lowest); ties: the lowest threshold.
BestThreshold best_threshold(std::span<const double> score, std::span<const std::uint8_t> positive);

// One score's screening study: over every merge (AUROC, the best threshold and its counts),
// and pre-registered: the threshold fitted on the merges of every other group (in name
// order, e.g. every other backbone) predicts the merges of the remaining groups.
struct ScreeningSummary {
    std::int64_t n = 0, positives = 0;
    double auroc = std::numeric_limits<double>::quiet_NaN();
    BestThreshold best;  // over every merge
    std::int64_t fit_n = 0, test_n = 0;
    double fitted_threshold = 0.0;                               // best on the fitting groups
    Confusion predicted;                                         // on the held-out groups
    double accuracy = std::numeric_limits<double>::quiet_NaN();  // (tp + tn) / test_n
};
ScreeningSummary screen(std::span<const double> score, std::span<const std::uint8_t> positive,
                        std::span<const std::string> group);

}  // namespace compatbench::compass
