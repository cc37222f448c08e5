// Analysis `kruskal`: rows grouped by the column `by`; per value column, n, mean and sd of
// each group and the tie-corrected Kruskal-Wallis H and p across groups (methods.md §5, §6
// "Regions table"). NaN values are left out.
//
//   - {name: regions, kind: kruskal, study: demo, input: work, by: region, values: [r1]}
#include <cmath>
#include <map>

#include "analyses/analysis_kind.h"
#include "analyses/column_args.h"
#include "stats/kruskal.h"
#include "stats/summary.h"

namespace compatbench {

namespace {
class KruskalAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "kruskal"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "by", .type = KeyType::string, .required = true},
                {.name = "values", .type = KeyType::scalar_or_list, .required = true},
                {.name = "table", .type = KeyType::string},
                {.name = "groups_table", .type = KeyType::string}};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& columns,
               const GroupColumns&, const YamlChecker& checker) const override {
        column_args(spec, "by", columns, false, checker);
        column_args(spec, "values", columns, true, checker);
    }
    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const YamlChecker checker("(analysis)");
        const auto by = input.texts(spec.node["by"].Scalar());
        const auto targets = column_args(spec, "values", input.columns, true, checker);
        TableData test, groups;
        test.path = spec.node["table"] ? spec.node["table"].Scalar() : "kruskal";
        groups.path = spec.node["groups_table"] ? spec.node["groups_table"].Scalar() : "groups";
        test.add_column({"target", ColumnType::str, 0});
        test.add_column({"groups", ColumnType::i64, 0});
        test.add_column({"n", ColumnType::i64, 0});
        test.add_column({"h", ColumnType::f64, 0});
        test.add_column({"p", ColumnType::f64, 0});
        test.add_column({"reason", ColumnType::str, 0});
        groups.add_column({"group", ColumnType::str, 0});
        groups.add_column({"target", ColumnType::str, 0});
        groups.add_column({"n", ColumnType::i64, 0});
        groups.add_column({"mean", ColumnType::f64, 0});
        groups.add_column({"sd", ColumnType::f64, 0});
        for (const auto& target : targets) {
            const auto values = input.numbers(target);
            std::map<std::string, std::vector<double>> by_group;
            for (std::size_t i = 0; i < values.size(); ++i) {
                if (!std::isnan(values[i])) by_group[by[i]].push_back(values[i]);
            }
            std::vector<std::vector<double>> samples;
            for (const auto& [label, v] : by_group) {
                groups.add_row({label, target, static_cast<std::int64_t>(v.size()), stats::mean(v),
                                stats::sample_sd(v)});
                samples.push_back(v);
            }
            const auto kw = stats::kruskal_wallis(samples);
            if (!kw.ok()) note(target + " by " + spec.node["by"].Scalar() + ": " + kw.reason);
            test.add_row({target, static_cast<std::int64_t>(kw.groups),
                          static_cast<std::int64_t>(kw.n), kw.h, kw.p, kw.reason});
        }
        return {test, groups};
    }
};
}  // namespace

const AnalysisKind& kruskal_analysis() {
    static const KruskalAnalysis kind;
    return kind;
}

}  // namespace compatbench
