#include "compass/analysis.h"

#include <cmath>
#include <set>
#include <stdexcept>

#include "stats/kruskal.h"

namespace compatbench::compass {

namespace {

using Predictors = NamedValues;

// Every grid pair's paradigms with the given ease.
std::vector<GridPair> grid_pairs(const Grid& grid, const std::vector<double>& ease) {
    std::vector<GridPair> out;
    for (std::size_t i = 0; i < grid.size(); ++i)
        out.push_back({grid.paradigm_a[i], grid.paradigm_b[i], ease[i]});
    return out;
}

// Ease, ceiling, score and CKA of the grid rows `rows`, the ceiling taken over the grid
// rows kept by `keep` (§1.2; LOFO drops a family's pairs from the ceiling too).
Scored score_pairs(const Grid& grid, const std::vector<double>& ease, const std::vector<bool>& keep,
                   const std::vector<std::size_t>& rows, const CeilingStat& stat) {
    std::vector<GridPair> kept;
    for (std::size_t i = 0; i < grid.size(); ++i)
        if (keep[i]) kept.push_back({grid.paradigm_a[i], grid.paradigm_b[i], ease[i]});
    const auto ceiling = ceilings(kept, stat);
    Scored s;
    for (std::size_t r : rows) {
        const auto it = ceiling.find({grid.paradigm_a[r], grid.paradigm_b[r]});
        const double c = it == ceiling.end() ? stats::kNaN : it->second;
        s.ease.push_back(ease[r]);
        s.ceiling.push_back(c);
        s.score.push_back(ease[r] * c);
        s.cka.push_back(grid.cka[r]);
    }
    return s;
}

std::vector<CeilingRow> ceiling_rows(const Grid& grid, const CeilingStat& stat) {
    const std::vector<GridPair> pairs = grid_pairs(grid, grid.ease);
    std::map<ParadigmPair, std::int64_t> count;
    for (const auto& p : pairs) ++count[{p.paradigm_a, p.paradigm_b}];
    std::vector<CeilingRow> out;
    for (const auto& [key, c] : ceilings(pairs, stat)) out.push_back({key, count[key], c});
    return out;
}

// §6: every predictor against every target.
std::vector<CorrelationRow> correlations(const Predictors& preds,
                                         const std::map<std::string, std::vector<double>>& ys) {
    std::vector<CorrelationRow> out;
    for (const auto& [p, x] : preds)
        for (const auto& [t, y] : ys) out.push_back({"", p, t, stats::correlate_finite(x, y)});
    return out;
}

// §1.3, §5: each target's n, mean and sd per region, and Kruskal-Wallis across regions.
void region_tables(const std::vector<std::string>& region,
                   const std::map<std::string, std::vector<double>>& ys, StudyResult& out) {
    for (const auto& [t, y] : ys) {
        std::vector<std::vector<double>> groups;
        for (const char* name : kRegionNames) {
            std::vector<double> v;
            for (std::size_t i = 0; i < y.size(); ++i)
                if (region[i] == name && !std::isnan(y[i])) v.push_back(y[i]);
            out.region_stats.push_back({name, t, static_cast<std::int64_t>(v.size()),
                                        stats::mean(v), stats::sample_sd(v)});
            groups.push_back(std::move(v));
        }
        out.kruskal.emplace_back(t, stats::kruskal_wallis(groups));
    }
}

// §6 budget-limited search: where the best pair appears when pairs are tried by predictor.
std::vector<SearchRow> budget_search(const Predictors& preds,
                                     const std::map<std::string, std::vector<double>>& ys) {
    std::vector<SearchRow> out;
    for (const auto& [t, y] : ys) {
        for (const auto& [p, x] : preds) {
            const auto order = stats::order_descending(x);
            SearchRow row{t,
                          p,
                          static_cast<std::int64_t>(y.size()),
                          static_cast<std::int64_t>(best_position(order, y)),
                          stats::kNaN,
                          stats::kNaN,
                          best_so_far(order, y)};
            if (!row.curve.empty()) {
                row.best_value = row.curve.back();
                row.top5_best = row.curve[std::min<std::size_t>(4, row.curve.size() - 1)];
            }
            out.push_back(std::move(row));
        }
    }
    return out;
}

// The label of a held-out group: the value, or "column=value" when several columns are
// held out in turn.
std::string held_out_label(const Grid& grid, const std::string& column, const std::string& v) {
    return grid.held_out.size() > 1 ? column + "=" + v : v;
}

// Leave one group out: every value of every held-out column, with the grid rows it keeps.
std::vector<std::pair<std::string, std::vector<bool>>> held_out_folds(const Grid& grid) {
    std::vector<std::pair<std::string, std::vector<bool>>> folds;
    for (const auto& [column, values] : grid.held_out) {
        for (const auto& v : std::set<std::string>(values.begin(), values.end())) {
            std::vector<bool> keep(grid.size());
            for (std::size_t i = 0; i < grid.size(); ++i) keep[i] = values[i] != v;
            folds.emplace_back(held_out_label(grid, column, v), std::move(keep));
        }
    }
    return folds;
}

// LOFO (§6): a held-out group's pairs leave the evaluation and the ceiling's grid.
void lofo_tables(const StudyInput& in, StudyResult& out) {
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> range;
    for (const auto& [label, keep] : held_out_folds(in.grid)) {
        std::vector<std::size_t> kept_grid_rows, kept;
        for (std::size_t i = 0; i < in.evaluated.size(); ++i) {
            if (!keep[in.evaluated[i]]) continue;
            kept_grid_rows.push_back(in.evaluated[i]);
            kept.push_back(i);
        }
        const Scored s = score_pairs(in.grid, in.grid.ease, keep, kept_grid_rows, in.ceiling);
        for (const char* p : kPredictors) {
            for (const auto& [t, y] : in.targets) {
                auto c = stats::correlate_finite(s.predictor(p), stats::pick(y, kept));
                range[{p, t}].emplace_back(c.pearson.r, c.spearman.r);
                out.lofo.push_back({label, p, t, std::move(c)});
            }
        }
    }
    for (const char* p : kPredictors) {
        for (const auto& [t, y] : in.targets) {
            std::vector<double> pr, sr;
            for (const auto& [a, b] : range[{p, t}]) pr.push_back(a), sr.push_back(b);
            out.lofo_range.push_back({p, t, static_cast<std::int64_t>(pr.size()),
                                      stats::nan_min(pr), stats::nan_max(pr), stats::nan_min(sr),
                                      stats::nan_max(sr)});
        }
    }
}

// k-sensitivity: ease, ceiling and score from the first k neighbours.
std::vector<CountedCorrelation> k_sensitivity(const StudyInput& in) {
    const std::vector<bool> all(in.grid.size(), true);
    std::vector<CountedCorrelation> out;
    for (const auto& [k, ease] : in.grid.ease_at_k) {
        const Scored s = score_pairs(in.grid, ease, all, in.evaluated, in.ceiling);
        for (const char* p : {"score", "ease", "ceiling"})
            for (const auto& [t, y] : in.targets)
                out.push_back({k, p, t, stats::correlate_finite(s.predictor(p), y)});
    }
    return out;
}

MetadataRow metadata_row(const char* scheme, const std::string& target,
                         const std::vector<double>& predicted, const std::vector<double>& truth) {
    double se = 0.0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < predicted.size(); ++i) {
        if (std::isnan(predicted[i]) || std::isnan(truth[i])) continue;
        se += (predicted[i] - truth[i]) * (predicted[i] - truth[i]);
        ++n;
    }
    return {scheme, target, stats::correlate_finite(predicted, truth),
            n ? std::sqrt(se / static_cast<double>(n)) : stats::kNaN};
}

// §6 baseline: ridge on family and paradigm one-hots, K-fold and leave-one-group-out (the
// LOFO groups).
std::vector<MetadataRow> metadata_regressor(const StudyInput& in) {
    std::vector<std::vector<std::string>> features, groups;
    for (std::size_t r : in.evaluated) {
        features.push_back(in.grid.metadata[r]);
        groups.emplace_back();
        for (const auto& [column, values] : in.grid.held_out)
            groups.back().push_back(held_out_label(in.grid, column, values[r]));
    }
    std::vector<MetadataRow> out;
    for (const auto& [t, y] : in.targets) {
        out.push_back(metadata_row(
            "kfold", t, kfold_predictions(features, y, in.folds, in.ridge_alpha, in.seed), y));
        std::vector<double> predicted, truth;
        for (const auto& h : leave_group_out(features, y, groups, in.ridge_alpha)) {
            for (std::size_t i = 0; i < h.rows.size(); ++i) {
                predicted.push_back(h.predicted[i]);
                truth.push_back(y[h.rows[i]]);
            }
        }
        out.push_back(metadata_row("lofo", t, predicted, truth));
    }
    return out;
}

// Trained-adapter budgets: the grid's predictors against each budget's targets.
std::vector<CountedCorrelation> budget_correlations(const StudyInput& in) {
    const Budgets& b = *in.budgets;
    const std::vector<bool> all(in.grid.size(), true);
    const Scored s = score_pairs(in.grid, in.grid.ease, all, b.grid_rows, in.ceiling);
    std::vector<CountedCorrelation> out;
    for (double e : std::set<double>(b.epochs.begin(), b.epochs.end())) {
        std::vector<std::size_t> rows;
        for (std::size_t i = 0; i < b.epochs.size(); ++i)
            if (b.epochs[i] == e) rows.push_back(i);
        for (const char* p : {"ceiling", "score", "ease"})
            for (const auto& [t, y] : b.targets)
                out.push_back({static_cast<std::int64_t>(e), p, t,
                               stats::correlate_finite(stats::pick(s.predictor(p), rows),
                                                       stats::pick(y, rows))});
    }
    return out;
}

// The ceiling's other readings and the ease above its null (§1.2, §1.1), as predictors of the
// evaluated pairs: ceiling_<v> and score_<v>, then ease_excess and score_excess (the
// study's ceiling over the excess eases).
NamedValues variant_predictors(const StudyInput& in) {
    // The evaluated pairs' ease, ceiling (read the way `v` says) and their product.
    const auto scored = [&](const std::vector<double>& ease, CeilingVariant v) {
        const auto c = ceiling_per_row(grid_pairs(in.grid, ease), in.ceiling, v);
        Scored s;
        s.ease = stats::pick(ease, in.evaluated);
        s.ceiling = stats::pick(c, in.evaluated);
        for (std::size_t i = 0; i < s.ease.size(); ++i) s.score.push_back(s.ease[i] * s.ceiling[i]);
        return s;
    };
    NamedValues out;
    for (CeilingVariant v : in.ceiling_variants) {
        if (v == CeilingVariant::pair) continue;
        const std::string name = kCeilingVariantNames[static_cast<int>(v)];
        Scored s = scored(in.grid.ease, v);
        out.emplace_back("ceiling_" + name, std::move(s.ceiling));
        out.emplace_back("score_" + name, std::move(s.score));
    }
    if (!in.grid.ease_excess.empty()) {
        Scored s = scored(in.grid.ease_excess, CeilingVariant::pair);
        out.emplace_back("ease_excess", std::move(s.ease));
        out.emplace_back("score_excess", std::move(s.score));
    }
    return out;
}

// Within each group (e.g. one backbone): every predictor against every target.
std::vector<CorrelationRow> within_groups(const StudyInput& in, const Predictors& preds) {
    std::vector<CorrelationRow> out;
    if (in.grid.within.empty()) return out;
    std::vector<std::string> labels;
    for (std::size_t r : in.evaluated) labels.push_back(in.grid.within[r]);
    for (const auto& g : std::set<std::string>(labels.begin(), labels.end())) {
        std::vector<std::size_t> rows;
        for (std::size_t i = 0; i < labels.size(); ++i)
            if (labels[i] == g) rows.push_back(i);
        for (const auto& [p, x] : preds)
            for (const auto& [t, y] : in.targets)
                out.push_back(
                    {g, p, t, stats::correlate_finite(stats::pick(x, rows), stats::pick(y, rows))});
    }
    return out;
}

}  // namespace

const std::vector<double>& Scored::predictor(const std::string& name) const {
    if (name == "score") return score;
    if (name == "ease") return ease;
    if (name == "ceiling") return ceiling;
    if (name == "cka") return cka;
    throw std::invalid_argument("no COMPASS predictor named '" + name + "'");
}

StudyResult analyse(const StudyInput& in) {
    StudyResult out;
    const std::vector<bool> all(in.grid.size(), true);
    std::vector<std::size_t> every(in.grid.size());
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
    out.grid = score_pairs(in.grid, in.grid.ease, all, every, in.ceiling);
    out.ceilings = ceiling_rows(in.grid, in.ceiling);
    out.evaluated = score_pairs(in.grid, in.grid.ease, all, in.evaluated, in.ceiling);
    out.regions = regions(out.evaluated.ease, out.evaluated.ceiling);
    // COMPASS's predictors and any further ones (e.g. the merges' interference screening).
    Predictors preds;
    for (const char* p : kPredictors) preds.emplace_back(p, out.evaluated.predictor(p));
    for (const auto& extra : in.extra_predictors) preds.push_back(extra);
    out.evaluated_variants = variant_predictors(in);
    for (const auto& v : out.evaluated_variants) preds.push_back(v);
    out.correlations = correlations(preds, in.targets);
    out.within = within_groups(in, preds);
    region_tables(out.regions, in.targets, out);
    out.budget_search = budget_search(preds, in.targets);
    lofo_tables(in, out);
    out.k_sensitivity = k_sensitivity(in);
    out.metadata_regressor = metadata_regressor(in);
    if (in.budgets) out.budgets = budget_correlations(in);
    return out;
}

}  // namespace compatbench::compass
