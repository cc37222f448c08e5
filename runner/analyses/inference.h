// What every analysis that judges shares (methods.md §5.2-§5.4): the settings of its
// intervals (`clusters`, `draws`), clustered and naive bootstrap intervals of a statistic
// over the rows of a frame, the claims it judges against a band fixed before the run
// (`claims`), and each predictor beside its plain baseline (`baselines`).
//
//   clusters: [vision, text]                      two crossed pools, one column each
//   clusters: [[model_a, model_b]]                one pool that two columns draw from
//   clusters: [backbone, {columns: [model_a, model_b], within: backbone}]   nested
//   clusters: [{columns: [members], split: "+"}]  a column listing models ("a+b+c")
//   draws: 1000                                   bootstrap draws (default 1000)
//   claims:
//     - {name: score_predicts_retention, statistic: pearson, x: score, y: retention,
//        paper: "r = 0.70", band: [0.60, 0.80]}   or at_least: v / at_most: v
//   baselines: {score: [ease, ceiling]}           Δ statistic with its clustered interval
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyses/analysis_kind.h"
#include "config/config.h"
#include "stats/bootstrap.h"
#include "stats/verdict.h"

namespace compatbench {

struct ClusterFactorSpec {
    std::vector<std::string> columns = {};
    std::string within = {};  // the column of the factor it is nested in ("" for none)
    std::string split = {};   // a separator that lists several models in one value ("" for none)
};

struct ClaimSpec {
    std::string name, statistic, x, y, baseline, paper;
    std::vector<std::pair<std::string, std::string>> where;  // column = value filters
    stats::Band band;
};

struct InferenceSettings {
    std::vector<ClusterFactorSpec> clusters;  // empty: no clustered interval
    std::size_t draws = 1000;
    std::uint64_t seed = 0;  // from the analysis's name
    std::vector<ClaimSpec> claims;
    std::vector<std::pair<std::string, std::vector<std::string>>> baselines;
};

// The keys above, for an analysis kind's keys().
std::vector<KeyRule> inference_keys();
// Parses and checks the keys against `columns`, the frame's columns (ConfigError naming the
// key); `default_clusters` when the config names none (an analysis that knows its models).
InferenceSettings inference_settings(const AnalysisSpec& spec,
                                     const std::vector<std::string>& columns,
                                     const YamlChecker& checker,
                                     std::vector<ClusterFactorSpec> default_clusters = {});

// The rows an analysis judges: named columns of equal length.
struct Frame {
    const TableData& table;
    std::vector<double> numbers(const std::string& column) const;
    std::vector<std::string> texts(const std::string& column) const;
};

// The parts of `value` between the separators `split` ("a,b" -> a, b); the whole value when
// `split` is empty. A merge's `members`, a cluster column with `split:`.
std::vector<std::string> split_list(const std::string& value, const std::string& split);

// Every column the `clusters:` key names, with its key path and separator: what the task
// graph checks against the group's key columns before the run (a constant column is
// refused there, naming the key).
struct ClusterColumn {
    std::string path, column, split;
};
std::vector<ClusterColumn> cluster_columns(const AnalysisSpec& spec);

// The input group's done rows as a table (a frame of its columns).
TableData table_of(const AnalysisInput& in);
// The names of a table's columns.
std::vector<std::string> column_names(const std::vector<ColumnSpec>& columns);

// The cluster design of `rows` of the frame; a design_problem names why it cannot be used.
stats::ClusterDesign cluster_design(const InferenceSettings& s, const Frame& frame,
                                    const std::vector<std::size_t>& rows);

// A statistic's naive (rows resampled) and clustered (models resampled) 95% intervals.
struct Intervals {
    stats::BootstrapInterval naive, clustered;
};
Intervals intervals(const InferenceSettings& s, const stats::ClusterDesign& design,
                    const stats::ResampleStatistic& statistic, const std::string& salt);

// The statistic named `statistic` (pearson, spearman, kendall, auroc, mean, mean_difference)
// of x (against y) over `rows` of the columns (repeats allowed); NaN when undefined.
double statistic_of(const std::string& statistic, const std::vector<double>& x,
                    const std::vector<double>& y, std::span<const std::size_t> rows);

// The statistic of the frame's rows that a resample's positions into `rows` name (x, y and
// rows are captured by reference: they must outlive the returned function).
stats::ResampleStatistic statistic_over(const std::string& statistic, const std::vector<double>& x,
                                        const std::vector<double>& y,
                                        const std::vector<std::size_t>& rows);

// Appends naive and clustered interval columns for Pearson and Spearman to a correlations
// table (columns predictor, target), row i computed over `rows(i)` of `frame`.
using RowsOf = std::function<std::vector<std::size_t>(std::size_t row)>;
void add_correlation_intervals(TableData& correlations, const InferenceSettings& s,
                               const Frame& frame, const RowsOf& rows);

// `<prefix>claims`: each claim's value, p, intervals, band and verdict; `<prefix>baselines`:
// each predictor beside its baselines (Pearson and Spearman for every target, or the
// AUROC against `label` when `targets` is empty). Empty tables for none.
TableData claims_table(const InferenceSettings& s, const Frame& frame, const std::string& path,
                       const AnalysisNote& note);
TableData baselines_table(const InferenceSettings& s, const Frame& frame,
                          const std::vector<std::string>& targets, const std::string& label,
                          const std::string& path);

}  // namespace compatbench
