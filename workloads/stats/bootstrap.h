// The multiway cluster ("pigeonhole") bootstrap of rows that share the models they are made
// of (methods.md §5.2): alignment pairs share their encoders, merges their fine-tunes and
// backbones, LM merges their specialists. A draw resamples the models, not the rows: every
// pool of models (a factor) is drawn with replacement, a row is repeated as often as the
// product of its models' counts, and the statistic is recomputed on the repeated rows
// (Owen 2007; Cameron, Gelbach & Miller 2011). A factor nested in another (fine-tunes within
// backbones) is drawn anew within each copy of its parent. Every row its own cluster gives
// the ordinary (naive) bootstrap.
//
// The draws are fixed by the seed: draw d's j-th pick is
// splitmix64(splitmix64(splitmix64(seed) + d) + j) mod (the pool's size), picks taken factor by
// factor in the design's order (a nested factor: for each parent model in id order, for each of its
// copies, one pick per child).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "stats/stat_result.h"

namespace compatbench::stats {

// One pool of models. Each row belongs to one or more of its models (a pair merge of
// fine-tunes a and b: two members of the fine-tune pool).
struct ClusterFactor {
    std::string name;                               // for messages, e.g. "model_a+model_b"
    std::vector<std::string> labels;                // the models, by id
    std::vector<std::vector<std::size_t>> members;  // per row: model ids in this pool
    int parent = -1;  // index of the factor this one is nested in (one model per row), or -1
};

struct ClusterDesign {
    std::size_t rows = 0;
    std::vector<ClusterFactor> factors;
    // "vision × text", "backbone > model_a+model_b", "rows"
    std::string describe() const;
};

// A factor from label columns that share one pool (each column: one label per row); labels
// get ids in order of first appearance.
ClusterFactor factor_from_labels(std::string name,
                                 const std::vector<std::vector<std::string>>& columns);
// Every row its own cluster: the naive bootstrap.
ClusterDesign independent_rows(std::size_t rows);
// Why the design cannot be resampled ("" when it can): a factor with fewer than two models,
// a row in none of a factor's models, a nested factor whose parent is not a one-model-per-row,
// un-nested factor listed before it, or a parent with two nested factors.
std::string design_problem(const ClusterDesign& design);

// The rows of draw `draw`, each repeated by its weight, in row order.
std::vector<std::size_t> resampled_rows(const ClusterDesign& design, std::uint64_t seed,
                                        std::size_t draw);

struct BootstrapInterval {
    double lo = kNaN, hi = kNaN;  // percentile interval of the defined draws
    double se = kNaN;             // sd of the defined draws
    std::size_t draws = 0;        // draws taken
    std::size_t undefined = 0;    // draws in which the statistic was NaN (e.g. one class only)
    std::string reason;           // why lo/hi are NaN: empty when they are numbers
    bool ok() const { return reason.empty(); }
};

// The statistic of a resample, from its rows (repeated rows appear repeatedly); NaN when it
// is undefined there.
using ResampleStatistic = std::function<double(std::span<const std::size_t> rows)>;

// The (1 - level)/2 and (1 + level)/2 quantiles (numpy's linear interpolation) of the
// statistic over `draws` seeded draws. NaN with a reason when the design cannot be resampled
// or the statistic is undefined in more than half of the draws; the undefined draws are
// counted, never dropped silently.
BootstrapInterval bootstrap_interval(const ClusterDesign& design, std::size_t draws,
                                     std::uint64_t seed, const ResampleStatistic& statistic,
                                     double level = 0.95);

}  // namespace compatbench::stats
