#include "prism/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "merging/operators.h"
#include "stats/summary.h"

namespace compatbench::prism {

namespace {

// The operators are listed in the order of merging::Method (unknown names last).
const std::vector<std::string>& kMethodOrder = merging::method_names();

std::size_t method_rank(const std::string& m) {
    return static_cast<std::size_t>(std::find(kMethodOrder.begin(), kMethodOrder.end(), m) -
                                    kMethodOrder.begin());
}

bool main_kappa(const Merges& m, std::size_t i) { return m.kappa[i] == 0.0 || m.kappa[i] == 1.0; }
bool close(double a, double b) { return std::abs(a - b) < 1e-12; }

// The mean over `rows` of a column, NaN left out.
double mean_at(const std::vector<double>& v, const std::vector<std::size_t>& rows) {
    return stats::nan_mean(stats::pick(v, rows));
}

// Rows kept by `keep`, grouped by (operator in kMethodOrder, value(i)).
template <class Keep, class Value>
std::map<std::pair<std::size_t, double>, std::vector<std::size_t>> grouped(const Merges& m,
                                                                           Keep keep, Value value) {
    std::map<std::pair<std::size_t, double>, std::vector<std::size_t>> g;
    for (std::size_t i = 0; i < m.size(); ++i)
        if (keep(i)) g[{method_rank(m.method[i]), value(i)}].push_back(i);
    return g;
}

std::vector<OperatorRow> operators(const Merges& m) {
    std::vector<OperatorRow> out;
    for (const auto& [key, rows] : grouped(
             m, [&](std::size_t i) { return main_kappa(m, i); },
             [&](std::size_t i) { return m.coef[i]; })) {
        out.push_back({m.method[rows.front()], key.second, static_cast<std::int64_t>(rows.size()),
                       mean_at(m.merged_mean, rows),
                       stats::nan_sd(stats::pick(m.merged_mean, rows)), mean_at(m.base_mean, rows),
                       mean_at(m.retention, rows), mean_at(m.destructive, rows),
                       mean_at(m.update_pct, rows), mean_at(m.keep_fraction, rows)});
    }
    return out;
}

std::vector<KRow> by_k(const Merges& m, double coef) {
    std::vector<KRow> out;
    for (const auto& [key, rows] : grouped(
             m, [&](std::size_t i) { return main_kappa(m, i) && close(m.coef[i], coef); },
             [&](std::size_t i) { return m.k[i]; })) {
        out.push_back({m.method[rows.front()], static_cast<std::int64_t>(key.second),
                       static_cast<std::int64_t>(rows.size()), mean_at(m.merged_mean, rows),
                       mean_at(m.base_mean, rows), mean_at(m.retention, rows),
                       mean_at(m.destructive, rows), mean_at(m.interference, rows),
                       mean_at(m.screen_score, rows)});
    }
    return out;
}

std::vector<KappaRow> kappa_sweep(const Merges& m, double coef) {
    std::vector<KappaRow> out;
    for (const auto& [key, rows] : grouped(
             m, [&](std::size_t i) { return m.kappa[i] > 0 && close(m.coef[i], coef); },
             [&](std::size_t i) { return m.kappa[i]; })) {
        out.push_back({m.method[rows.front()], key.second, static_cast<std::int64_t>(rows.size()),
                       mean_at(m.merged_mean, rows), mean_at(m.retention, rows),
                       mean_at(m.destructive, rows), mean_at(m.update_pct, rows),
                       mean_at(m.keep_fraction, rows), mean_at(m.lambda_mean, rows)});
    }
    return out;
}

// A merge's place: backbone, step, K, members and c, then the operator.
using Place = std::tuple<std::string, double, double, std::string, double, std::string>;
std::map<Place, std::size_t> places(const Merges& m) {
    std::map<Place, std::size_t> at;
    for (std::size_t i = 0; i < m.size(); ++i)
        if (main_kappa(m, i))
            at[{m.backbone[i], m.step[i], m.k[i], m.members[i], m.coef[i], m.method[i]}] = i;
    return at;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> paired_places(const Merges& m,
                                                               const std::string& a,
                                                               const std::string& b) {
    const auto at = places(m);
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (const auto& [key, i] : at) {
        if (std::get<5>(key) != a) continue;
        auto other = key;
        std::get<5>(other) = b;
        const auto j = at.find(other);
        if (j != at.end()) out.emplace_back(i, j->second);
    }
    return out;
}

namespace {

// Paired ablations on the same backbone, step, K, members and c (κ = 1 for the PRISM family).
std::vector<AblationRow> ablations(const Merges& m) {
    const std::pair<const char*, const char*> pairs[] = {{"prism", "prism_hard"},
                                                         {"prism", "norm_matched"},
                                                         {"prism", "task_arithmetic"},
                                                         {"ties", "task_arithmetic"},
                                                         {"dare", "task_arithmetic"}};
    std::vector<AblationRow> out;
    for (const auto& [a, b] : pairs) {
        std::vector<double> d;
        for (const auto& [i, j] : paired_places(m, a, b))
            d.push_back(m.merged_mean[i] - m.merged_mean[j]);
        if (d.empty()) continue;
        out.push_back({a, b, static_cast<std::int64_t>(d.size()), stats::nan_mean(d),
                       stats::nan_sd(d), stats::sign_test(d)});
    }
    return out;
}

// The drift fit over `rows` (one backbone's checkpoints, or all of them).
DriftRow drift_row(const Merges& d, const std::string& backbone, const std::string& members,
                   std::vector<std::size_t> rows, std::vector<std::string>& notes) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](std::size_t a, std::size_t b) { return d.step[a] < d.step[b]; });
    const auto fit =
        stats::power_law_fit(stats::pick(d.step, rows), stats::pick(d.screen_score, rows));
    if (!fit.ok()) notes.push_back("drift " + backbone + ": " + fit.reason);
    // First and last checkpoint: means over the rows at that step.
    const double s0 = d.step[rows.front()], s1 = d.step[rows.back()];
    std::vector<std::size_t> at0, at1;
    for (std::size_t i : rows) {
        if (d.step[i] == s0) at0.push_back(i);
        if (d.step[i] == s1) at1.push_back(i);
    }
    std::int64_t destructive = 0;
    for (std::size_t i : at1) destructive += d.destructive[i] != 0.0;
    return {backbone,
            members,
            fit,
            static_cast<std::int64_t>(s0),
            static_cast<std::int64_t>(s1),
            mean_at(d.screen_score, at0),
            mean_at(d.screen_score, at1),
            mean_at(d.merged_mean, at1),
            destructive};
}

}  // namespace

PrismResult analyse(const Merges& m, double coef, double kappa_coef) {
    PrismResult out;
    out.operators = operators(m);
    out.by_k = by_k(m, coef);
    if (out.by_k.empty()) out.notes.push_back("by_k: no merge at coef " + std::to_string(coef));
    out.kappa = kappa_sweep(m, kappa_coef);
    out.ablation = ablations(m);
    return out;
}

namespace {
// One recovery row over the TA/PRISM pairs (i, j) of `pairs`.
RecoveryRow recovery_row(const Merges& m, const std::string& backbone, double coef,
                         const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                         double threshold) {
    RecoveryRow r{backbone, coef, static_cast<std::int64_t>(pairs.size()), 0, 0, 0, {}, 0, 0, 0, 0,
                  0,        0};
    std::vector<double> destroyed, all, ta, prism, screened;
    for (const auto& [i, j] : pairs) {
        const double d = m.merged_mean[j] - m.merged_mean[i];
        all.push_back(d);
        if (m.destructive[i] != 0.0) destroyed.push_back(d);
        const bool flag = m.screen_score[i] > threshold;
        ta.push_back(m.merged_mean[i]);
        prism.push_back(m.merged_mean[j]);
        screened.push_back(flag ? m.merged_mean[j] : m.merged_mean[i]);
        r.flagged += flag;
        r.prism_destructive += m.destructive[j] != 0.0;
        r.screened_destructive += (flag ? m.destructive[j] : m.destructive[i]) != 0.0;
    }
    r.ta_destroyed = static_cast<std::int64_t>(destroyed.size());
    r.diff_destroyed = stats::nan_mean(destroyed);
    r.diff_all = stats::nan_mean(all);
    r.sign = stats::sign_test(destroyed);
    r.always_ta = stats::nan_mean(ta);
    r.always_prism = stats::nan_mean(prism);
    r.screened = stats::nan_mean(screened);
    return r;
}
}  // namespace

std::vector<RecoveryRow> recovery(const Merges& m, double threshold) {
    using Pairs = std::vector<std::pair<std::size_t, std::size_t>>;
    std::map<std::pair<std::string, double>, Pairs> by;  // (backbone, c)
    std::map<double, Pairs> pooled;                      // c, over every backbone
    for (const auto& [i, j] : paired_places(m, "task_arithmetic", "prism")) {
        by[{m.backbone[i], m.coef[i]}].push_back({i, j});
        pooled[m.coef[i]].push_back({i, j});
    }
    std::vector<RecoveryRow> out;
    for (const auto& [key, pairs] : by)
        out.push_back(recovery_row(m, key.first, key.second, pairs, threshold));
    for (const auto& [coef, pairs] : pooled)
        out.push_back(recovery_row(m, "all", coef, pairs, threshold));
    return out;
}

std::vector<DriftRow> drift(const Merges& d, std::vector<std::string>& notes) {
    std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by;
    std::vector<std::size_t> everything;
    for (std::size_t i = 0; i < d.size(); ++i) {
        by[{d.backbone[i], d.members[i]}].push_back(i);
        everything.push_back(i);
    }
    std::vector<DriftRow> out;
    for (const auto& [key, rows] : by)
        out.push_back(drift_row(d, key.first, key.second, rows, notes));
    if (by.size() > 1) out.push_back(drift_row(d, "all", "", everything, notes));
    return out;
}

}  // namespace compatbench::prism
