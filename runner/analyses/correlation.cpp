// Analysis `correlation`: Pearson (r, p, Fisher-z CI) and Spearman (rho, p) of every
// predictor column `x` against every target column `y` (methods.md §5, §6 "Correlation
// table"). Rows whose x or y is NaN are left out of that pair. With `clusters:` every row
// also gets naive and clustered bootstrap intervals (§5.2), `claims:` writes
// `<table>_claims` (§5.3) and `baselines:` `<table>_baselines` (§5.4): analyses/inference.h.
//
//   - {name: corr, kind: correlation, study: demo, input: work, x: [a, b], y: value,
//      clusters: [model_a, model_b], draws: 1000}
#include <cmath>

#include "analyses/analysis_kind.h"
#include "analyses/column_args.h"
#include "analyses/inference.h"
#include "stats/summary.h"

namespace compatbench {

namespace {
class CorrelationAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "correlation"; }
    std::vector<KeyRule> keys() const override {
        std::vector<KeyRule> keys = {
            {.name = "x", .type = KeyType::scalar_or_list, .required = true},
            {.name = "y", .type = KeyType::scalar_or_list, .required = true},
            {.name = "table", .type = KeyType::string}};
        for (auto& k : inference_keys()) keys.push_back(std::move(k));
        return keys;
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& columns,
               const GroupColumns&, const YamlChecker& checker) const override {
        column_args(spec, "x", columns, true, checker);
        column_args(spec, "y", columns, true, checker);
        inference_settings(spec, column_names(columns), checker);
    }
    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const YamlChecker checker("(analysis)");
        const auto xs = column_args(spec, "x", input.columns, true, checker);
        const auto ys = column_args(spec, "y", input.columns, true, checker);
        TableData table;
        table.path = spec.node["table"] ? spec.node["table"].Scalar() : "correlations";
        table.add_column({"predictor", ColumnType::str, 0});
        table.add_column({"target", ColumnType::str, 0});
        table.add_column({"n", ColumnType::i64, 0});
        for (const char* c : {"pearson_r", "pearson_p", "pearson_ci_low", "pearson_ci_high",
                              "spearman_rho", "spearman_p"}) {
            table.add_column({c, ColumnType::f64, 0});
        }
        table.add_column({"reason", ColumnType::str, 0});
        for (const auto& x_name : xs) {
            for (const auto& y_name : ys) {
                const auto c =
                    stats::correlate_finite(input.numbers(x_name), input.numbers(y_name));
                const auto& [p, s] = std::tie(c.pearson, c.spearman);
                if (!c.reason().empty()) note(x_name + " vs " + y_name + ": " + c.reason());
                table.add_row({x_name, y_name, static_cast<std::int64_t>(c.n), p.r, p.p, p.ci_low,
                               p.ci_high, s.r, s.p, c.reason()});
            }
        }
        const auto settings = inference_settings(spec, column_names(input.columns), checker);
        const TableData rows = table_of(input);
        const Frame frame{rows};
        std::vector<std::size_t> all(rows.rows());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
        if (!settings.clusters.empty())
            add_correlation_intervals(table, settings, frame, [&](std::size_t) { return all; });
        std::vector<TableData> out = {table};
        if (!settings.claims.empty())
            out.push_back(claims_table(settings, frame, table.path + "_claims", note));
        if (!settings.baselines.empty())
            out.push_back(baselines_table(settings, frame, ys, "", table.path + "_baselines"));
        return out;
    }
};
}  // namespace

const AnalysisKind& correlation_analysis() {
    static const CorrelationAnalysis kind;
    return kind;
}

}  // namespace compatbench
