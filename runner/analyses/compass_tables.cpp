#include "analyses/compass_tables.h"

namespace compatbench {

std::string ease_column(int k) {
    std::string s = "ease_k";
    s += std::to_string(k);
    return s;
}

namespace {

std::int64_t count(std::size_t n) { return static_cast<std::int64_t>(n); }

void add(TableData& t, const std::string& name, const std::vector<double>& v) {
    t.add_column({name, ColumnType::f64, 0});
    for (double e : v) t.values.back().emplace_back(e);
}

// The columns naming the grid pairs `rows`.
void add_pair_columns(TableData& t, const PairColumns& pairs,
                      const std::vector<std::size_t>& rows) {
    for (const auto& [name, v] : pairs) {
        t.add_column(str(name));
        for (std::size_t r : rows) t.values.back().emplace_back(v[r]);
    }
}

TableData grid_table(const CompassTables& c, const compass::StudyInput& in,
                     const compass::Scored& g) {
    TableData t = TableData::make(c.study + "/grid", {});
    t.print = false;
    std::vector<std::size_t> every(in.grid.size());
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
    add_pair_columns(t, c.pair_columns, every);
    add(t, "ease", g.ease);
    for (const auto& [k, ease] : in.grid.ease_at_k) add(t, ease_column(k), ease);
    add(t, "cka", g.cka);
    add(t, "ceiling", g.ceiling);
    add(t, "score", g.score);
    return t;
}

// The evaluated pairs with their predictors, region and every other input column.
TableData pairs_table(const CompassTables& c, const compass::StudyInput& in,
                      const compass::StudyResult& r) {
    TableData t = TableData::make(c.study + "/pairs", {});
    t.print = false;
    add_pair_columns(t, c.pair_columns, in.evaluated);
    add(t, "ease", r.evaluated.ease);
    add(t, "ceiling", r.evaluated.ceiling);
    add(t, "score", r.evaluated.score);
    add(t, "cka", r.evaluated.cka);
    for (const auto& [name, v] : r.evaluated_variants) add(t, name, v);
    t.add_column(str("region"));
    for (const auto& region : r.regions) t.values.back().emplace_back(region);
    for (std::size_t k = 0; k < c.input.columns.size(); ++k) {
        if (c.not_repeated.count(c.input.columns[k].name)) continue;
        t.add_column(c.input.columns[k]);
        for (const Row* row : c.input.rows) t.values.back().push_back((*row)[k]);
    }
    return t;
}

TableData ceilings_table(const compass::StudyResult& r) {
    TableData t = TableData::make(
        "ceilings", {str("paradigm_a"), str("paradigm_b"), i64("pairs"), f64("ceiling")});
    for (const auto& c : r.ceilings)
        t.add_row({c.paradigms.first, c.paradigms.second, c.pairs, c.ceiling});
    return t;
}

TableData correlations_table(const compass::StudyResult& r, const AnalysisNote& note) {
    TableData t = TableData::make("correlations",
                                  {str("predictor"), str("target"), i64("n"), f64("pearson_r"),
                                   f64("pearson_p"), f64("pearson_ci_low"), f64("pearson_ci_high"),
                                   f64("spearman_rho"), f64("spearman_p"), str("reason")});
    for (const auto& [key, p, target, c] : r.correlations) {
        if (!c.reason().empty()) note(p + " vs " + target + ": " + c.reason());
        t.add_row({p, target, count(c.n), c.pearson.r, c.pearson.p, c.pearson.ci_low,
                   c.pearson.ci_high, c.spearman.r, c.spearman.p, c.reason()});
    }
    return t;
}

TableData regions_table(const compass::StudyResult& r) {
    TableData t = TableData::make("regions",
                                  {str("region"), str("target"), i64("n"), f64("mean"), f64("sd")});
    for (const auto& g : r.region_stats) t.add_row({g.region, g.target, g.n, g.mean, g.sd});
    return t;
}

TableData kruskal_table(const compass::StudyResult& r, const AnalysisNote& note) {
    TableData t = TableData::make(
        "kruskal", {str("target"), i64("groups"), i64("n"), f64("h"), f64("p"), str("reason")});
    for (const auto& [target, kw] : r.kruskal) {
        if (!kw.ok()) note("kruskal " + target + ": " + kw.reason);
        t.add_row({target, count(kw.groups), count(kw.n), kw.h, kw.p, kw.reason});
    }
    return t;
}

std::vector<TableData> search_tables(const compass::StudyResult& r) {
    TableData s = TableData::make("budget_search",
                                  {str("target"), str("predictor"), i64("n"), i64("best_position"),
                                   f64("best_value"), f64("top5_best")});
    TableData c = TableData::make("budget_curve",
                                  {str("target"), str("predictor"), i64("m"), f64("best_so_far")});
    c.print = false;
    for (const auto& row : r.budget_search) {
        s.add_row(
            {row.target, row.predictor, row.n, row.best_position, row.best_value, row.top5_best});
        for (std::size_t m = 0; m < row.curve.size(); ++m)
            c.add_row({row.target, row.predictor, count(m + 1), row.curve[m]});
    }
    return {std::move(s), std::move(c)};
}

// A table of correlations keyed by `key`: key, predictor, target, n, Pearson r and p,
// Spearman rho and p.
template <class Key>
TableData keyed_table(const char* path, ColumnSpec key,
                      const std::vector<compass::Correlation<Key>>& rows, bool print) {
    TableData t = TableData::make(
        path, {std::move(key), str("predictor"), str("target"), i64("n"), f64("pearson_r"),
               f64("pearson_p"), f64("spearman_rho"), f64("spearman_p")});
    t.print = print;
    for (const auto& [k, p, target, c] : rows)
        t.add_row({k, p, target, count(c.n), c.pearson.r, c.pearson.p, c.spearman.r, c.spearman.p});
    return t;
}

TableData lofo_range_table(const compass::StudyResult& r) {
    TableData t = TableData::make(
        "lofo_range", {str("predictor"), str("target"), i64("folds"), f64("pearson_min"),
                       f64("pearson_max"), f64("spearman_min"), f64("spearman_max")});
    for (const auto& g : r.lofo_range)
        t.add_row({g.predictor, g.target, g.folds, g.pearson_min, g.pearson_max, g.spearman_min,
                   g.spearman_max});
    return t;
}

TableData metadata_table(const compass::StudyResult& r) {
    TableData t =
        TableData::make("metadata_regressor", {str("scheme"), str("target"), i64("n"),
                                               f64("pearson_r"), f64("spearman_rho"), f64("rmse")});
    for (const auto& m : r.metadata_regressor)
        t.add_row({m.scheme, m.target, count(m.c.n), m.c.pearson.r, m.c.spearman.r, m.rmse});
    return t;
}

}  // namespace

std::vector<TableData> compass_tables(const CompassTables& c, const compass::StudyInput& in,
                                      const compass::StudyResult& r, const AnalysisNote& note) {
    std::vector<TableData> out;
    out.push_back(grid_table(c, in, r.grid));
    out.push_back(ceilings_table(r));
    out.push_back(pairs_table(c, in, r));
    out.push_back(correlations_table(r, note));
    out.push_back(regions_table(r));
    out.push_back(kruskal_table(r, note));
    for (auto& t : search_tables(r)) out.push_back(std::move(t));
    out.push_back(keyed_table("lofo", str("held_out"), r.lofo, false));
    out.push_back(lofo_range_table(r));
    if (!in.grid.within.empty())
        out.push_back(keyed_table("within", str("group"), r.within, false));
    out.push_back(keyed_table("k_sensitivity", i64("k"), r.k_sensitivity, true));
    out.push_back(metadata_table(r));
    if (in.budgets) out.push_back(keyed_table("budget", i64("epochs"), r.budgets, true));
    return out;
}

}  // namespace compatbench
