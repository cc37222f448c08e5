// Analysis `paradigm_table`: each paradigm's ceiling for alignment beside its ceiling for
// merging (methods.md §1.2; COMPASS's paradigm table), from the two similarity grids.
//   alignment: ceiling(P, Q) over vision paradigm P x text paradigm Q; a vision paradigm's
//              alignment ceiling is the mean (and the max) over the text paradigms;
//   merging:   ceiling(P, P) over pairs of fine-tunes of backbones of paradigm P.
// Ranks are 1 for the highest ceiling. Paradigms in only one grid get NaN for the other.
//
//   - {name: paradigms, kind: paradigm_table, study: merging, input: merge_grid,
//      alignment_grid: align_grid}
#include <algorithm>

#include "analyses/analysis_kind.h"
#include "compass/compass.h"
#include "config/config.h"

namespace compatbench {

namespace {

class ParadigmTableAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "paradigm_table"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "alignment_grid", .type = KeyType::string, .required = true},
                {.name = "ceiling", .type = KeyType::string},
                {.name = "table", .type = KeyType::string}};
    }
    std::vector<std::string> extra_inputs(const AnalysisSpec& spec) const override {
        return {spec.node["alignment_grid"].Scalar()};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& input,
               const GroupColumns& groups, const YamlChecker& yc) const override {
        const std::string base = "analyses." + spec.name;
        const auto has = [](const std::vector<ColumnSpec>& cols, const char* name) {
            return std::any_of(cols.begin(), cols.end(),
                               [&](const ColumnSpec& c) { return c.name == name; });
        };
        for (const char* c : {"paradigm", "ease"})
            if (!has(input, c))
                yc.fail(spec.node["input"], base + ".input",
                        "group '" + spec.input + "' has no column '" + c + "' (pairs: same_base)");
        const auto& a = groups.at(spec.node["alignment_grid"].Scalar());
        for (const char* c : {"vision_paradigm", "text_paradigm", "ease"})
            if (!has(a, c))
                yc.fail(spec.node["alignment_grid"], base + ".alignment_grid",
                        std::string("the group has no column '") + c + "' (pairs: vision_text)");
        if (spec.node["ceiling"]) {
            try {
                compass::CeilingStat::parse(spec.node["ceiling"].Scalar());
            } catch (const std::exception& e) {
                yc.fail(spec.node["ceiling"], base + ".ceiling", e.what());
            }
        }
    }
    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote&) const override {
        const auto stat = compass::CeilingStat::parse(
            spec.node["ceiling"] ? spec.node["ceiling"].Scalar() : "max");
        const AnalysisInput& align = input.other(spec.node["alignment_grid"].Scalar());
        std::vector<compass::GridPair> ag, mg;
        {
            const auto pv = align.texts("vision_paradigm"), pt = align.texts("text_paradigm");
            const auto e = align.numbers("ease");
            for (std::size_t i = 0; i < e.size(); ++i) ag.push_back({pv[i], pt[i], e[i]});
            const auto pm = input.texts("paradigm");
            const auto em = input.numbers("ease");
            for (std::size_t i = 0; i < em.size(); ++i) mg.push_back({pm[i], pm[i], em[i]});
        }
        const compass::ParadigmTable p = compass::paradigm_table(ag, mg, stat);
        TableData t;
        t.path = spec.node["table"] ? spec.node["table"].Scalar() : "paradigms";
        t.add_column({"paradigm", ColumnType::str, 0});
        t.add_column({"alignment_ceiling", ColumnType::f64, 0});
        t.add_column({"alignment_ceiling_max", ColumnType::f64, 0});
        t.add_column({"merging_ceiling", ColumnType::f64, 0});
        t.add_column({"alignment_rank", ColumnType::i64, 0});
        t.add_column({"merging_rank", ColumnType::i64, 0});
        for (std::size_t i = 0; i < p.paradigm.size(); ++i) {
            const Value row[] = {p.paradigm[i], p.alignment_mean[i], p.alignment_max[i],
                                 p.merging[i],  p.alignment_rank[i], p.merging_rank[i]};
            for (std::size_t c = 0; c < t.columns.size(); ++c) t.values[c].push_back(row[c]);
        }
        return {t};
    }
};
}  // namespace

const AnalysisKind& paradigm_table_analysis() {
    static const ParadigmTableAnalysis kind;
    return kind;
}

}  // namespace compatbench
