// Analysis `compass`: the COMPASS study tables (methods.md §1.2, §1.3, §5, §6) from the
// similarity grid (every valid pair: ease at each k, CKA) and the evaluated pairs (their
// ground-truth targets):
//   /<study>/grid, /<study>/pairs                  every grid pair; the evaluated pairs with
//                                                  ease, ceiling, score, CKA, region, targets
//   /<study>/analysis/correlations                 predictor x target: Pearson, Spearman
//   /<study>/analysis/regions, kruskal             per region n, mean, sd; Kruskal-Wallis
//   /<study>/analysis/budget_search, budget_curve  where the best pair appears by predictor
//   /<study>/analysis/lofo, lofo_range             leave one family out (ceiling recomputed)
//   /<study>/analysis/within                       (with `within:` grid columns) the
//                                                  correlations inside each group
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
//
// `ceilings: [pair, paradigm, leave_pair_out]` reads the ceiling the other ways too
// (ceiling_<v>, score_<v> beside the study's per-pair one); a grid whose pair_similarity
// measured a permutation null (`null_draws`) adds ease_excess and score_excess.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "analyses/analysis_kind.h"
#include "analyses/compass_tables.h"
#include "analyses/inference.h"
#include "compass/analysis.h"
#include "config/config.h"

namespace compatbench {

namespace {

// Key names of the spec with defaults.
struct Names {
    std::string grid, budget;
    std::vector<std::string> members, families, paradigms, targets, predictor_cost, truth_cost;
    std::vector<std::string> extra_predictors;  // input columns used as further predictors
    std::vector<std::string> lofo;              // grid columns whose values are held out
    std::vector<std::string> ceilings;          // ceiling variants read (pair, ...)
    std::vector<std::string> within;            // grid columns whose values group the pairs
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
    x.ceilings = strings(n["ceilings"], {});
    x.within = strings(n["within"], {});
    if (n["k"])
        for (const auto& s : strings(n["k"], {})) x.ks.push_back(std::stoi(s));
    if (n["folds"]) x.folds = n["folds"].as<int>();
    if (n["ridge_alpha"]) x.alpha = n["ridge_alpha"].as<double>();
    if (n["seed"]) x.seed = n["seed"].as<std::uint64_t>();
    return x;
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

// Evaluated pair (members a, b) -> grid row, for each pair of `pairs`.
std::vector<std::size_t> grid_rows_of(const Pairs& pairs,
                                      const std::map<std::string, std::size_t>& at,
                                      const char* what, const std::string& grid) {
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto it = at.find(pairs.key(i));
        if (it == at.end())
            throw std::invalid_argument(std::string(what) + " pair " + pairs.a[i] + " + " +
                                        pairs.b[i] + " is not in the grid '" + grid + "'");
        rows.push_back(it->second);
    }
    return rows;
}

// The grid's columns the study reads: paradigms, ease (at each k), CKA, held-out columns
// and the family and paradigm labels (each column once) of the metadata regressor.
compass::Grid read_grid(const AnalysisInput& gin, const Pairs& pairs, const Names& x,
                        const std::vector<int>& ks) {
    compass::Grid g;
    g.paradigm_a = pairs.pa;
    g.paradigm_b = pairs.pb;
    g.ease = gin.numbers("ease");
    g.cka = gin.numbers("cka");
    for (int k : ks) g.ease_at_k.emplace_back(k, gin.numbers(ease_column(k)));
    for (const auto& c : x.lofo) g.held_out.emplace_back(c, gin.texts(c));
    if (gin.find("ease_excess") >= 0) g.ease_excess = gin.numbers("ease_excess");
    for (const auto& c : x.within) {  // the group: the columns' values joined by '/'
        const auto v = gin.texts(c);
        if (g.within.empty()) g.within.resize(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            g.within[i] += (c == x.within.front() ? "" : "/") + v[i];
    }
    g.metadata.resize(pairs.size());
    std::set<std::string> seen;
    for (const auto& [col, values] :
         {std::pair<std::string, const std::vector<std::string>*>{x.families[0], &pairs.fa},
          {x.families[1], &pairs.fb},
          {x.paradigms[0], &pairs.pa},
          {x.paradigms[1], &pairs.pb}}) {
        if (!seen.insert(col).second) continue;
        for (std::size_t i = 0; i < pairs.size(); ++i) g.metadata[i].push_back((*values)[i]);
    }
    return g;
}

// The k of each ease_k column: the spec's, or every one of the grid.
std::vector<int> ks_of(const AnalysisInput& gin, const Names& x) {
    if (!x.ks.empty()) return x.ks;
    std::vector<int> ks;
    for (const auto& c : gin.columns)
        if (c.name.rfind("ease_k", 0) == 0) ks.push_back(std::stoi(c.name.substr(6)));
    return ks;
}

// Members, families and paradigms of every grid pair (merging: family and paradigm are one
// column each, named once).
PairColumns pair_columns(const Names& x, const Pairs& g) {
    PairColumns out;
    const std::vector<std::pair<std::string, const std::vector<std::string>*>> cols = {
        {x.members[0], &g.a},   {x.members[1], &g.b},    {x.families[0], &g.fa},
        {x.families[1], &g.fb}, {x.paradigms[0], &g.pa}, {x.paradigms[1], &g.pb}};
    for (const auto& [name, v] : cols)
        if (std::none_of(out.begin(), out.end(), [&](const auto& c) { return c.first == name; }))
            out.emplace_back(name, *v);
    return out;
}

// The predictor's cost against the ground truth's (run facts, not science: /meta).
TableData cost_table(const AnalysisSpec& spec, const AnalysisInput& input, const Names& x,
                     std::size_t grid_pairs, std::size_t evaluated) {
    const auto seconds = [&](const std::vector<std::string>& groups, std::size_t& tasks) {
        double s = 0.0;
        tasks = 0;
        for (const auto& g : groups) {
            const AnalysisInput& in = g == spec.input ? input : input.other(g);
            s += stats::sum(in.seconds);
            tasks += in.seconds.size();
        }
        return s;
    };
    std::size_t ptasks = 0, ttasks = 0;
    const double ps = seconds(x.predictor_cost, ptasks);
    const double ts = seconds(x.truth_cost, ttasks);
    const double per_pair = evaluated ? ts / static_cast<double>(evaluated) : stats::kNaN;
    const double grid_truth = per_pair * static_cast<double>(grid_pairs);
    TableData t = TableData::make("/meta/" + spec.study + "/cost", {str("quantity"), f64("value")});
    t.print = false;
    const std::pair<const char*, double> rows[] = {
        {"predictor_tasks", static_cast<double>(ptasks)},
        {"predictor_seconds", ps},
        {"grid_pairs", static_cast<double>(grid_pairs)},
        {"truth_tasks", static_cast<double>(ttasks)},
        {"truth_seconds", ts},
        {"evaluated_pairs", static_cast<double>(evaluated)},
        {"truth_seconds_per_pair", per_pair},
        {"measured_ratio", ps > 0 ? ts / ps : stats::kNaN},
        {"grid_ratio_extrapolated", ps > 0 ? grid_truth / ps : stats::kNaN}};
    for (const auto& [q, v] : rows) t.add_row({std::string(q), v});
    spdlog::info(
        "{}: predictor {:.3f} s ({} tasks, all {} grid pairs) vs ground truth {:.3f} s "
        "({} tasks, {} pairs): {:.1f}x cheaper measured; {:.1f}x for the whole grid "
        "({:.4f} s per fitted pair)",
        spec.name, ps, ptasks, grid_pairs, ts, ttasks, evaluated, ps > 0 ? ts / ps : stats::kNaN,
        ps > 0 ? grid_truth / ps : stats::kNaN, per_pair);
    return t;
}

// The columns of /<study>/pairs that claims and clusters may name: the pairs' names, the
// predictors and every input column.
std::vector<std::string> frame_columns(const Names& x, const std::vector<ColumnSpec>& input) {
    std::vector<std::string> out = column_names(input);
    for (const auto& v : {x.members, x.families, x.paradigms})
        out.insert(out.end(), v.begin(), v.end());
    for (const char* c : {"ease", "ceiling", "score", "cka", "ease_excess", "score_excess"})
        out.emplace_back(c);
    for (const auto& v : x.ceilings) out.push_back("ceiling_" + v), out.push_back("score_" + v);
    return out;
}

// The members as two crossed pools (vision × text).
std::vector<ClusterFactorSpec> crossed(const Names& x) {
    return {{.columns = {x.members[0]}}, {.columns = {x.members[1]}}};
}

// Without `clusters:`, the members: one pool when a model appears on both sides (the
// fine-tunes of a merge), else two crossed pools (an alignment's vision and text encoders).
std::vector<ClusterFactorSpec> default_clusters(const Names& x, const Pairs& grid) {
    const std::set<std::string> a(grid.a.begin(), grid.a.end());
    const bool shared = std::any_of(grid.b.begin(), grid.b.end(),
                                    [&](const std::string& m) { return a.count(m) > 0; });
    if (shared) return {{.columns = {x.members[0], x.members[1]}}};
    return crossed(x);
}

class CompassAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "compass"; }
    std::vector<KeyRule> keys() const override {
        std::vector<KeyRule> keys = {
            {.name = "grid", .type = KeyType::string, .required = true},
            {.name = "targets", .type = KeyType::scalar_or_list, .required = true},
            {.name = "members", .type = KeyType::list},
            {.name = "families", .type = KeyType::list},
            {.name = "paradigms", .type = KeyType::list},
            {.name = "ceiling", .type = KeyType::string},
            {.name = "k", .type = KeyType::scalar_or_list},
            {.name = "budget", .type = KeyType::string},
            {.name = "folds", .type = KeyType::integer, .min = 2, .max = 1000},
            {.name = "ridge_alpha", .type = KeyType::real, .min = 0, .max = 1e12},
            {.name = "seed", .type = KeyType::integer, .min = 0, .max = 9e18},
            {.name = "predictor_cost", .type = KeyType::scalar_or_list},
            {.name = "truth_cost", .type = KeyType::scalar_or_list},
            {.name = "extra_predictors", .type = KeyType::scalar_or_list},
            {.name = "lofo", .type = KeyType::scalar_or_list},
            {.name = "ceilings", .type = KeyType::list},
            {.name = "within", .type = KeyType::scalar_or_list}};
        for (auto& k : inference_keys()) keys.push_back(std::move(k));
        return keys;
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
            for (const auto& v : x.ceilings) {
                compass::ceiling_variant(v);
                if (std::count(x.ceilings.begin(), x.ceilings.end(), v) > 1)
                    throw std::invalid_argument("ceilings: '" + v + "' given twice");
            }
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
        for (const auto& c : x.within) need(grid, c, x.grid, "within", false);
        for (int k : x.ks) need(grid, ease_column(k), x.grid, "k", true);
        if (!x.budget.empty()) {
            const auto& b = groups.at(x.budget);
            for (const auto& c : x.members) need(b, c, x.budget, "budget", false);
            need(b, "epochs", x.budget, "budget", true);
            for (const auto& t : x.targets) need(b, t, x.budget, "budget", true);
        }
        inference_settings(spec, frame_columns(x, input), yc, crossed(x));
    }

    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const Names x = names_of(spec);
        const AnalysisInput& gin = input.other(x.grid);
        const Pairs grid = pairs_of(gin, x);
        std::map<std::string, std::size_t> grid_row;
        for (std::size_t i = 0; i < grid.size(); ++i) grid_row[grid.key(i)] = i;
        const compass::StudyInput in = study_input(x, input, gin, grid, grid_row);
        const compass::StudyResult r = compass::analyse(in);

        const CompassTables tables{"/" + spec.study,
                                   pair_columns(x, grid),
                                   input,
                                   {"task_id", "seed", x.members[0], x.members[1], x.families[0],
                                    x.families[1], x.paradigms[0], x.paradigms[1]}};
        std::vector<TableData> out = compass_tables(tables, in, r, note);
        const YamlChecker checker("(analysis)");
        auto settings = inference_settings(spec, frame_columns(x, input.columns), checker,
                                           default_clusters(x, grid));
        judge(spec, settings, x, out, note);
        if (!x.predictor_cost.empty() && !x.truth_cost.empty())
            out.push_back(cost_table(spec, input, x, grid.size(), in.evaluated.size()));
        return out;
    }

  private:
    // The evaluated pairs' table (/<study>/pairs) as the frame: clustered intervals on the
    // correlations, the claims, and the score beside ease and ceiling alone (methods.md §5.4).
    static void judge(const AnalysisSpec& spec, InferenceSettings& settings, const Names& x,
                      std::vector<TableData>& out, const AnalysisNote& note) {
        const auto at = [&](const std::string& path) {
            return std::find_if(out.begin(), out.end(),
                                [&](const TableData& t) { return t.path == path; });
        };
        const TableData pairs = *at("/" + spec.study + "/pairs");
        const Frame frame{pairs};
        std::vector<std::size_t> rows(pairs.rows());
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
        add_correlation_intervals(*at("correlations"), settings, frame,
                                  [&](std::size_t) { return rows; });
        const bool in_pairs = std::all_of(x.within.begin(), x.within.end(), [&](const auto& c) {
            return std::any_of(pairs.columns.begin(), pairs.columns.end(),
                               [&](const ColumnSpec& s) { return s.name == c; });
        });
        if (const auto within = at("within"); within != out.end() && in_pairs) {
            // A group's pairs: those whose `within` columns, joined by '/', are its name.
            std::vector<std::string> group(pairs.rows());
            for (const auto& c : x.within) {
                const auto v = frame.texts(c);
                for (std::size_t i = 0; i < v.size(); ++i)
                    group[i] += (c == x.within.front() ? "" : "/") + v[i];
            }
            const auto names = Frame{*within}.texts("group");
            add_correlation_intervals(*within, settings, frame, [&](std::size_t row) {
                std::vector<std::size_t> in;
                for (std::size_t i = 0; i < group.size(); ++i)
                    if (group[i] == names[row]) in.push_back(i);
                return in;
            });
        }
        if (!settings.claims.empty()) out.push_back(claims_table(settings, frame, "claims", note));
        if (settings.baselines.empty()) settings.baselines = {{"score", {"ease", "ceiling"}}};
        out.push_back(baselines_table(settings, frame, x.targets, "", "baselines"));
    }

    static compass::StudyInput study_input(const Names& x, const AnalysisInput& input,
                                           const AnalysisInput& gin, const Pairs& grid,
                                           const std::map<std::string, std::size_t>& grid_row) {
        compass::StudyInput in;
        in.grid = read_grid(gin, grid, x, ks_of(gin, x));
        in.evaluated = grid_rows_of(pairs_of(input, x), grid_row, "evaluated", x.grid);
        for (const auto& t : x.targets) in.targets[t] = input.numbers(t);
        for (const auto& p : x.extra_predictors)
            in.extra_predictors.emplace_back(p, input.numbers(p));
        in.ceiling = compass::CeilingStat::parse(x.ceiling);
        for (const auto& v : x.ceilings) in.ceiling_variants.push_back(compass::ceiling_variant(v));
        in.folds = x.folds;
        in.ridge_alpha = x.alpha;
        in.seed = x.seed;
        if (!x.budget.empty()) {
            const AnalysisInput& bin = input.other(x.budget);
            compass::Budgets b;
            b.grid_rows = grid_rows_of(pairs_of(bin, x), grid_row, "budget", x.grid);
            b.epochs = bin.numbers("epochs");
            for (const auto& t : x.targets) b.targets.emplace_back(t, bin.numbers(t));
            in.budgets = std::move(b);
        }
        return in;
    }
};
}  // namespace

const AnalysisKind& compass_analysis() {
    static const CompassAnalysis kind;
    return kind;
}

}  // namespace compatbench
