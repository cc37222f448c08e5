// The analysis kinds as the coordinator drives them (analyses/analysis_kind.h): the config
// check refuses what a kind cannot read, naming the key, and run() turns a group's rows into
// tables whose numbers are the workloads' (methods.md §1.2, §5).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "analyses/analysis_kind.h"
#include "config/config.h"

using namespace compatbench;

namespace {

// A group's rows given column by column: numbers are f64 columns, texts str columns.
struct Columns {
    std::vector<std::pair<std::string, std::vector<double>>> numbers = {};
    std::vector<std::pair<std::string, std::vector<std::string>>> texts = {};
};

struct Table {
    GroupSpec group;
    std::vector<Row> rows;
    std::vector<ColumnSpec> columns;

    Table(const std::string& name, const Columns& c) {
        group.name = name;
        for (const auto& [n, v] : c.numbers) columns.push_back(f64(n));
        for (const auto& [n, v] : c.texts) columns.push_back(str(n));
        const std::size_t n_rows =
            c.numbers.empty() ? c.texts.front().second.size() : c.numbers.front().second.size();
        rows.resize(n_rows);
        for (std::size_t r = 0; r < n_rows; ++r) {
            for (const auto& [n, v] : c.numbers) rows[r].emplace_back(v[r]);
            for (const auto& [n, v] : c.texts) rows[r].emplace_back(v[r]);
        }
    }
    AnalysisInput input() const {
        AnalysisInput in{group, columns, {}, {}, {}};
        for (const auto& r : rows) {
            in.rows.push_back(&r);
            in.seconds.push_back(1.0);
        }
        return in;
    }
};

AnalysisSpec spec_of(const std::string& kind, const std::string& yaml) {
    AnalysisSpec s;
    s.name = "a";
    s.kind_name = kind;
    s.study = "demo";
    s.node = YAML::Load(yaml);
    s.input = s.node["input"].Scalar();
    return s;
}

const AnalysisKind& kind_of(const AnalysisSpec& s) { return *find_analysis_kind(s.kind_name); }

// Column `name` of `t`.
const std::vector<Value>& column(const TableData& t, const std::string& name) {
    for (std::size_t c = 0; c < t.columns.size(); ++c)
        if (t.columns[c].name == name) return t.values[c];
    throw std::out_of_range("no column " + name + " in " + t.path);
}
double num(const TableData& t, const std::string& name, std::size_t row) {
    const Value& v = column(t, name).at(row);
    return std::holds_alternative<double>(v) ? std::get<double>(v)
                                             : static_cast<double>(std::get<std::int64_t>(v));
}

// The message of the ConfigError that check() throws, or "" when it accepts the spec.
std::string check_error(const AnalysisSpec& spec, const Table& input, const GroupColumns& all) {
    try {
        kind_of(spec).check(spec, input.columns, all, YamlChecker("t.yaml"));
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

std::vector<std::string> notes;
const AnalysisNote kNote = [](const std::string& n) { notes.push_back(n); };

}  // namespace

TEST(Analyses, EveryKindIsRegisteredOnce) {
    std::map<std::string, int> seen;
    for (const AnalysisKind* k : analysis_kinds()) ++seen[std::string(k->name())];
    for (const char* name : {"compass", "correlation", "encoder_roles", "kruskal", "paradigm_table",
                             "prism", "screening"}) {
        EXPECT_EQ(seen[name], 1) << name;
        ASSERT_NE(find_analysis_kind(name), nullptr) << name;
    }
    EXPECT_EQ(seen.size(), 7u);
    EXPECT_EQ(find_analysis_kind("no_such_kind"), nullptr);
}

TEST(Analyses, CorrelationLeavesOutNaNRowsAndRefusesUnknownColumns) {
    const Table t("work", {.numbers = {{"a", {1, 2, 3, 4, NAN}}, {"b", {2, 4, 6, 8, 1}}}});
    const AnalysisSpec s = spec_of("correlation", "{input: work, x: [a], y: b}");
    EXPECT_EQ(check_error(s, t, {}), "");
    const auto tables = kind_of(s).run(s, t.input(), kNote);
    ASSERT_EQ(tables.size(), 1u);
    const TableData& c = tables[0];
    EXPECT_EQ(c.path, "correlations");
    ASSERT_EQ(c.rows(), 1u);
    EXPECT_EQ(num(c, "n", 0), 4.0);
    EXPECT_NEAR(num(c, "pearson_r", 0), 1.0, 1e-12);
    EXPECT_NEAR(num(c, "spearman_rho", 0), 1.0, 1e-12);
    const std::string why =
        check_error(spec_of("correlation", "{input: work, x: [zz], y: b}"), t, {});
    EXPECT_NE(why.find("zz"), std::string::npos) << why;
}

TEST(Analyses, KruskalGroupsByAColumnAsScipyDoes) {
    const Table t("work", {.numbers = {{"v", {1, 2, 3, 4, 5, 6, NAN}}},
                           .texts = {{"region", {"A", "A", "A", "B", "B", "B", "B"}}}});
    const AnalysisSpec s = spec_of("kruskal", "{input: work, by: region, values: [v]}");
    EXPECT_EQ(check_error(s, t, {}), "");
    const auto tables = kind_of(s).run(s, t.input(), kNote);
    ASSERT_EQ(tables.size(), 2u);
    const TableData& test = tables[0];
    const TableData& groups = tables[1];
    // scipy.stats.kruskal([1, 2, 3], [4, 5, 6]) = (3.857142857142854, 0.049534613435626915)
    EXPECT_NEAR(num(test, "h", 0), 3.857142857142857, 1e-12);
    EXPECT_NEAR(num(test, "p", 0), 0.04953461343562649, 1e-12);
    EXPECT_EQ(num(test, "n", 0), 6.0);
    ASSERT_EQ(groups.rows(), 2u);
    EXPECT_EQ(std::get<std::string>(column(groups, "group")[1]), "B");
    EXPECT_DOUBLE_EQ(num(groups, "mean", 1), 5.0);
    EXPECT_DOUBLE_EQ(num(groups, "sd", 1), 1.0);
}

TEST(Analyses, ParadigmTableReadsItsSecondGroup) {
    const Table merge("merge_grid", {.numbers = {{"ease", {0.5, 0.6}}},
                                     .texts = {{"paradigm", {"clip", "mae"}}}});
    const Table align("align_grid", {.numbers = {{"ease", {0.2, 0.4}}},
                                     .texts = {{"vision_paradigm", {"clip", "clip"}},
                                               {"text_paradigm", {"x", "y"}}}});
    const AnalysisSpec s =
        spec_of("paradigm_table", "{input: merge_grid, alignment_grid: align_grid}");
    EXPECT_EQ(kind_of(s).extra_inputs(s), std::vector<std::string>{"align_grid"});
    const GroupColumns all = {{"merge_grid", merge.columns}, {"align_grid", align.columns}};
    EXPECT_EQ(check_error(s, merge, all), "");
    AnalysisInput in = merge.input();
    in.others.push_back(align.input());
    const auto tables = kind_of(s).run(s, in, kNote);
    ASSERT_EQ(tables.size(), 1u);
    const TableData& p = tables[0];
    ASSERT_EQ(p.rows(), 2u);
    EXPECT_EQ(std::get<std::string>(column(p, "paradigm")[0]), "clip");
    EXPECT_DOUBLE_EQ(num(p, "alignment_ceiling", 0), 0.3);  // mean of 0.2 and 0.4
    EXPECT_DOUBLE_EQ(num(p, "alignment_ceiling_max", 0), 0.4);
    EXPECT_DOUBLE_EQ(num(p, "merging_ceiling", 1), 0.6);
    EXPECT_TRUE(std::isnan(num(p, "alignment_ceiling", 1)));
    EXPECT_EQ(num(p, "merging_rank", 1), 1.0);
    EXPECT_EQ(num(p, "alignment_rank", 1), 0.0);  // no alignment ceiling: no rank
    // An alignment grid without paradigm columns is refused, naming the key.
    const GroupColumns bare = {{"merge_grid", merge.columns}, {"align_grid", {f64("ease")}}};
    const std::string why = check_error(s, merge, bare);
    EXPECT_NE(why.find("alignment_grid"), std::string::npos) << why;
}

TEST(Analyses, KindsNeedingStudyColumnsRefuseAPlainGroup) {
    // A group with one number column is not a similarity grid, a merge grid or a subset
    // table: each study kind says which column it misses.
    const Table t("work", {.numbers = {{"v", {1, 2}}}});
    const GroupColumns all = {{"work", t.columns}};
    for (const auto& [kind, yaml] : std::vector<std::pair<std::string, std::string>>{
             {"compass", "{input: work, grid: work, targets: [v]}"},
             {"encoder_roles", "{input: work}"},
             {"prism", "{input: work}"},
             {"screening", "{input: work, scores: [v], label: destructive}"}}) {
        const std::string why = check_error(spec_of(kind, yaml), t, all);
        EXPECT_FALSE(why.empty()) << kind << " accepted a group without its columns";
    }
}

TEST(Analyses, ScreeningCountsAtAThresholdGivenInAdvance) {
    // Scores 1..6 (e-3), destructive where 4, 5, 6: at 3.5e-3 all right; at 1.9e-3 two
    // harmless merges flagged.
    const Table t("work", {.numbers = {{"screen_score", {1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3}},
                                       {"destructive", {0, 0, 0, 1, 1, 1}}},
                           .texts = {{"members", {"a", "b", "c", "d", "e", "f"}}}});
    const AnalysisSpec s = spec_of("screening",
                                   "{input: work, scores: [screen_score], label: destructive, "
                                   "split_by: members, thresholds: {screen_score: 1.9e-3}}");
    EXPECT_EQ(check_error(s, t, {}), "");
    const auto tables = kind_of(s).run(s, t.input(), kNote);
    ASSERT_EQ(tables.size(), 3u);
    const TableData& fixed = tables[2];
    EXPECT_EQ(fixed.path, "screening_fixed");
    ASSERT_EQ(fixed.rows(), 1u);
    EXPECT_DOUBLE_EQ(num(fixed, "threshold", 0), 1.9e-3);
    EXPECT_EQ(num(fixed, "n", 0), 6.0);
    EXPECT_EQ(num(fixed, "positives", 0), 3.0);
    EXPECT_EQ(num(fixed, "tp", 0), 3.0);
    EXPECT_EQ(num(fixed, "fp", 0), 2.0);  // 2e-3 and 3e-3 > 1.9e-3
    EXPECT_EQ(num(fixed, "tn", 0), 1.0);
    EXPECT_EQ(num(fixed, "fn", 0), 0.0);
    const std::string why =
        check_error(spec_of("screening",
                            "{input: work, scores: [screen_score], label: destructive, "
                            "split_by: members, thresholds: {rho: 0.5}}"),
                    t, {});
    EXPECT_NE(why.find("thresholds.rho"), std::string::npos) << why;
}

// Text column `name` of `t`, row `row`.
std::string text(const TableData& t, const std::string& name, std::size_t row) {
    return std::get<std::string>(column(t, name).at(row));
}

TEST(Inference, ClaimsAreRefusedWithoutTheirBandOrClusters) {
    const Table t("work", {.numbers = {{"x", {1, 2, 3, 4}}, {"y", {1, 3, 2, 5}}},
                           .texts = {{"model", {"a", "b", "c", "d"}}}});
    const auto why = [&](const std::string& extra) {
        return check_error(spec_of("correlation", "{input: work, x: x, y: y, " + extra + "}"), t,
                           {});
    };
    EXPECT_EQ(why("clusters: [model], claims: [{name: c, statistic: pearson, x: x, y: y, "
                  "paper: p, band: [0.8, 1.0]}]"),
              "");
    const std::string no_band =
        why("clusters: [model], claims: [{name: c, statistic: pearson, x: x, y: y, paper: p}]");
    EXPECT_NE(no_band.find("claims[0].band"), std::string::npos) << no_band;
    const std::string no_clusters =
        why("claims: [{name: c, statistic: pearson, x: x, y: y, paper: p, at_least: 0}]");
    EXPECT_NE(no_clusters.find(".clusters"), std::string::npos) << no_clusters;
    const std::string missing = why("clusters: [encoder]");
    EXPECT_NE(missing.find("clusters[0]"), std::string::npos) << missing;
    EXPECT_NE(missing.find("encoder"), std::string::npos) << missing;
    const std::string nested = why("clusters: [{columns: [model], within: family}]");
    EXPECT_NE(nested.find("clusters[0].within"), std::string::npos) << nested;
    const std::string twice =
        why("clusters: [model], claims: [{name: c, statistic: mean, x: x, paper: p, at_least: 0}, "
            "{name: c, statistic: mean, x: y, paper: p, at_least: 0}]");
    EXPECT_NE(twice.find("duplicate claim"), std::string::npos) << twice;
}

TEST(Inference, ATooSmallStudyIsInconclusiveNeverAgrees) {
    // Four rows, r = 0.83: the interval is far wider than the band around the paper's 0.90.
    const Table t("work",
                  {.numbers = {{"x", {1, 2, 3, 4}}, {"y", {1, 3, 2, 5}}},
                   .texts = {{"model", {"a", "b", "c", "d"}}, {"one", {"z", "z", "z", "z"}}}});
    const AnalysisSpec s =
        spec_of("correlation",
                "{input: work, x: x, y: y, clusters: [model], draws: 300, claims: [{name: big, "
                "statistic: pearson, x: x, y: y, paper: 'r = 0.90', band: [0.80, 1.00]}]}");
    ASSERT_EQ(check_error(s, t, {}), "");
    const auto tables = kind_of(s).run(s, t.input(), kNote);
    ASSERT_EQ(tables.size(), 2u);
    const TableData& corr = tables[0];
    EXPECT_LT(num(corr, "pearson_cl_lo", 0), 0.8);
    EXPECT_LT(num(corr, "pearson_naive_lo", 0), num(corr, "pearson_naive_hi", 0));
    EXPECT_EQ(text(corr, "clusters", 0), "model");
    const TableData& claims = tables[1];
    EXPECT_EQ(claims.path, "correlations_claims");
    EXPECT_NEAR(num(claims, "value", 0), 0.8315218406202999, 1e-12);  // numpy.corrcoef
    EXPECT_EQ(text(claims, "verdict", 0), "inconclusive");
    EXPECT_DOUBLE_EQ(num(claims, "band_lo", 0), 0.8);
    // One model for every row: no clustered interval, and the reason says why.
    const AnalysisSpec one = spec_of("correlation", "{input: work, x: x, y: y, clusters: [one]}");
    const auto again = kind_of(one).run(one, t.input(), kNote);
    EXPECT_TRUE(std::isnan(num(again[0], "pearson_cl_lo", 0)));
    EXPECT_NE(text(again[0], "interval_reason", 0).find("fewer than two clusters"),
              std::string::npos);
}

TEST(Inference, ScreeningSaysWhyAnAurocIsUndefinedAndComparesWithItsBaseline) {
    const Table t(
        "work", {.numbers = {{"screen_score", {1, 2, 3, 4, 5, 6, 7, 8}},
                             {"norm", {2, 1, 4, 3, 6, 5, 8, 7}},
                             {"destructive", {0, 0, 0, 0, 0, 1, 1, 1}},
                             {"harmless", {0, 0, 0, 0, 0, 0, 0, 0}},
                             {"k", {2, 2, 2, 2, 4, 4, 4, 4}}},
                 .texts = {{"members", {"a,b", "a,c", "b,c", "c,d", "a,d", "b,d", "a,e", "d,e"}}}});
    const AnalysisSpec s =
        spec_of("screening",
                "{input: work, scores: [screen_score], label: destructive, split_by: members, "
                "clusters: [{columns: [members], split: ','}], draws: 200, within: [k], "
                "baselines: {screen_score: [norm]}}");
    ASSERT_EQ(check_error(s, t, {}), "");
    const auto tables = kind_of(s).run(s, t.input(), kNote);
    ASSERT_EQ(tables.size(), 4u);  // screening, preregistered, within, baselines
    EXPECT_DOUBLE_EQ(num(tables[0], "auroc", 0), 1.0);
    EXPECT_EQ(text(tables[0], "clusters", 0), "members");
    const TableData& within = tables[2];
    EXPECT_EQ(within.path, "screening_within");
    ASSERT_EQ(within.rows(), 2u);  // k = 2: no destructive merge; k = 4: both kinds
    EXPECT_TRUE(std::isnan(num(within, "auroc", 0)));
    EXPECT_NE(text(within, "reason", 0).find("no destructive merge"), std::string::npos);
    EXPECT_DOUBLE_EQ(num(within, "auroc", 1), 1.0);
    const TableData& base = tables[3];
    EXPECT_EQ(text(base, "baseline", 0), "norm");
    EXPECT_DOUBLE_EQ(num(base, "value", 0), 1.0);
    EXPECT_NEAR(num(base, "difference", 0), 1.0 - num(base, "baseline_value", 0), 1e-12);
    const AnalysisSpec none = spec_of(
        "screening", "{input: work, scores: [screen_score], label: harmless, split_by: members}");
    const auto undefined = kind_of(none).run(none, t.input(), kNote);
    EXPECT_TRUE(std::isnan(num(undefined[0], "auroc", 0)));
    EXPECT_EQ(text(undefined[0], "reason", 0), "no destructive merge among 8");
}

TEST(Inference, ScreeningJoinsAValuePerMemberFromAnotherGroup) {
    const Table ft("ft", {.numbers = {{"relative_norm", {0.1, 0.2, 0.3, 0.5}}},
                          .texts = {{"name", {"bb+a", "bb+b", "bb+c", "bb+d"}}}});
    const Table t("work",
                  {.numbers = {{"screen_score", {1, 2, 3, 4}}, {"destructive", {0, 0, 1, 1}}},
                   .texts = {{"backbone", {"bb", "bb", "bb", "bb"}},
                             {"members", {"a,b", "a,c", "b,d", "c,d"}}}});
    const AnalysisSpec s = spec_of(
        "screening",
        "{input: work, scores: [screen_score], label: destructive, split_by: members, "
        "member_values: {group: ft, column: relative_norm, as: rel_norm, "
        "name: '{backbone}+{member}'}, clusters: [{columns: [members], split: ','}], draws: 50, "
        "claims: [{name: norm, statistic: mean, x: rel_norm, paper: p, at_least: 0}]}");
    EXPECT_EQ(kind_of(s).extra_inputs(s), std::vector<std::string>{"ft"});
    const GroupColumns all = {{"work", t.columns}, {"ft", ft.columns}};
    ASSERT_EQ(check_error(s, t, all), "");
    AnalysisInput in = t.input();
    in.others.push_back(ft.input());
    const auto tables = kind_of(s).run(s, in, kNote);
    const TableData& claims = tables.back();
    ASSERT_EQ(claims.path, "screening_claims");
    // Member means 0.15, 0.2, 0.35, 0.4: their mean 0.275.
    EXPECT_NEAR(num(claims, "value", 0), 0.275, 1e-12);
    const std::string why = check_error(
        spec_of("screening",
                "{input: work, scores: [screen_score], label: destructive, split_by: members, "
                "member_values: {group: ft, column: norm, as: n, name: '{member}'}}"),
        t, all);
    EXPECT_NE(why.find("member_values"), std::string::npos) << why;
    EXPECT_NE(why.find("'norm'"), std::string::npos) << why;
}
