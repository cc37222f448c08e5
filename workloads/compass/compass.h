// The COMPASS study pieces (methods.md §1.2, §1.3, §6): ceiling per paradigm pair, score and
// regions, the deterministic pair selection, budget-limited search and the metadata-regressor
// baseline. Shared by the alignment and the merging studies.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace compatbench::compass {

// How a paradigm pair's ceiling summarises the ease of its pairs (§1.2): `max` (default),
// `mean` or `quantile:q` (linear interpolation, numpy's default).
struct CeilingStat {
    enum class Kind { max, mean, quantile } kind = Kind::max;
    double q = 1.0;
    // Parses "max", "mean" or "quantile:0.9"; std::invalid_argument otherwise.
    static CeilingStat parse(const std::string& text);
    double apply(std::vector<double> values) const;
};

// One pair of the full grid: its two paradigms (the ceiling's key) and its ease.
struct GridPair {
    std::string paradigm_a, paradigm_b;
    double ease = 0.0;
};
using ParadigmPair = std::pair<std::string, std::string>;

// ceiling(P, Q) over every pair of the grid (§1.2); NaN eases are left out.
std::map<ParadigmPair, double> ceilings(std::span<const GridPair> grid, const CeilingStat& stat);

// The ceiling of each grid pair read two more ways (§1.2, "Three ceilings"):
//   paradigm        min(stat over the pairs of P on side a, stat over the pairs of Q on side
//                   b): each paradigm's own value (merging, P = Q: the same as per pair);
//   leave_pair_out  stat over the pair's cell without the pair itself (NaN alone in it).
enum class CeilingVariant { pair, paradigm, leave_pair_out };
inline constexpr const char* kCeilingVariantNames[] = {"pair", "paradigm", "leave_pair_out"};
// Parses a name of kCeilingVariantNames; std::invalid_argument otherwise.
CeilingVariant ceiling_variant(const std::string& name);
std::vector<double> ceiling_per_row(std::span<const GridPair> grid, const CeilingStat& stat,
                                    CeilingVariant variant);

// COMPASS's paradigm table (§1.2): per paradigm P, its alignment ceiling (the mean and the
// max of ceiling(P, Q) over the text paradigms Q of the alignment grid) beside its merging
// ceiling (ceiling(P, P) of the merge grid). Paradigms in order of name; one in only one grid
// has NaN for the other. Ranks are 1 for the highest ceiling, 0 for NaN.
struct ParadigmTable {
    std::vector<std::string> paradigm;
    std::vector<double> alignment_mean, alignment_max, merging;
    std::vector<std::int64_t> alignment_rank, merging_rank;
};
ParadigmTable paradigm_table(std::span<const GridPair> alignment_grid,
                             std::span<const GridPair> merge_grid, const CeilingStat& stat);

inline constexpr const char* kRegionNames[] = {"act_now", "budget_limited", "ceiling_limited",
                                               "incompatible"};
// Region of each pair by the medians of ease and ceiling over the given pairs (§1.3; a value
// equal to the median counts as high).
std::vector<std::string> regions(std::span<const double> ease, std::span<const double> ceiling);

// A candidate for the evaluated set: its id and the two family labels it covers.
struct Candidate {
    std::string id;
    std::string family_a, family_b;
};
// Picks `count` candidates deterministically: first one per (family_a, family_b)
// combination in a seeded order until every family of either side is covered, then one
// per combination not yet taken, then the rest in the seeded order. Returns indices into
// `candidates`, in their original order. count >= candidates.size() takes all.
std::vector<std::size_t> select_covering(std::span<const Candidate> candidates, std::size_t count,
                                         std::uint64_t seed);

// (Order candidates by predictor with stats::order_descending.)
// 1-based position, in `order`, of the pair with the best target (ties: first in `order`).
std::size_t best_position(std::span<const std::size_t> order, std::span<const double> target);
// best_so_far[m-1] = max target over the first m pairs of `order` (§6 budget-limited search).
std::vector<double> best_so_far(std::span<const std::size_t> order, std::span<const double> target);

// One-hot design matrix (row-major rows x columns) of categorical features; a level unseen
// in `fit_rows` gets no column (it is all zeros when predicting).
struct OneHot {
    std::vector<std::vector<std::string>> levels;  // per feature
    std::size_t width() const;
    std::vector<double> encode(std::span<const std::string> row) const;
};
OneHot fit_one_hot(std::span<const std::vector<std::string>> rows,
                   std::span<const std::size_t> fit_rows);

// Ridge regression with an unpenalised intercept, fitted on `fit_rows` and evaluated on
// `predict_rows` (§6 metadata-regressor baseline).
std::vector<double> ridge_predict(std::span<const std::vector<std::string>> features,
                                  std::span<const double> target,
                                  std::span<const std::size_t> fit_rows,
                                  std::span<const std::size_t> predict_rows, double alpha);

// Out-of-fold predictions: K folds from a seeded permutation of the rows.
std::vector<double> kfold_predictions(std::span<const std::vector<std::string>> features,
                                      std::span<const double> target, int folds, double alpha,
                                      std::uint64_t seed);
// Leave-one-group-out: a row may belong to several groups (a pair has two families). For
// each label, fit on the rows outside it and predict the rows inside it.
struct HeldOut {
    std::string label;
    std::vector<std::size_t> rows;
    std::vector<double> predicted;
};
std::vector<HeldOut> leave_group_out(std::span<const std::vector<std::string>> features,
                                     std::span<const double> target,
                                     std::span<const std::vector<std::string>> groups,
                                     double alpha);

}  // namespace compatbench::compass
