#include "compass/compass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>

#include "common/eigen.h"
#include "common/hash.h"
#include "stats/summary.h"

namespace compatbench::compass {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A seeded permutation of 0..n-1 (Fisher-Yates over SplitMix64 draws).
std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed) {
    std::vector<std::size_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    std::uint64_t state = seed;
    for (std::size_t i = n; i > 1; --i) {
        const std::size_t j = splitmix64(state++) % i;
        std::swap(p[i - 1], p[j]);
    }
    return p;
}
}  // namespace

CeilingStat CeilingStat::parse(const std::string& text) {
    CeilingStat s;
    if (text == "max") return s;
    if (text == "mean") {
        s.kind = Kind::mean;
        return s;
    }
    const std::string prefix = "quantile:";
    if (text.rfind(prefix, 0) == 0) {
        char* end = nullptr;
        const std::string num = text.substr(prefix.size());
        const double q = std::strtod(num.c_str(), &end);
        if (!num.empty() && end && *end == '\0' && q >= 0.0 && q <= 1.0) {
            s.kind = Kind::quantile;
            s.q = q;
            return s;
        }
    }
    throw std::invalid_argument("'" + text +
                                "' is not a ceiling statistic (max, mean or quantile:q with "
                                "0 <= q <= 1)");
}

double CeilingStat::apply(std::vector<double> values) const {
    std::erase_if(values, [](double v) { return std::isnan(v); });
    if (values.empty()) return kNaN;
    switch (kind) {
        case Kind::max:
            return *std::max_element(values.begin(), values.end());
        case Kind::mean:
            return stats::mean(values);
        case Kind::quantile:
            return stats::quantile(std::move(values), q);
    }
    return kNaN;
}

std::map<ParadigmPair, double> ceilings(std::span<const GridPair> grid, const CeilingStat& stat) {
    std::map<ParadigmPair, std::vector<double>> by;
    for (const auto& g : grid) by[{g.paradigm_a, g.paradigm_b}].push_back(g.ease);
    std::map<ParadigmPair, double> out;
    for (auto& [key, values] : by) out[key] = stat.apply(std::move(values));
    return out;
}

CeilingVariant ceiling_variant(const std::string& name) {
    for (std::size_t i = 0; i < std::size(kCeilingVariantNames); ++i)
        if (name == kCeilingVariantNames[i]) return static_cast<CeilingVariant>(i);
    throw std::invalid_argument("'" + name +
                                "' is not a ceiling variant (pair, paradigm or leave_pair_out)");
}

namespace {
// stat over the eases of the rows `rows` of the grid, without row `skip` (none: npos).
double stat_of(std::span<const GridPair> grid, const std::vector<std::size_t>& rows,
               const CeilingStat& stat, std::size_t skip = static_cast<std::size_t>(-1)) {
    std::vector<double> v;
    for (std::size_t r : rows)
        if (r != skip) v.push_back(grid[r].ease);
    return stat.apply(std::move(v));
}
}  // namespace

std::vector<double> ceiling_per_row(std::span<const GridPair> grid, const CeilingStat& stat,
                                    CeilingVariant variant) {
    std::map<ParadigmPair, std::vector<std::size_t>> cell;
    std::map<std::string, std::vector<std::size_t>> side_a, side_b;
    for (std::size_t i = 0; i < grid.size(); ++i) {
        cell[{grid[i].paradigm_a, grid[i].paradigm_b}].push_back(i);
        side_a[grid[i].paradigm_a].push_back(i);
        side_b[grid[i].paradigm_b].push_back(i);
    }
    const auto per_pair = ceilings(grid, stat);
    std::vector<double> out(grid.size());
    for (std::size_t i = 0; i < grid.size(); ++i) {
        const auto& rows = cell.at({grid[i].paradigm_a, grid[i].paradigm_b});
        switch (variant) {
            case CeilingVariant::pair:
                out[i] = per_pair.at({grid[i].paradigm_a, grid[i].paradigm_b});
                break;
            case CeilingVariant::paradigm: {
                const double a = stat_of(grid, side_a.at(grid[i].paradigm_a), stat);
                const double b = stat_of(grid, side_b.at(grid[i].paradigm_b), stat);
                out[i] = std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
                break;
            }
            case CeilingVariant::leave_pair_out:
                out[i] = stat_of(grid, rows, stat, i);
                break;
        }
    }
    return out;
}

namespace {
// 1-based ranks, highest value first; NaN gets no rank (0).
std::vector<std::int64_t> ranks_or_zero(const std::vector<double>& values) {
    std::vector<std::int64_t> r = stats::ranks_descending(values);
    for (std::size_t i = 0; i < values.size(); ++i)
        if (std::isnan(values[i])) r[i] = 0;
    return r;
}
}  // namespace

ParadigmTable paradigm_table(std::span<const GridPair> alignment_grid,
                             std::span<const GridPair> merge_grid, const CeilingStat& stat) {
    const auto ac = ceilings(alignment_grid, stat);
    const auto mc = ceilings(merge_grid, stat);
    std::set<std::string> paradigms;
    for (const auto& [k, v] : ac) paradigms.insert(k.first);
    for (const auto& [k, v] : mc) paradigms.insert(k.first);
    ParadigmTable t;
    t.paradigm.assign(paradigms.begin(), paradigms.end());
    for (const auto& p : t.paradigm) {
        double sum = 0.0, best = kNaN;
        int n = 0;
        for (const auto& [k, v] : ac) {
            if (k.first != p || std::isnan(v)) continue;
            sum += v;
            ++n;
            best = std::isnan(best) ? v : std::max(best, v);
        }
        t.alignment_mean.push_back(n ? sum / n : kNaN);
        t.alignment_max.push_back(best);
        const auto it = mc.find({p, p});
        t.merging.push_back(it == mc.end() ? kNaN : it->second);
    }
    t.alignment_rank = ranks_or_zero(t.alignment_mean);
    t.merging_rank = ranks_or_zero(t.merging);
    return t;
}

std::vector<std::string> regions(std::span<const double> ease, std::span<const double> ceiling) {
    if (ease.size() != ceiling.size())
        throw std::invalid_argument("regions: ease and ceiling differ in length");
    const double me = stats::median({ease.begin(), ease.end()});
    const double mc = stats::median({ceiling.begin(), ceiling.end()});
    std::vector<std::string> out;
    out.reserve(ease.size());
    for (std::size_t i = 0; i < ease.size(); ++i) {
        if (std::isnan(ease[i]) || std::isnan(ceiling[i])) {
            out.emplace_back("undefined");
            continue;
        }
        const bool high_e = ease[i] >= me;
        const bool high_c = ceiling[i] >= mc;
        out.emplace_back(high_e ? (high_c ? kRegionNames[0] : kRegionNames[2])
                                : (high_c ? kRegionNames[1] : kRegionNames[3]));
    }
    return out;
}

std::vector<std::size_t> select_covering(std::span<const Candidate> candidates, std::size_t count,
                                         std::uint64_t seed) {
    const std::size_t n = candidates.size();
    if (count >= n) {
        std::vector<std::size_t> all(n);
        std::iota(all.begin(), all.end(), 0);
        return all;
    }
    const auto order = permutation(n, seed);
    std::vector<bool> taken(n, false);
    std::set<std::string> fam_a, fam_b;
    std::set<std::pair<std::string, std::string>> combos;
    std::size_t picked = 0;
    const auto take = [&](std::size_t i) {
        taken[i] = true;
        fam_a.insert(candidates[i].family_a);
        fam_b.insert(candidates[i].family_b);
        combos.insert({candidates[i].family_a, candidates[i].family_b});
        ++picked;
    };
    // 1. Cover every family of either side (a candidate that adds a new family on both
    //    sides first, then one new family).
    for (int want = 2; want >= 1; --want) {
        for (std::size_t i : order) {
            if (picked == count) break;
            if (taken[i]) continue;
            const int fresh =
                !fam_a.count(candidates[i].family_a) + !fam_b.count(candidates[i].family_b);
            if (fresh >= want) take(i);
        }
    }
    // 2. One per family combination not yet taken, 3. the rest.
    for (std::size_t i : order) {
        if (picked == count) break;
        if (!taken[i] && !combos.count({candidates[i].family_a, candidates[i].family_b})) take(i);
    }
    for (std::size_t i : order) {
        if (picked == count) break;
        if (!taken[i]) take(i);
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < n; ++i)
        if (taken[i]) out.push_back(i);
    return out;
}

std::size_t best_position(std::span<const std::size_t> order, std::span<const double> target) {
    std::size_t best = 0;
    double value = -std::numeric_limits<double>::infinity();
    for (std::size_t m = 0; m < order.size(); ++m) {
        const double t = target[order[m]];
        if (!std::isnan(t) && t > value) {
            value = t;
            best = m + 1;
        }
    }
    return best;
}

std::vector<double> best_so_far(std::span<const std::size_t> order,
                                std::span<const double> target) {
    std::vector<double> out;
    out.reserve(order.size());
    double value = kNaN;
    for (std::size_t i : order) {
        const double t = target[i];
        if (!std::isnan(t) && (std::isnan(value) || t > value)) value = t;
        out.push_back(value);
    }
    return out;
}

std::size_t OneHot::width() const {
    std::size_t w = 0;
    for (const auto& l : levels) w += l.size();
    return w;
}

std::vector<double> OneHot::encode(std::span<const std::string> row) const {
    std::vector<double> out(width(), 0.0);
    std::size_t offset = 0;
    for (std::size_t f = 0; f < levels.size(); ++f) {
        const auto it = std::lower_bound(levels[f].begin(), levels[f].end(), row[f]);
        if (it != levels[f].end() && *it == row[f])
            out[offset + static_cast<std::size_t>(it - levels[f].begin())] = 1.0;
        offset += levels[f].size();
    }
    return out;
}

OneHot fit_one_hot(std::span<const std::vector<std::string>> rows,
                   std::span<const std::size_t> fit_rows) {
    OneHot h;
    if (rows.empty()) return h;
    h.levels.resize(rows.front().size());
    for (std::size_t f = 0; f < h.levels.size(); ++f) {
        std::set<std::string> s;
        for (std::size_t r : fit_rows) s.insert(rows[r][f]);
        h.levels[f].assign(s.begin(), s.end());
    }
    return h;
}

std::vector<double> ridge_predict(std::span<const std::vector<std::string>> features,
                                  std::span<const double> target,
                                  std::span<const std::size_t> fit_rows,
                                  std::span<const std::size_t> predict_rows, double alpha) {
    const OneHot h = fit_one_hot(features, fit_rows);
    const auto w = static_cast<Eigen::Index>(h.width());
    const auto n = static_cast<Eigen::Index>(fit_rows.size());
    Eigen::MatrixXd x(n, w);
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
        const auto row = h.encode(features[fit_rows[static_cast<std::size_t>(i)]]);
        x.row(i) = Eigen::Map<const Eigen::RowVectorXd>(row.data(), w);
        y[i] = target[fit_rows[static_cast<std::size_t>(i)]];
    }
    // Centre to leave the intercept unpenalised.
    const Eigen::RowVectorXd xm =
        n ? Eigen::RowVectorXd(x.colwise().mean()) : Eigen::RowVectorXd::Zero(w);
    const double ym = n ? y.mean() : 0.0;
    const Eigen::MatrixXd xc = x.rowwise() - xm;
    Eigen::MatrixXd gram = xc.transpose() * xc;
    gram.diagonal().array() += alpha;
    const Eigen::VectorXd beta = gram.ldlt().solve(xc.transpose() * (y.array() - ym).matrix());
    std::vector<double> out;
    out.reserve(predict_rows.size());
    for (std::size_t r : predict_rows) {
        const auto row = h.encode(features[r]);
        const Eigen::Map<const Eigen::RowVectorXd> xr(row.data(), w);
        out.push_back(ym + (xr - xm).dot(beta.transpose()));
    }
    return out;
}

std::vector<double> kfold_predictions(std::span<const std::vector<std::string>> features,
                                      std::span<const double> target, int folds, double alpha,
                                      std::uint64_t seed) {
    const std::size_t n = target.size();
    const auto order = permutation(n, seed);
    std::vector<double> out(n, kNaN);
    const auto k = static_cast<std::size_t>(std::max(2, folds));
    for (std::size_t f = 0; f < k; ++f) {
        std::vector<std::size_t> fit, test;
        for (std::size_t i = 0; i < n; ++i) (i % k == f ? test : fit).push_back(order[i]);
        if (test.empty() || fit.empty()) continue;
        const auto pred = ridge_predict(features, target, fit, test, alpha);
        for (std::size_t i = 0; i < test.size(); ++i) out[test[i]] = pred[i];
    }
    return out;
}

std::vector<HeldOut> leave_group_out(std::span<const std::vector<std::string>> features,
                                     std::span<const double> target,
                                     std::span<const std::vector<std::string>> groups,
                                     double alpha) {
    std::set<std::string> labels;
    for (const auto& g : groups) labels.insert(g.begin(), g.end());
    std::vector<HeldOut> out;
    for (const auto& label : labels) {
        HeldOut h;
        h.label = label;
        std::vector<std::size_t> fit;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            const bool in = std::find(groups[i].begin(), groups[i].end(), label) != groups[i].end();
            (in ? h.rows : fit).push_back(i);
        }
        if (fit.empty()) continue;
        h.predicted = ridge_predict(features, target, fit, h.rows, alpha);
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace compatbench::compass
