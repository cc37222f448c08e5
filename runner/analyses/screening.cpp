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
//   interval over that many resamples of the merges (rows), seeded from the analysis's name.
//   `clusters:` adds the clustered interval beside it (auroc_cl_lo, auroc_cl_hi), `within:
//   [k, coef]` writes `name_within` (each score's AUROC inside each value), `claims:` and
//   `baselines:` write `name_claims` and `name_baselines` (analyses/inference.h, methods.md
//   §5.2-§5.4); a claim or a baseline may name `positive`, the label as 0/1.
//   `member_values: {group: lm_checkpoints, column: relative_norm, as: rel_norm,
//   name: "{backbone}+{member}"}` adds the column `rel_norm` to the rows: the mean over a
//   merge's members (`members`, split at ',') of `column` in the row of `group` whose `name`
//   is the template filled with the member and the merge's columns (a plain competitor of
//   a screening score: the task vectors' relative norm).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "analyses/analysis_kind.h"
#include "analyses/column_args.h"
#include "analyses/inference.h"
#include "common/hash.h"
#include "compass/screening.h"
#include "config/config.h"
#include "core/text_template.h"
#include "stats/correlation.h"

namespace compatbench {

namespace {

struct MemberValues {
    std::string group, column, as, members = "members", split = ",";
    std::string name = {};  // a template of {member} and the merge's columns
};

std::optional<MemberValues> member_values(const AnalysisSpec& spec) {
    const YAML::Node n = spec.node["member_values"];
    if (!n) return std::nullopt;
    MemberValues m{n["group"].Scalar(), n["column"].Scalar(), n["as"].Scalar()};
    if (n["members"]) m.members = n["members"].Scalar();
    if (n["split"]) m.split = n["split"].Scalar();
    m.name = n["name"].Scalar();
    return m;
}

// The mean over each row's members of the named group's value (NaN when one is missing).
std::vector<double> member_means(const MemberValues& m, const AnalysisInput& input,
                                 const std::vector<std::size_t>& kept) {
    const AnalysisInput& other = input.other(m.group);
    std::map<std::string, double> value;
    const auto names = other.texts("name");
    const auto values = other.numbers(m.column);
    for (std::size_t i = 0; i < names.size(); ++i) value[names[i]] = values[i];
    const TextTemplate name = TextTemplate::parse(m.name, {}, true);
    std::map<std::string, std::vector<std::string>> columns;
    for (const auto& c : input.columns) columns[c.name] = input.texts(c.name);
    std::vector<double> out;
    for (std::size_t r : kept) {
        std::map<std::string, std::string> fill;
        for (const auto& [c, v] : columns) fill[c] = v[r];
        double sum = 0;
        int count = 0;
        for (const auto& member : split_list(columns.at(m.members)[r], m.split)) {
            fill["member"] = member;
            const auto it = value.find(name.render(fill, false));
            sum += it == value.end() ? stats::kNaN : it->second;
            ++count;
        }
        out.push_back(sum / count);
    }
    return out;
}

// The input's columns and `positive`, the label as 0/1: what claims and clusters may name.
std::vector<std::string> frame_columns(const AnalysisSpec& spec,
                                       const std::vector<ColumnSpec>& columns) {
    auto names = column_names(columns);
    names.push_back("positive");
    if (const auto m = member_values(spec)) names.push_back(m->as);
    return names;
}

// The rows the `where` filter keeps (all without one), with the column `positive`: a non-zero
// label, or with `below: v` a label under v (e.g. retention).
TableData frame_of(const AnalysisSpec& spec, const AnalysisInput& input) {
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
    TableData t = TableData::make(input.group.table, input.columns);
    t.add_column(i64("positive"));
    const auto members = member_values(spec);
    if (members) t.add_column(f64(members->as));
    const auto means = members ? member_means(*members, input, kept) : std::vector<double>{};
    const auto labels = input.numbers(spec.node["label"].Scalar());
    const bool below = static_cast<bool>(spec.node["below"]);
    const double cut = below ? spec.node["below"].as<double>() : 0.0;
    for (std::size_t k = 0; k < kept.size(); ++k) {
        const std::size_t i = kept[k];
        Row row = *input.rows[i];
        row.push_back(std::int64_t{below ? labels[i] < cut : labels[i] != 0.0});
        if (members) row.push_back(means[k]);
        t.add_row(std::move(row));
    }
    return t;
}

// Why an AUROC of n merges with `positives` destructive ones is undefined ("" when it is not).
std::string undefined_reason(std::int64_t n, std::int64_t positives) {
    if (n == 0) return "no merges";
    if (positives == 0) return "no destructive merge among " + std::to_string(n);
    if (positives == n) return "every one of " + std::to_string(n) + " merges is destructive";
    return {};
}

// Mann-Whitney's two-sided p of the AUROC (exact for small groups, methods.md §5.1).
double auroc_p(const std::vector<double>& score, const std::vector<std::uint8_t>& positive) {
    std::vector<double> pos, neg;
    for (std::size_t i = 0; i < score.size(); ++i)
        if (std::isfinite(score[i])) (positive[i] ? pos : neg).push_back(score[i]);
    return stats::mann_whitney(pos, neg).p;
}

// The intervals of each score's AUROC: `bootstrap: N` the pre-registered one (auroc_lo,
// auroc_hi: N resamples of the merges, a draw with one kind of merge drawn again; as the first
// studies registered it); with `clusters:`, the naive and the clustered interval of
// methods.md §5.2 side by side, undefined draws counted.
void add_auroc_intervals(TableData& all, const AnalysisSpec& spec,
                         const InferenceSettings& settings, const Frame& frame) {
    const auto y = frame.numbers("positive");
    std::vector<std::uint8_t> positive;
    for (double v : y) positive.push_back(v != 0.0);
    const int pre = spec.node["bootstrap"] ? spec.node["bootstrap"].as<int>() : 0;
    const bool clustered = !settings.clusters.empty();
    std::vector<std::vector<Value>> added((pre > 0 ? 2 : 0) + (clustered ? 7 : 0));
    for (const Value& name : all.values[0]) {
        const std::string score = std::get<std::string>(name);
        const auto x = frame.numbers(score);
        std::vector<Value> row;
        if (pre > 0) {
            const auto ci = compass::auroc_interval(
                x, positive, pre, fnv1a64("bootstrap/" + spec.name + "/" + score));
            row.insert(row.end(), {ci.lo, ci.hi});
        }
        if (clustered) {
            std::vector<std::size_t> rows;
            for (std::size_t r = 0; r < x.size(); ++r)
                if (std::isfinite(x[r])) rows.push_back(r);
            const auto design = cluster_design(settings, frame, rows);
            const auto iv =
                intervals(settings, design, statistic_over("auroc", x, y, rows), "auroc/" + score);
            row.insert(row.end(),
                       {iv.naive.lo, iv.naive.hi, iv.clustered.lo, iv.clustered.hi,
                        design.describe(), static_cast<std::int64_t>(iv.clustered.undefined),
                        iv.clustered.ok() ? iv.naive.reason : iv.clustered.reason});
        }
        for (std::size_t c = 0; c < row.size(); ++c) added[c].push_back(row[c]);
    }
    std::vector<ColumnSpec> columns;
    if (pre > 0) columns = {f64("auroc_lo"), f64("auroc_hi")};
    if (clustered)
        for (auto c :
             {f64("auroc_naive_lo"), f64("auroc_naive_hi"), f64("auroc_cl_lo"), f64("auroc_cl_hi"),
              str("clusters"), i64("undefined_draws"), str("interval_reason")})
            columns.push_back(c);
    for (std::size_t c = 0; c < added.size(); ++c) {
        all.add_column(columns[c]);
        all.values.back() = std::move(added[c]);
    }
}

std::vector<std::string> within_columns(const AnalysisSpec& spec) {
    const YAML::Node w = spec.node["within"];
    if (!w) return {};
    if (w.IsScalar()) return {w.Scalar()};
    std::vector<std::string> out;
    for (const auto& e : w) out.push_back(e.Scalar());
    return out;
}

// Per value of each `within` column (drift level, K, c): every score's AUROC there, with its
// intervals; a pooled AUROC over groups of different base rates mostly measures the grouping.
TableData within_table(const AnalysisSpec& spec, const InferenceSettings& settings,
                       const Frame& frame, const std::vector<std::string>& scores,
                       const std::string& path) {
    TableData t = TableData::make(
        path + "_within", {str("column"), str("value"), str("score"), i64("n"), i64("positives"),
                           f64("auroc"), f64("naive_lo"), f64("naive_hi"), f64("lo"), f64("hi"),
                           i64("undefined_draws"), str("reason")});
    const auto y = frame.numbers("positive");
    for (const auto& column : within_columns(spec)) {
        const auto values = frame.texts(column);
        std::vector<std::string> levels;
        for (const auto& v : values)
            if (std::find(levels.begin(), levels.end(), v) == levels.end()) levels.push_back(v);
        for (const auto& level : levels)
            for (const auto& score : scores) {
                const auto x = frame.numbers(score);
                std::vector<std::size_t> rows;
                std::int64_t positives = 0;
                for (std::size_t r = 0; r < x.size(); ++r)
                    if (values[r] == level && std::isfinite(x[r]))
                        rows.push_back(r), positives += y[r] != 0;
                const auto n = static_cast<std::int64_t>(rows.size());
                const auto iv = intervals(settings, cluster_design(settings, frame, rows),
                                          statistic_over("auroc", x, y, rows),
                                          "within/" + column + "/" + level + "/" + score);
                const std::string reason = undefined_reason(n, positives);
                t.add_row({column, level, score, n, positives, statistic_of("auroc", x, y, rows),
                           iv.naive.lo, iv.naive.hi, iv.clustered.lo, iv.clustered.hi,
                           static_cast<std::int64_t>(iv.clustered.undefined),
                           reason.empty() ? iv.clustered.reason : reason});
            }
    }
    return t;
}

void check_member_values(const AnalysisSpec& spec, const std::vector<ColumnSpec>& columns,
                         const GroupColumns& groups, const YamlChecker& checker) {
    const YAML::Node n = spec.node["member_values"];
    const std::string path = "analyses." + spec.name + ".member_values";
    checker.check_map(n, path,
                      {{.name = "group", .type = KeyType::string, .required = true},
                       {.name = "column", .type = KeyType::string, .required = true},
                       {.name = "as", .type = KeyType::string, .required = true},
                       {.name = "name", .type = KeyType::string, .required = true},
                       {.name = "members", .type = KeyType::string},
                       {.name = "split", .type = KeyType::string}});
    const auto m = *member_values(spec);
    const auto has = [](const std::vector<ColumnSpec>& cols, const std::string& c) {
        return std::any_of(cols.begin(), cols.end(),
                           [&](const ColumnSpec& s) { return s.name == c; });
    };
    if (!groups.count(m.group))
        checker.fail(n["group"], path + ".group", "no task group '" + m.group + "'");
    for (const std::string& c : {m.column, std::string("name")})
        if (!has(groups.at(m.group), c))
            checker.fail(n, path, "group '" + m.group + "' has no column '" + c + "'");
    if (!has(columns, m.members))
        checker.fail(n, path + ".members", "the input group has no column '" + m.members + "'");
    if (m.split.empty()) checker.fail(n["split"], path + ".split", "empty");
    std::vector<std::string> known = column_names(columns);
    known.push_back("member");
    try {
        TextTemplate::parse(m.name, known);
    } catch (const std::invalid_argument& e) {
        checker.fail(n["name"], path + ".name", e.what());
    }
}

class ScreeningAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "screening"; }
    std::vector<KeyRule> keys() const override {
        std::vector<KeyRule> keys = {
            {.name = "scores", .type = KeyType::scalar_or_list, .required = true},
            {.name = "label", .type = KeyType::string, .required = true},
            {.name = "split_by", .type = KeyType::string, .required = true},
            {.name = "where", .type = KeyType::map},
            {.name = "below", .type = KeyType::real, .min = -1e300, .max = 1e300},
            {.name = "thresholds", .type = KeyType::map},
            {.name = "bootstrap", .type = KeyType::integer, .min = 1, .max = 1e6},
            {.name = "within", .type = KeyType::scalar_or_list},
            {.name = "member_values", .type = KeyType::map},
            {.name = "table", .type = KeyType::string}};
        for (auto& k : inference_keys()) keys.push_back(std::move(k));
        return keys;
    }
    std::vector<std::string> extra_inputs(const AnalysisSpec& spec) const override {
        if (const auto m = member_values(spec)) return {m->group};
        return {};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& columns,
               const GroupColumns& groups, const YamlChecker& checker) const override {
        const auto listed = column_args(spec, "scores", columns, true, checker);
        column_args(spec, "label", columns, true, checker);
        column_args(spec, "split_by", columns, false, checker);
        if (spec.node["within"]) column_args(spec, "within", columns, false, checker);
        if (spec.node["member_values"]) check_member_values(spec, columns, groups, checker);
        inference_settings(spec, frame_columns(spec, columns), checker);
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
        const TableData frame_rows = frame_of(spec, input);
        const Frame frame{frame_rows};
        const auto settings = inference_settings(spec, frame_columns(spec, input.columns), checker);
        const auto positive_column = frame.numbers("positive");
        std::vector<std::uint8_t> positive;
        for (double v : positive_column) positive.push_back(v != 0.0);
        const auto split = frame.texts(spec.node["split_by"].Scalar());
        TableData all =
            TableData::make(spec.node["table"] ? spec.node["table"].Scalar() : "screening",
                            {str("score"), i64("n"), i64("positives"), f64("auroc"), f64("auroc_p"),
                             f64("best_threshold"), f64("youden"), i64("tp"), i64("fp"), i64("tn"),
                             i64("fn"), str("reason")});
        TableData pre = TableData::make(
            all.path + "_preregistered",
            {str("score"), i64("fit_n"), i64("test_n"), f64("threshold"), i64("hits"), i64("tp"),
             i64("fp"), i64("tn"), i64("fn"), f64("accuracy")});
        for (const auto& name : scores) {
            const auto values = frame.numbers(name);
            const auto r = compass::screen(values, positive, split);
            const std::string reason = undefined_reason(r.n, r.positives);
            if (!reason.empty()) note(name + ": AUROC undefined, " + reason);
            all.add_row({name, r.n, r.positives, r.auroc, auroc_p(values, positive),
                         r.best.threshold, r.best.youden, r.best.counts.tp, r.best.counts.fp,
                         r.best.counts.tn, r.best.counts.fn, reason});
            pre.add_row({name, r.fit_n, r.test_n, r.fitted_threshold,
                         r.predicted.tp + r.predicted.tn, r.predicted.tp, r.predicted.fp,
                         r.predicted.tn, r.predicted.fn, r.accuracy});
        }
        add_auroc_intervals(all, spec, settings, frame);
        std::vector<TableData> out = {all, pre};
        if (spec.node["thresholds"])
            out.push_back(fixed_table(spec, frame, positive, all.path + "_fixed"));
        if (spec.node["within"])
            out.push_back(within_table(spec, settings, frame, scores, all.path));
        if (!settings.claims.empty())
            out.push_back(claims_table(settings, frame, all.path + "_claims", note));
        if (!settings.baselines.empty())
            out.push_back(
                baselines_table(settings, frame, {}, "positive", all.path + "_baselines"));
        return out;
    }

  private:
    // The counts at each threshold given in advance (`thresholds: {score: value}`).
    static TableData fixed_table(const AnalysisSpec& spec, const Frame& frame,
                                 const std::vector<std::uint8_t>& positive,
                                 const std::string& path) {
        TableData fixed =
            TableData::make(path, {str("score"), f64("threshold"), i64("n"), i64("positives"),
                                   i64("tp"), i64("fp"), i64("tn"), i64("fn")});
        for (const auto& e : spec.node["thresholds"]) {
            const double threshold = e.second.as<double>();
            const auto c = compass::confusion(frame.numbers(e.first.Scalar()), positive, threshold);
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
