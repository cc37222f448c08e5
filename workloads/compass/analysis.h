// The COMPASS study's analysis (methods.md §1.2, §1.3, §5, §6) on plain columns: ceilings
// and scores of the grid, correlations of each predictor with each target, regions with
// Kruskal-Wallis, budget-limited search, leave-one-family-out, k-sensitivity, the metadata
// regressor baseline and the trained-adapter budgets. The runner's `compass` analysis reads
// its tables into a StudyInput and writes a StudyResult back; nothing here knows a table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compass/compass.h"
#include "stats/stat_result.h"
#include "stats/summary.h"

namespace compatbench::compass {

using NamedValues = std::vector<std::pair<std::string, std::vector<double>>>;
using NamedLabels = std::vector<std::pair<std::string, std::vector<std::string>>>;

// Every candidate pair (one entry per pair).
struct Grid {
    std::vector<std::string> paradigm_a, paradigm_b;
    std::vector<double> ease, cka;
    std::vector<std::pair<int, std::vector<double>>> ease_at_k;  // ease from the first k
                                                                 // neighbours, for each k
    std::vector<double> ease_excess;  // ease minus its permutation null (empty: not measured)
    std::vector<std::string> within;  // a group label per pair (empty: no within-group table)
    NamedLabels held_out;             // columns whose values LOFO holds out (default: the families)
    // Per pair: its family and paradigm labels, the metadata regressor's one-hot features.
    std::vector<std::vector<std::string>> metadata;
    std::size_t size() const { return ease.size(); }
};

// Trained adapters at several budgets: each row's grid pair, epochs and targets.
struct Budgets {
    std::vector<std::size_t> grid_rows;
    std::vector<double> epochs;
    NamedValues targets;  // in the config's order
};

struct StudyInput {
    Grid grid;
    std::vector<std::size_t> evaluated;                  // the grid row of each evaluated pair
    std::map<std::string, std::vector<double>> targets;  // per evaluated pair, by name
    NamedValues extra_predictors;  // further predictors per evaluated pair (e.g. screening)
    CeilingStat ceiling;
    std::vector<CeilingVariant> ceiling_variants;  // read beside the study's (per pair)
    int folds = 5;                                 // metadata regressor: K-fold
    double ridge_alpha = 1.0;
    std::uint64_t seed = 1;
    std::optional<Budgets> budgets;
};

// Ease, ceiling, score (= ease × ceiling) and CKA of some pairs.
struct Scored {
    std::vector<double> ease, ceiling, score, cka;
    const std::vector<double>& predictor(const std::string& name) const;
};

struct CeilingRow {
    ParadigmPair paradigms;
    std::int64_t pairs = 0;
    double ceiling = 0.0;
};
// One correlation of predictor with target, in a table keyed by `key` (none, a held-out
// group, k or epochs).
template <class Key>
struct Correlation {
    Key key;
    std::string predictor, target;
    stats::PairedCorrelation c;
};
using CorrelationRow = Correlation<std::string>;
using CountedCorrelation = Correlation<std::int64_t>;
struct RegionRow {
    std::string region, target;
    std::int64_t n = 0;
    double mean = 0.0, sd = 0.0;
};
struct SearchRow {
    std::string target, predictor;
    std::int64_t n = 0, best_position = 0;
    double best_value = 0.0, top5_best = 0.0;
    std::vector<double> curve;  // best target among the first m pairs, m = 1..n
};
struct RangeRow {
    std::string predictor, target;
    std::int64_t folds = 0;
    double pearson_min, pearson_max, spearman_min, spearman_max;
};
struct MetadataRow {
    std::string scheme, target;
    stats::PairedCorrelation c;
    double rmse = 0.0;
};

struct StudyResult {
    Scored grid;                       // every grid pair
    std::vector<CeilingRow> ceilings;  // every paradigm pair
    Scored evaluated;                  // the evaluated pairs
    std::vector<std::string> regions;  // of the evaluated pairs
    NamedValues evaluated_variants;    // per evaluated pair: ceiling_<v>, score_<v> for each
                                       // variant, ease_excess and score_excess when measured
    std::vector<CorrelationRow> correlations;  // key empty
    std::vector<CorrelationRow> within;        // key: the group
    std::vector<RegionRow> region_stats;
    std::vector<std::pair<std::string, stats::KruskalResult>> kruskal;  // per target
    std::vector<SearchRow> budget_search;
    std::vector<CorrelationRow> lofo;  // key: the held-out group
    std::vector<RangeRow> lofo_range;
    std::vector<CountedCorrelation> k_sensitivity;  // key: k
    std::vector<MetadataRow> metadata_regressor;
    std::vector<CountedCorrelation> budgets;  // key: epochs
};

inline constexpr const char* kPredictors[] = {"score", "ease", "ceiling", "cka"};

StudyResult analyse(const StudyInput& in);

}  // namespace compatbench::compass
