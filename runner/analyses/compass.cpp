// Analysis `compass`: the COMPASS study tables (methods.md §1.2, §1.3, §5, §6) from the
// similarity grid (every valid pair: ease at each k, CKA) and the evaluated pairs (their
// ground-truth targets):
//   /<study>/grid, /<study>/pairs                  every grid pair; the evaluated pairs with
//                                                  ease, ceiling, score, CKA, region, targets
//   /<study>/analysis/correlations                 predictor x target: Pearson, Spearman
//   /<study>/analysis/regions, kruskal             per region n, mean, sd; Kruskal-Wallis
//   /<study>/analysis/budget_search, budget_curve  where the best pair appears by predictor
//   /<study>/analysis/lofo, lofo_range             leave one family out (ceiling recomputed)
//   /<study>/analysis/k_sensitivity                the table for every k of the grid
//   /<study>/analysis/metadata_regressor           ridge on family/paradigm one-hots
//   /<study>/analysis/budget                       (with `budget:`) ceiling vs the target
//                                                  of a trained adapter at each budget
//   /meta/<study>/cost                             predictor vs ground-truth seconds (run
//                                                  facts: left out of `compare`)
//
//   - {name: alignment, kind: compass, study: alignment, input: align_pairs,
//      grid: align_grid, targets: [r1_flickr, r1_coco], budget: align_budget,
//      predictor_cost: [align_knn, align_grid], truth_cost: [align_pairs]}
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyses/analysis_kind.h"
#include "compass/compass.h"
#include "config/config.h"
#include "stats/correlation.h"
#include "stats/kruskal.h"

namespace compatbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kPredictors[] = {"score", "ease", "ceiling", "cka"};

struct Builder {
    TableData t;
    Builder(std::string path, std::initializer_list<std::pair<const char*, ColumnType>> cols,
            bool print = true) {
        t.path = std::move(path);
        t.print = print;
        for (const auto& [name, type] : cols) t.add_column({name, type, 0});
    }
    void row(std::initializer_list<Value> values) {
        std::size_t c = 0;
        for (const auto& v : values) t.values[c++].push_back(v);
    }
};

// The columns and values of one correlation (after the table's key columns): n, Pearson r
// and p, Spearman rho and p.
const std::initializer_list<std::pair<const char*, ColumnType>> kCorrColumns = {
    {"n", ColumnType::i64},
    {"pearson_r", ColumnType::f64},
    {"pearson_p", ColumnType::f64},
    {"spearman_rho", ColumnType::f64},
    {"spearman_p", ColumnType::f64}};

// A table keyed by `keys` (key, predictor, target) followed by the correlation columns.
Builder correlation_builder(std::string path, const char* key, bool print = true) {
    Builder b(std::move(path),
              {{key, ColumnType::str}, {"predictor", ColumnType::str}, {"target", ColumnType::str}},
              print);
    for (const auto& [name, type] : kCorrColumns) b.t.add_column({name, type, 0});
    return b;
}

// Key names of the spec with defaults.
struct Names {
    std::string grid, budget;
    std::vector<std::string> members, families, paradigms, targets, predictor_cost, truth_cost;
    std::vector<std::string> extra_predictors;  // input columns used as further predictors
    std::vector<std::string> lofo;              // grid columns whose values are held out
    std::string ceiling = "max";
    std::vector<int> ks;  // empty: every ease_k column of the grid
    int folds = 5;
    double alpha = 1.0;
    std::uint64_t seed = 1;
};

std::vector<std::string> strings(const YAML::Node& n, std::vector<std::string> fallback) {
    if (!n) return fallback;
    std::vector<std::string> out;
    if (n.IsSequence()) {
        for (const auto& e : n) out.push_back(e.Scalar());
    } else {
        out.push_back(n.Scalar());
    }
    return out;
}

Names names_of(const AnalysisSpec& spec) {
    const YAML::Node& n = spec.node;
    Names x;
    x.grid = n["grid"].Scalar();
    x.budget = n["budget"] ? n["budget"].Scalar() : "";
    x.members = strings(n["members"], {"vision", "text"});
    x.families = strings(n["families"], {"vision_family", "text_family"});
    x.paradigms = strings(n["paradigms"], {"vision_paradigm", "text_paradigm"});
    x.targets = strings(n["targets"], {});
    x.predictor_cost = strings(n["predictor_cost"], {});
    x.truth_cost = strings(n["truth_cost"], {});
    x.extra_predictors = strings(n["extra_predictors"], {});
    x.lofo = strings(n["lofo"], x.families);
    x.lofo.erase(std::unique(x.lofo.begin(), x.lofo.end()), x.lofo.end());
    if (n["ceiling"]) x.ceiling = n["ceiling"].Scalar();
    if (n["k"])
        for (const auto& s : strings(n["k"], {})) x.ks.push_back(std::stoi(s));
    if (n["folds"]) x.folds = n["folds"].as<int>();
    if (n["ridge_alpha"]) x.alpha = n["ridge_alpha"].as<double>();
    if (n["seed"]) x.seed = n["seed"].as<std::uint64_t>();
    return x;
}

std::string ease_column(int k) {
    std::string s = "ease_k";
    s += std::to_string(k);
    return s;
}

// The pairs of one table: members, families, paradigms.
struct Pairs {
    std::vector<std::string> a, b, fa, fb, pa, pb;
    std::size_t size() const { return a.size(); }
    std::string key(std::size_t i) const { return a[i] + '\x1f' + b[i]; }
};

Pairs pairs_of(const AnalysisInput& in, const Names& x) {
    Pairs p;
    p.a = in.texts(x.members[0]);
    p.b = in.texts(x.members[1]);
    if (in.find(x.families[0]) >= 0) {
        p.fa = in.texts(x.families[0]);
        p.fb = in.texts(x.families[1]);
        p.pa = in.texts(x.paradigms[0]);
        p.pb = in.texts(x.paradigms[1]);
    }
    return p;
}

// ease, ceiling, score of the evaluated pairs from the grid rows kept by `keep`.
struct Scored {
    std::vector<double> ease, ceiling, score, cka;
};

Scored score_pairs(const Pairs& grid, const std::vector<double>& grid_ease,
                   const std::vector<double>& grid_cka, const std::vector<bool>& keep,
                   const std::vector<std::size_t>& eval_rows, const compass::CeilingStat& stat) {
    std::vector<compass::GridPair> g;
    for (std::size_t i = 0; i < grid.size(); ++i)
        if (keep[i]) g.push_back({grid.pa[i], grid.pb[i], grid_ease[i]});
    const auto ceil = compass::ceilings(g, stat);
    Scored s;
    for (std::size_t r : eval_rows) {
        const auto it = ceil.find({grid.pa[r], grid.pb[r]});
        const double c = it == ceil.end() ? kNaN : it->second;
        s.ease.push_back(grid_ease[r]);
        s.ceiling.push_back(c);
        s.score.push_back(grid_ease[r] * c);
        s.cka.push_back(grid_cka[r]);
    }
    return s;
}

const std::vector<double>& predictor(const Scored& s, const std::string& name) {
    if (name == "score") return s.score;
    if (name == "ease") return s.ease;
    if (name == "ceiling") return s.ceiling;
    return s.cka;
}

// Pearson and Spearman of x vs y over the rows where both are finite.
struct Corr {
    stats::CorrelationResult pearson, spearman;
    std::size_t n = 0;
};
Corr correlate(const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> a, b;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i])) continue;
        a.push_back(x[i]);
        b.push_back(y[i]);
    }
    return {stats::pearson(a, b), stats::spearman(a, b), a.size()};
}

std::vector<double> pick(const std::vector<double>& v, const std::vector<std::size_t>& rows) {
    std::vector<double> out;
    out.reserve(rows.size());
    for (std::size_t r : rows) out.push_back(v[r]);
    return out;
}

double sum(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x;
    return s;
}

class CompassAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "compass"; }
    std::vector<KeyRule> keys() const override {
        return {{"grid", KeyType::string, true, 0, 0, {}},
                {"targets", KeyType::scalar_or_list, true, 0, 0, {}},
                {"members", KeyType::list, false, 0, 0, {}},
                {"families", KeyType::list, false, 0, 0, {}},
                {"paradigms", KeyType::list, false, 0, 0, {}},
                {"ceiling", KeyType::string, false, 0, 0, {}},
                {"k", KeyType::scalar_or_list, false, 0, 0, {}},
                {"budget", KeyType::string, false, 0, 0, {}},
                {"folds", KeyType::integer, false, 2, 1000, {}},
                {"ridge_alpha", KeyType::real, false, 0, 1e12, {}},
                {"seed", KeyType::integer, false, 0, 9e18, {}},
                {"predictor_cost", KeyType::scalar_or_list, false, 0, 0, {}},
                {"truth_cost", KeyType::scalar_or_list, false, 0, 0, {}},
                {"extra_predictors", KeyType::scalar_or_list, false, 0, 0, {}},
                {"lofo", KeyType::scalar_or_list, false, 0, 0, {}}};
    }

    std::vector<std::string> extra_inputs(const AnalysisSpec& spec) const override {
        const Names x = names_of(spec);
        std::vector<std::string> out = {x.grid};
        if (!x.budget.empty()) out.push_back(x.budget);
        for (const auto& v : {x.predictor_cost, x.truth_cost})
            for (const auto& g : v) out.push_back(g);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        std::erase(out, spec.input);
        return out;
    }

    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& input,
               const GroupColumns& groups, const YamlChecker& yc) const override {
        const std::string base = "analyses." + spec.name;
        for (const char* key : {"members", "families", "paradigms"}) {
            if (spec.node[key] && spec.node[key].size() != 2)
                yc.fail(spec.node[key], base + "." + key, "expected a list of two column names");
        }
        Names x;
        try {
            x = names_of(spec);
            compass::CeilingStat::parse(x.ceiling);
        } catch (const std::exception& e) {
            yc.fail(spec.node, base, e.what());
        }
        const auto need = [&](const std::vector<ColumnSpec>& cols, const std::string& col,
                              const std::string& group, const char* key, bool numeric) {
            for (const auto& c : cols) {
                if (c.name != col) continue;
                if (numeric && c.type == ColumnType::str)
                    yc.fail(spec.node[key], base + "." + key,
                            "column '" + col + "' of group '" + group + "' is not numeric");
                return;
            }
            yc.fail(spec.node[key] ? spec.node[key] : spec.node, base + "." + key,
                    "group '" + group + "' has no column '" + col + "'");
        };
        for (const auto& m : x.members) need(input, m, spec.input, "members", false);
        for (const auto& t : x.targets) need(input, t, spec.input, "targets", true);
        for (const auto& p : x.extra_predictors)
            need(input, p, spec.input, "extra_predictors", true);
        for (const auto& g : extra_inputs(spec)) {
            if (!groups.count(g)) yc.fail(spec.node, base, "no task group named '" + g + "'");
        }
        const auto& grid = groups.at(x.grid);
        for (const auto& v : {x.members, x.families, x.paradigms})
            for (const auto& c : v) need(grid, c, x.grid, "grid", false);
        for (const char* c : {"ease", "cka"}) need(grid, c, x.grid, "grid", true);
        for (const auto& c : x.lofo) need(grid, c, x.grid, "lofo", false);
        for (int k : x.ks) need(grid, ease_column(k), x.grid, "k", true);
        if (!x.budget.empty()) {
            const auto& b = groups.at(x.budget);
            for (const auto& c : x.members) need(b, c, x.budget, "budget", false);
            need(b, "epochs", x.budget, "budget", true);
            for (const auto& t : x.targets) need(b, t, x.budget, "budget", true);
        }
    }

    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const Names x = names_of(spec);
        const auto stat = compass::CeilingStat::parse(x.ceiling);
        const AnalysisInput& gin = input.other(x.grid);
        const Pairs grid = pairs_of(gin, x);
        const Pairs eval = pairs_of(input, x);
        const auto grid_ease = gin.numbers("ease");
        const auto grid_cka = gin.numbers("cka");
        std::vector<int> ks = x.ks;
        if (ks.empty()) {
            for (const auto& c : gin.columns)
                if (c.name.rfind("ease_k", 0) == 0) ks.push_back(std::stoi(c.name.substr(6)));
        }
        // Evaluated pair -> grid row.
        std::map<std::string, std::size_t> grid_row;
        for (std::size_t i = 0; i < grid.size(); ++i) grid_row[grid.key(i)] = i;
        std::vector<std::size_t> eval_rows;
        for (std::size_t i = 0; i < eval.size(); ++i) {
            const auto it = grid_row.find(eval.key(i));
            if (it == grid_row.end())
                throw std::invalid_argument("evaluated pair " + eval.a[i] + " + " + eval.b[i] +
                                            " is not in the grid '" + x.grid + "'");
            eval_rows.push_back(it->second);
        }
        std::map<std::string, std::vector<double>> targets;
        for (const auto& t : x.targets) targets[t] = input.numbers(t);

        const std::vector<bool> all(grid.size(), true);
        const Scored full = score_pairs(grid, grid_ease, grid_cka, all, eval_rows, stat);
        // The predictors of the correlation table and the budget search: COMPASS's and any
        // further input columns (e.g. the merges' interference screening score).
        std::vector<std::pair<std::string, std::vector<double>>> preds;
        for (const char* p : kPredictors) preds.emplace_back(p, predictor(full, p));
        for (const auto& p : x.extra_predictors) preds.emplace_back(p, input.numbers(p));
        std::vector<TableData> out;
        const std::string study = "/" + spec.study;

        // The grid with its ceilings.
        {
            std::vector<std::size_t> every(grid.size());
            for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
            const Scored g = score_pairs(grid, grid_ease, grid_cka, all, every, stat);
            TableData t;
            t.path = study + "/grid";
            t.print = false;
            add_pair_columns(t, x, grid, every);
            add(t, "ease", g.ease);
            for (int k : ks) add(t, ease_column(k), gin.numbers(ease_column(k)));
            add(t, "cka", g.cka);
            add(t, "ceiling", g.ceiling);
            add(t, "score", g.score);
            out.push_back(std::move(t));
        }
        // The ceiling of every paradigm pair (§1.2), with the pairs it is taken over.
        {
            std::vector<compass::GridPair> g;
            std::map<compass::ParadigmPair, std::int64_t> count;
            for (std::size_t i = 0; i < grid.size(); ++i) {
                g.push_back({grid.pa[i], grid.pb[i], grid_ease[i]});
                ++count[{grid.pa[i], grid.pb[i]}];
            }
            Builder b("ceilings", {{"paradigm_a", ColumnType::str},
                                   {"paradigm_b", ColumnType::str},
                                   {"pairs", ColumnType::i64},
                                   {"ceiling", ColumnType::f64}});
            for (const auto& [key, c] : compass::ceilings(g, stat))
                b.row({key.first, key.second, count[key], c});
            out.push_back(std::move(b.t));
        }
        const auto region = compass::regions(full.ease, full.ceiling);
        // The evaluated pairs.
        {
            TableData t;
            t.path = study + "/pairs";
            t.print = false;
            add_pair_columns(t, x, grid, eval_rows);
            add(t, "ease", full.ease);
            add(t, "ceiling", full.ceiling);
            add(t, "score", full.score);
            add(t, "cka", full.cka);
            t.add_column({"region", ColumnType::str, 0});
            for (const auto& r : region) t.values.back().emplace_back(r);
            const std::set<std::string> skip = {"task_id",      "seed",        x.members[0],
                                                x.members[1],   x.families[0], x.families[1],
                                                x.paradigms[0], x.paradigms[1]};
            for (std::size_t c = 0; c < input.columns.size(); ++c) {
                if (skip.count(input.columns[c].name)) continue;
                t.add_column(input.columns[c]);
                for (const Row* row : input.rows) t.values.back().push_back((*row)[c]);
            }
            out.push_back(std::move(t));
        }
        // Correlations (§6).
        {
            Builder b("correlations", {{"predictor", ColumnType::str},
                                       {"target", ColumnType::str},
                                       {"n", ColumnType::i64},
                                       {"pearson_r", ColumnType::f64},
                                       {"pearson_p", ColumnType::f64},
                                       {"pearson_ci_low", ColumnType::f64},
                                       {"pearson_ci_high", ColumnType::f64},
                                       {"spearman_rho", ColumnType::f64},
                                       {"spearman_p", ColumnType::f64},
                                       {"reason", ColumnType::str}});
            for (const auto& [p, pv] : preds) {
                for (const auto& [t, y] : targets) {
                    const Corr c = correlate(pv, y);
                    const std::string reason =
                        c.pearson.ok() ? c.spearman.reason : c.pearson.reason;
                    if (!reason.empty()) note(p + " vs " + t + ": " + reason);
                    b.row({p, t, static_cast<std::int64_t>(c.n), c.pearson.r, c.pearson.p,
                           c.pearson.ci_low, c.pearson.ci_high, c.spearman.r, c.spearman.p,
                           reason});
                }
            }
            out.push_back(std::move(b.t));
        }
        // Regions and Kruskal-Wallis.
        {
            Builder r("regions", {{"region", ColumnType::str},
                                  {"target", ColumnType::str},
                                  {"n", ColumnType::i64},
                                  {"mean", ColumnType::f64},
                                  {"sd", ColumnType::f64}});
            Builder k("kruskal", {{"target", ColumnType::str},
                                  {"groups", ColumnType::i64},
                                  {"n", ColumnType::i64},
                                  {"h", ColumnType::f64},
                                  {"p", ColumnType::f64},
                                  {"reason", ColumnType::str}});
            for (const auto& [t, y] : targets) {
                std::vector<std::vector<double>> groups;
                for (const char* name : compass::kRegionNames) {
                    std::vector<double> v;
                    for (std::size_t i = 0; i < y.size(); ++i)
                        if (region[i] == name && !std::isnan(y[i])) v.push_back(y[i]);
                    double mean = kNaN, sd = kNaN;
                    if (!v.empty()) {
                        mean = sum(v) / static_cast<double>(v.size());
                        if (v.size() > 1) {
                            double ss = 0.0;
                            for (double e : v) ss += (e - mean) * (e - mean);
                            sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
                        }
                    }
                    r.row({std::string(name), t, static_cast<std::int64_t>(v.size()), mean, sd});
                    groups.push_back(std::move(v));
                }
                const auto kw = stats::kruskal_wallis(groups);
                if (!kw.ok()) note("kruskal " + t + ": " + kw.reason);
                k.row({t, static_cast<std::int64_t>(kw.groups), static_cast<std::int64_t>(kw.n),
                       kw.h, kw.p, kw.reason});
            }
            out.push_back(std::move(r.t));
            out.push_back(std::move(k.t));
        }
        // Budget-limited search.
        {
            Builder s("budget_search", {{"target", ColumnType::str},
                                        {"predictor", ColumnType::str},
                                        {"n", ColumnType::i64},
                                        {"best_position", ColumnType::i64},
                                        {"best_value", ColumnType::f64},
                                        {"top5_best", ColumnType::f64}});
            Builder c("budget_curve",
                      {{"target", ColumnType::str},
                       {"predictor", ColumnType::str},
                       {"m", ColumnType::i64},
                       {"best_so_far", ColumnType::f64}},
                      false);
            for (const auto& [t, y] : targets) {
                for (const auto& [p, pv] : preds) {
                    const auto order = compass::rank_descending(pv);
                    const auto curve = compass::best_so_far(order, y);
                    const std::size_t pos = compass::best_position(order, y);
                    s.row(
                        {t, p, static_cast<std::int64_t>(y.size()), static_cast<std::int64_t>(pos),
                         curve.empty() ? kNaN : curve.back(),
                         curve.empty() ? kNaN : curve[std::min<std::size_t>(4, curve.size() - 1)]});
                    for (std::size_t m = 0; m < curve.size(); ++m)
                        c.row({t, p, static_cast<std::int64_t>(m + 1), curve[m]});
                }
            }
            out.push_back(std::move(s.t));
            out.push_back(std::move(c.t));
        }
        // Leave one family out: its pairs and its models leave the grid (ceiling) too.
        {
            Builder l = correlation_builder("lofo", "held_out", false);
            // Held-out groups: every value of every `lofo` grid column (default: the
            // families); the grid rows with it leave the ceiling and the evaluation.
            std::vector<std::pair<std::string, std::vector<bool>>> folds;
            for (const auto& col : x.lofo) {
                const auto values = gin.texts(col);
                for (const auto& v : std::set<std::string>(values.begin(), values.end())) {
                    std::vector<bool> keep(grid.size());
                    for (std::size_t i = 0; i < grid.size(); ++i) keep[i] = values[i] != v;
                    folds.emplace_back(x.lofo.size() > 1 ? col + "=" + v : v, std::move(keep));
                }
            }
            std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>>
                range;
            for (const auto& [f, keep] : folds) {
                std::vector<std::size_t> kept_eval, rows;
                for (std::size_t i = 0; i < eval_rows.size(); ++i) {
                    if (!keep[eval_rows[i]]) continue;
                    kept_eval.push_back(eval_rows[i]);
                    rows.push_back(i);
                }
                const Scored s = score_pairs(grid, grid_ease, grid_cka, keep, kept_eval, stat);
                for (const char* p : kPredictors) {
                    for (const auto& [t, y] : targets) {
                        const Corr c = correlate(predictor(s, p), pick(y, rows));
                        l.row({f, std::string(p), t, static_cast<std::int64_t>(c.n), c.pearson.r,
                               c.pearson.p, c.spearman.r, c.spearman.p});
                        range[{p, t}].emplace_back(c.pearson.r, c.spearman.r);
                    }
                }
            }
            Builder r("lofo_range", {{"predictor", ColumnType::str},
                                     {"target", ColumnType::str},
                                     {"folds", ColumnType::i64},
                                     {"pearson_min", ColumnType::f64},
                                     {"pearson_max", ColumnType::f64},
                                     {"spearman_min", ColumnType::f64},
                                     {"spearman_max", ColumnType::f64}});
            for (const char* p : kPredictors) {
                for (const auto& [t, y] : targets) {
                    const auto& v = range[{p, t}];
                    double pmin = kNaN, pmax = kNaN, smin = kNaN, smax = kNaN;
                    for (const auto& [pr, sr] : v) {
                        if (!std::isnan(pr)) {
                            pmin = std::isnan(pmin) ? pr : std::min(pmin, pr);
                            pmax = std::isnan(pmax) ? pr : std::max(pmax, pr);
                        }
                        if (!std::isnan(sr)) {
                            smin = std::isnan(smin) ? sr : std::min(smin, sr);
                            smax = std::isnan(smax) ? sr : std::max(smax, sr);
                        }
                    }
                    r.row({std::string(p), t, static_cast<std::int64_t>(v.size()), pmin, pmax, smin,
                           smax});
                }
            }
            out.push_back(std::move(l.t));
            out.push_back(std::move(r.t));
        }
        // k-sensitivity: ease, ceiling and score from the lists' first k entries.
        {
            Builder b = correlation_builder("k_sensitivity", "k");
            b.t.columns[0].type = ColumnType::i64;
            for (int k : ks) {
                const Scored s =
                    score_pairs(grid, gin.numbers(ease_column(k)), grid_cka, all, eval_rows, stat);
                for (const char* p : {"score", "ease", "ceiling"}) {
                    for (const auto& [t, y] : targets) {
                        const Corr c = correlate(predictor(s, p), y);
                        b.row({static_cast<std::int64_t>(k), std::string(p), t,
                               static_cast<std::int64_t>(c.n), c.pearson.r, c.pearson.p,
                               c.spearman.r, c.spearman.p});
                    }
                }
            }
            out.push_back(std::move(b.t));
        }
        // Metadata regressor baseline: ridge on family and paradigm one-hots.
        {
            Builder b("metadata_regressor", {{"scheme", ColumnType::str},
                                             {"target", ColumnType::str},
                                             {"n", ColumnType::i64},
                                             {"pearson_r", ColumnType::f64},
                                             {"spearman_rho", ColumnType::f64},
                                             {"rmse", ColumnType::f64}});
            // One-hots of the family and paradigm columns (each named once), and the same
            // held-out groups as LOFO.
            std::vector<std::vector<std::string>> features(eval_rows.size()),
                groups(eval_rows.size());
            std::set<std::string> seen;
            for (const auto& [col, values] :
                 {std::pair<std::string, const std::vector<std::string>*>{x.families[0], &grid.fa},
                  {x.families[1], &grid.fb},
                  {x.paradigms[0], &grid.pa},
                  {x.paradigms[1], &grid.pb}}) {
                if (!seen.insert(col).second) continue;
                for (std::size_t i = 0; i < eval_rows.size(); ++i)
                    features[i].push_back((*values)[eval_rows[i]]);
            }
            for (const auto& col : x.lofo) {
                const auto values = gin.texts(col);
                for (std::size_t i = 0; i < eval_rows.size(); ++i)
                    groups[i].push_back(x.lofo.size() > 1 ? col + "=" + values[eval_rows[i]]
                                                          : values[eval_rows[i]]);
            }
            const auto emit = [&](const char* scheme, const std::string& t,
                                  const std::vector<double>& pred,
                                  const std::vector<double>& truth) {
                const Corr c = correlate(pred, truth);
                double se = 0.0;
                std::size_t n = 0;
                for (std::size_t i = 0; i < pred.size(); ++i) {
                    if (std::isnan(pred[i]) || std::isnan(truth[i])) continue;
                    se += (pred[i] - truth[i]) * (pred[i] - truth[i]);
                    ++n;
                }
                b.row({std::string(scheme), t, static_cast<std::int64_t>(c.n), c.pearson.r,
                       c.spearman.r, n ? std::sqrt(se / static_cast<double>(n)) : kNaN});
            };
            for (const auto& [t, y] : targets) {
                emit("kfold", t, compass::kfold_predictions(features, y, x.folds, x.alpha, x.seed),
                     y);
                std::vector<double> pred, truth;
                for (const auto& h : compass::leave_group_out(features, y, groups, x.alpha)) {
                    for (std::size_t i = 0; i < h.rows.size(); ++i) {
                        pred.push_back(h.predicted[i]);
                        truth.push_back(y[h.rows[i]]);
                    }
                }
                emit("lofo", t, pred, truth);
            }
            out.push_back(std::move(b.t));
        }
        // Trained-adapter budgets: the grid's ceiling and score against each budget's target.
        if (!x.budget.empty()) {
            const AnalysisInput& bin = input.other(x.budget);
            const Pairs bp = pairs_of(bin, x);
            const auto epochs = bin.numbers("epochs");
            Builder b = correlation_builder("budget", "epochs");
            b.t.columns[0].type = ColumnType::i64;
            std::vector<std::size_t> brows;
            for (std::size_t i = 0; i < bp.size(); ++i) {
                const auto it = grid_row.find(bp.key(i));
                if (it == grid_row.end())
                    throw std::invalid_argument("budget pair " + bp.a[i] + " + " + bp.b[i] +
                                                " is not in the grid '" + x.grid + "'");
                brows.push_back(it->second);
            }
            const Scored s = score_pairs(grid, grid_ease, grid_cka, all, brows, stat);
            std::set<double> budgets(epochs.begin(), epochs.end());
            for (double e : budgets) {
                std::vector<std::size_t> rows;
                for (std::size_t i = 0; i < epochs.size(); ++i)
                    if (epochs[i] == e) rows.push_back(i);
                for (const char* p : {"ceiling", "score", "ease"}) {
                    for (const auto& t : x.targets) {
                        const Corr c =
                            correlate(pick(predictor(s, p), rows), pick(bin.numbers(t), rows));
                        b.row({static_cast<std::int64_t>(e), std::string(p), t,
                               static_cast<std::int64_t>(c.n), c.pearson.r, c.pearson.p,
                               c.spearman.r, c.spearman.p});
                    }
                }
            }
            out.push_back(std::move(b.t));
        }
        // The predictor's cost against the ground truth's (run facts).
        if (!x.predictor_cost.empty() && !x.truth_cost.empty()) {
            const auto seconds = [&](const std::vector<std::string>& groups, std::size_t& tasks) {
                double s = 0.0;
                tasks = 0;
                for (const auto& g : groups) {
                    const AnalysisInput& in = g == spec.input ? input : input.other(g);
                    s += sum(in.seconds);
                    tasks += in.seconds.size();
                }
                return s;
            };
            std::size_t ptasks = 0, ttasks = 0;
            const double ps = seconds(x.predictor_cost, ptasks);
            const double ts = seconds(x.truth_cost, ttasks);
            const double per_pair = eval.size() ? ts / static_cast<double>(eval.size()) : kNaN;
            const double grid_truth = per_pair * static_cast<double>(grid.size());
            Builder b("/meta/" + spec.study + "/cost",
                      {{"quantity", ColumnType::str}, {"value", ColumnType::f64}}, false);
            b.row({std::string("predictor_tasks"), static_cast<double>(ptasks)});
            b.row({std::string("predictor_seconds"), ps});
            b.row({std::string("grid_pairs"), static_cast<double>(grid.size())});
            b.row({std::string("truth_tasks"), static_cast<double>(ttasks)});
            b.row({std::string("truth_seconds"), ts});
            b.row({std::string("evaluated_pairs"), static_cast<double>(eval.size())});
            b.row({std::string("truth_seconds_per_pair"), per_pair});
            b.row({std::string("measured_ratio"), ps > 0 ? ts / ps : kNaN});
            b.row({std::string("grid_ratio_extrapolated"), ps > 0 ? grid_truth / ps : kNaN});
            out.push_back(std::move(b.t));
            spdlog::info(
                "{}: predictor {:.3f} s ({} tasks, all {} grid pairs) vs ground truth {:.3f} s "
                "({} tasks, {} pairs): {:.1f}x cheaper measured; {:.1f}x for the whole grid "
                "({:.4f} s per fitted pair)",
                spec.name, ps, ptasks, grid.size(), ts, ttasks, eval.size(),
                ps > 0 ? ts / ps : kNaN, ps > 0 ? grid_truth / ps : kNaN, per_pair);
        }
        return out;
    }

  private:
    static void add(TableData& t, const std::string& name, const std::vector<double>& v) {
        t.add_column({name, ColumnType::f64, 0});
        for (double e : v) t.values.back().emplace_back(e);
    }
    static void add_pair_columns(TableData& t, const Names& x, const Pairs& g,
                                 const std::vector<std::size_t>& rows) {
        const std::vector<std::pair<std::string, const std::vector<std::string>*>> cols = {
            {x.members[0], &g.a},   {x.members[1], &g.b},    {x.families[0], &g.fa},
            {x.families[1], &g.fb}, {x.paradigms[0], &g.pa}, {x.paradigms[1], &g.pb}};
        for (const auto& [name, v] : cols) {
            bool present = false;  // merging: family and paradigm are one column each
            for (const auto& c : t.columns) present = present || c.name == name;
            if (present) continue;
            t.add_column({name, ColumnType::str, 0});
            for (std::size_t r : rows) t.values.back().emplace_back((*v)[r]);
        }
    }
};
}  // namespace

const AnalysisKind& compass_analysis() {
    static const CompassAnalysis kind;
    return kind;
}

}  // namespace compatbench
