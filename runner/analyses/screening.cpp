// Analysis `screening`: destructive vs harmless merges (methods.md §3.3) against screening
// scores computed before merging (§3.1): per score, AUROC, the best threshold (Youden J) and
// its confusion counts; and a pre-registered check — the threshold is fixed on the merges of
// half the backbones (every other one in name order) and predicts the other half's, whose
// hits are reported.
//
//   - {name: screening, kind: screening, study: merging, input: merges,
//      scores: [screen_score, sign_conflict], label: destructive, split_by: backbone}
//   `table: name` writes `name` and `name_preregistered` (default `screening`).
//   `below: 0.5` makes the positives the rows whose label column is under 0.5 (a numeric
//   label such as retention) instead of the rows where it is non-zero.
//   `where: {method: task_arithmetic, coef: 1.0}` keeps the rows whose columns equal those
//   values (a K-way grid holds many operators; the screen predicts task arithmetic).
//   `thresholds: {screen_score: 1.9e-3}` also writes `name_fixed`: each named score's
//   confusion counts at a threshold given in advance (a paper's), flagging score > threshold.
//   `bootstrap: 1000` adds auroc_lo and auroc_hi to `name`: a 95% percentile bootstrap
//   interval over that many resamples of the merges, seeded from the analysis's name.
#include <algorithm>
#include <cmath>

#include "analyses/analysis_kind.h"
#include "analyses/column_args.h"
#include "common/hash.h"
#include "compass/screening.h"
#include "config/config.h"

namespace compatbench {

namespace {

class ScreeningAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "screening"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "scores", .type = KeyType::scalar_or_list, .required = true},
                {.name = "label", .type = KeyType::string, .required = true},
                {.name = "split_by", .type = KeyType::string, .required = true},
                {.name = "where", .type = KeyType::map},
                {.name = "below", .type = KeyType::real, .min = -1e300, .max = 1e300},
                {.name = "thresholds", .type = KeyType::map},
                {.name = "bootstrap", .type = KeyType::integer, .min = 1, .max = 1e6},
                {.name = "table", .type = KeyType::string}};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& columns,
               const GroupColumns&, const YamlChecker& checker) const override {
        const auto listed = column_args(spec, "scores", columns, true, checker);
        column_args(spec, "label", columns, true, checker);
        column_args(spec, "split_by", columns, false, checker);
        if (const YAML::Node w = spec.node["where"])
            for (const auto& e : w) {
                const std::string c = e.first.Scalar();
                if (std::none_of(columns.begin(), columns.end(),
                                 [&](const ColumnSpec& s) { return s.name == c; }))
                    checker.fail(e.first, "analyses." + spec.name + ".where." + c,
                                 "the input group has no column '" + c + "'");
                const auto col = std::find_if(columns.begin(), columns.end(),
                                              [&](const ColumnSpec& s) { return s.name == c; });
                if (col->type != ColumnType::str)
                    checker.as_real(e.second, "analyses." + spec.name + ".where." + c);
            }
        if (const YAML::Node t = spec.node["thresholds"])
            for (const auto& e : t) {
                const std::string key = "analyses." + spec.name + ".thresholds." + e.first.Scalar();
                if (std::find(listed.begin(), listed.end(), e.first.Scalar()) == listed.end())
                    checker.fail(e.first, key, "not one of this analysis's `scores`");
                checker.as_real(e.second, key);
            }
    }
    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const YamlChecker checker("(analysis)");
        const auto scores = column_args(spec, "scores", input.columns, true, checker);
        // The rows the `where` filter keeps (all without one).
        std::vector<std::size_t> kept;
        for (std::size_t i = 0; i < input.rows.size(); ++i) kept.push_back(i);
        if (const YAML::Node w = spec.node["where"])
            for (const auto& e : w) {
                const std::string c = e.first.Scalar(), want = e.second.Scalar();
                const bool text =
                    input.columns[static_cast<std::size_t>(input.find(c))].type == ColumnType::str;
                const auto texts = text ? input.texts(c) : std::vector<std::string>{};
                const auto numbers = text ? std::vector<double>{} : input.numbers(c);
                std::vector<std::size_t> next;
                for (std::size_t i : kept)
                    if (text ? texts[i] == want : numbers[i] == std::stod(want)) next.push_back(i);
                kept = std::move(next);
            }
        const auto pick = [&](auto all) {
            decltype(all) out;
            for (std::size_t i : kept) out.push_back(all[i]);
            return out;
        };
        const auto labels = pick(input.numbers(spec.node["label"].Scalar()));
        const auto split = pick(input.texts(spec.node["split_by"].Scalar()));
        std::vector<std::uint8_t> positive(labels.size());
        // Positive: a non-zero label, or with `below: v` a label under v (e.g. retention).
        const bool below = static_cast<bool>(spec.node["below"]);
        const double cut = below ? spec.node["below"].as<double>() : 0.0;
        for (std::size_t i = 0; i < labels.size(); ++i)
            positive[i] = below ? labels[i] < cut : labels[i] != 0.0;
        TableData all, pre;
        all.path = spec.node["table"] ? spec.node["table"].Scalar() : "screening";
        pre.path = all.path + "_preregistered";
        for (const char* c : {"score"})
            all.add_column({c, ColumnType::str, 0}), pre.add_column({c, ColumnType::str, 0});
        for (const char* c : {"n", "positives"}) all.add_column({c, ColumnType::i64, 0});
        for (const char* c : {"auroc", "best_threshold", "youden"})
            all.add_column({c, ColumnType::f64, 0});
        for (const char* c : {"tp", "fp", "tn", "fn"}) all.add_column({c, ColumnType::i64, 0});
        const int draws = spec.node["bootstrap"] ? spec.node["bootstrap"].as<int>() : 0;
        if (draws > 0)
            for (const char* c : {"auroc_lo", "auroc_hi"}) all.add_column({c, ColumnType::f64, 0});
        for (const char* c : {"fit_n", "test_n"}) pre.add_column({c, ColumnType::i64, 0});
        pre.add_column({"threshold", ColumnType::f64, 0});
        for (const char* c : {"hits", "tp", "fp", "tn", "fn"})
            pre.add_column({c, ColumnType::i64, 0});
        pre.add_column({"accuracy", ColumnType::f64, 0});
        for (const auto& name : scores) {
            const auto r = compass::screen(pick(input.numbers(name)), positive, split);
            if (std::isnan(r.auroc)) note(name + ": AUROC needs destructive and harmless merges");
            Row row = {name,
                       r.n,
                       r.positives,
                       r.auroc,
                       r.best.threshold,
                       r.best.youden,
                       r.best.counts.tp,
                       r.best.counts.fp,
                       r.best.counts.tn,
                       r.best.counts.fn};
            if (draws > 0) {
                const auto ci =
                    compass::auroc_interval(pick(input.numbers(name)), positive, draws,
                                            fnv1a64("bootstrap/" + spec.name + "/" + name));
                row.insert(row.end(), {ci.lo, ci.hi});
            }
            all.add_row(row);
            pre.add_row({name, r.fit_n, r.test_n, r.fitted_threshold,
                         r.predicted.tp + r.predicted.tn, r.predicted.tp, r.predicted.fp,
                         r.predicted.tn, r.predicted.fn, r.accuracy});
        }
        if (!spec.node["thresholds"]) return {all, pre};
        return {all, pre, fixed_table(spec, input, pick, positive, all.path + "_fixed")};
    }

  private:
    // The counts at each threshold given in advance (`thresholds: {score: value}`).
    template <class Pick>
    static TableData fixed_table(const AnalysisSpec& spec, const AnalysisInput& input,
                                 const Pick& pick, const std::vector<std::uint8_t>& positive,
                                 const std::string& path) {
        TableData fixed;
        fixed.path = path;
        fixed.add_column({"score", ColumnType::str, 0});
        fixed.add_column({"threshold", ColumnType::f64, 0});
        for (const char* c : {"n", "positives", "tp", "fp", "tn", "fn"})
            fixed.add_column({c, ColumnType::i64, 0});
        for (const auto& e : spec.node["thresholds"]) {
            const double threshold = e.second.as<double>();
            const auto c =
                compass::confusion(pick(input.numbers(e.first.Scalar())), positive, threshold);
            const auto n = static_cast<std::int64_t>(positive.size());
            fixed.add_row({e.first.Scalar(), threshold, n, c.tp + c.fn, c.tp, c.fp, c.tn, c.fn});
        }
        return fixed;
    }
};
}  // namespace

const AnalysisKind& screening_analysis() {
    static const ScreeningAnalysis kind;
    return kind;
}

}  // namespace compatbench
