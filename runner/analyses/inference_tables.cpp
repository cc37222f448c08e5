// The tables of analyses/inference.h: intervals, claims and baselines over a frame's rows.
#include <cmath>
#include <cstdlib>
#include <map>

#include "analyses/inference.h"
#include "common/hash.h"
#include "compass/screening.h"
#include "stats/correlation.h"
#include "stats/fit.h"
#include "stats/summary.h"

namespace compatbench {

namespace {

// Finite x (and y, when given) at `rows`: the rows a statistic of them can use.
std::vector<std::size_t> finite_rows(const std::vector<std::size_t>& rows,
                                     const std::vector<const std::vector<double>*>& columns) {
    std::vector<std::size_t> out;
    for (std::size_t r : rows)
        if (std::all_of(columns.begin(), columns.end(),
                        [&](const std::vector<double>* c) { return std::isfinite((*c)[r]); }))
            out.push_back(r);
    return out;
}

std::vector<std::size_t> all_rows(std::size_t n) {
    std::vector<std::size_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = i;
    return out;
}

// The frame's rows named by the resample's positions into `rows`.
std::vector<std::size_t> mapped(std::span<const std::size_t> positions,
                                const std::vector<std::size_t>& rows) {
    std::vector<std::size_t> out;
    out.reserve(positions.size());
    for (std::size_t i : positions) out.push_back(rows[i]);
    return out;
}

std::string first_reason(std::initializer_list<std::string> reasons) {
    for (const auto& r : reasons)
        if (!r.empty()) return r;
    return {};
}

// The rows of the frame whose columns hold the claim's `where` values (numbers compared as
// numbers).
std::vector<std::size_t> where_rows(const Frame& frame, const ClaimSpec& k) {
    std::vector<std::size_t> rows = all_rows(frame.table.rows());
    for (const auto& [column, want] : k.where) {
        const auto texts = frame.texts(column);
        std::vector<double> numbers;
        try {
            numbers = frame.numbers(column);
        } catch (const std::invalid_argument&) {
        }
        char* end = nullptr;
        const double number = std::strtod(want.c_str(), &end);
        if (!numbers.empty() && (want.empty() || *end != '\0'))
            throw std::invalid_argument("where: column '" + column + "' holds numbers, not '" +
                                        want + "'");
        std::vector<std::size_t> kept;
        for (std::size_t r : rows)
            if (numbers.empty() ? texts[r] == want : numbers[r] == number) kept.push_back(r);
        rows = std::move(kept);
    }
    return rows;
}

// The p-value of the plain statistic on its rows: exact where n is small (methods.md §5.1).
double plain_p(const std::string& statistic, const std::vector<double>& x,
               const std::vector<double>& y, const std::vector<std::size_t>& rows) {
    auto px = stats::pick(x, rows);
    if (statistic == "mean") return stats::sign_test(px).p;
    const auto py = stats::pick(y, rows);
    if (statistic == "pearson") return stats::pearson(px, py).p;
    if (statistic == "spearman") return stats::spearman(px, py).p;
    if (statistic == "kendall") return stats::kendall(px, py).p;
    if (statistic == "mean_difference") {
        for (std::size_t i = 0; i < px.size(); ++i) px[i] -= py[i];
        return stats::sign_test(px).p;
    }
    std::vector<double> pos, neg;
    for (std::size_t i = 0; i < px.size(); ++i) (py[i] != 0.0 ? pos : neg).push_back(px[i]);
    return stats::mann_whitney(pos, neg).p;
}

// One statistic of x (minus the same of `baseline`, when given) against y over `used`:
// value, intervals and the reason it is undefined.
struct Measured {
    double value = stats::kNaN, baseline_value = stats::kNaN;
    Intervals iv;
    std::string clusters, reason;
};

Measured measure(const InferenceSettings& s, const Frame& frame, const std::string& statistic,
                 const std::vector<double>& x, const std::vector<double>& y,
                 const std::vector<double>* baseline, const std::vector<std::size_t>& used,
                 const std::string& salt) {
    Measured m;
    const auto design = cluster_design(s, frame, used);
    const auto stat = [&](std::span<const std::size_t> positions) {
        const auto rows = mapped(positions, used);
        const double v = statistic_of(statistic, x, y, rows);
        return baseline ? v - statistic_of(statistic, *baseline, y, rows) : v;
    };
    m.value = stat(all_rows(used.size()));
    if (baseline) m.baseline_value = statistic_of(statistic, *baseline, y, used);
    m.iv = intervals(s, design, stat, salt);
    m.clusters = design.describe();
    m.reason = std::isnan(m.value)
                   ? "the statistic is undefined on these " + std::to_string(used.size()) + " rows"
                   : m.iv.clustered.reason;
    return m;
}

}  // namespace

stats::ClusterDesign cluster_design(const InferenceSettings& s, const Frame& frame,
                                    const std::vector<std::size_t>& rows) {
    stats::ClusterDesign d;
    d.rows = rows.size();
    for (const auto& spec : s.clusters) {
        std::string name;
        std::vector<std::vector<std::string>> per_row(rows.size());
        for (const auto& c : spec.columns) {
            name += (name.empty() ? "" : "+") + c;
            const auto values = frame.texts(c);
            for (std::size_t i = 0; i < rows.size(); ++i)
                for (auto& part : split_list(values[rows[i]], spec.split))
                    per_row[i].push_back(std::move(part));
        }
        stats::ClusterFactor f;
        f.name = name;
        std::map<std::string, std::size_t> ids;
        for (const auto& labels : per_row) {
            f.members.emplace_back();
            for (const auto& l : labels) {
                const auto [it, fresh] = ids.emplace(l, f.labels.size());
                if (fresh) f.labels.push_back(l);
                f.members.back().push_back(it->second);
            }
        }
        for (std::size_t p = 0; p < d.factors.size() && !spec.within.empty(); ++p)
            if (d.factors[p].name == spec.within) f.parent = static_cast<int>(p);
        d.factors.push_back(std::move(f));
    }
    return d;
}

Intervals intervals(const InferenceSettings& s, const stats::ClusterDesign& design,
                    const stats::ResampleStatistic& statistic, const std::string& salt) {
    const std::uint64_t seed = fnv1a64(salt, s.seed);
    Intervals out;
    out.naive =
        stats::bootstrap_interval(stats::independent_rows(design.rows), s.draws, seed, statistic);
    if (s.clusters.empty())
        out.clustered.reason = "no clusters named";
    else
        out.clustered = stats::bootstrap_interval(design, s.draws, seed, statistic);
    return out;
}

double statistic_of(const std::string& statistic, const std::vector<double>& x,
                    const std::vector<double>& y, std::span<const std::size_t> rows) {
    auto px = stats::pick(x, rows);
    if (statistic == "mean") return stats::mean(px);
    const auto py = stats::pick(y, rows);
    if (statistic == "pearson") return stats::pearson(px, py).r;
    if (statistic == "spearman") return stats::spearman_rho(px, py);
    if (statistic == "kendall") return stats::kendall_tau(px, py);
    if (statistic == "mean_difference") {
        for (std::size_t i = 0; i < px.size(); ++i) px[i] -= py[i];
        return stats::mean(px);
    }
    std::vector<std::uint8_t> positive;
    for (double v : py) positive.push_back(v != 0.0);
    return compass::auroc(px, positive);
}

stats::ResampleStatistic statistic_over(const std::string& statistic, const std::vector<double>& x,
                                        const std::vector<double>& y,
                                        const std::vector<std::size_t>& rows) {
    return [statistic, &x, &y, &rows](std::span<const std::size_t> positions) {
        return statistic_of(statistic, x, y, mapped(positions, rows));
    };
}

void add_correlation_intervals(TableData& table, const InferenceSettings& s, const Frame& frame,
                               const RowsOf& rows) {
    const Frame t{table};
    const auto predictors = t.texts("predictor"), targets = t.texts("target");
    TableData added = TableData::make(
        table.path, {f64("pearson_naive_lo"), f64("pearson_naive_hi"), f64("pearson_cl_lo"),
                     f64("pearson_cl_hi"), f64("spearman_naive_lo"), f64("spearman_naive_hi"),
                     f64("spearman_cl_lo"), f64("spearman_cl_hi"), str("clusters"),
                     i64("undefined_draws"), str("interval_reason")});
    for (std::size_t i = 0; i < predictors.size(); ++i) {
        const auto x = frame.numbers(predictors[i]), y = frame.numbers(targets[i]);
        const auto used = finite_rows(rows(i), {&x, &y});
        const auto design = cluster_design(s, frame, used);
        std::vector<Intervals> iv;
        for (const std::string stat : {"pearson", "spearman"})
            iv.push_back(intervals(s, design, statistic_over(stat, x, y, used),
                                   stat + "/" + predictors[i] + "/" + targets[i]));
        const auto& [p, r] = std::tie(iv[0], iv[1]);
        added.add_row(
            {p.naive.lo, p.naive.hi, p.clustered.lo, p.clustered.hi, r.naive.lo, r.naive.hi,
             r.clustered.lo, r.clustered.hi, design.describe(),
             static_cast<std::int64_t>(std::max(p.clustered.undefined, r.clustered.undefined)),
             first_reason({p.clustered.reason, r.clustered.reason})});
    }
    for (std::size_t c = 0; c < added.columns.size(); ++c) {
        table.add_column(added.columns[c]);
        table.values.back() = std::move(added.values[c]);
    }
}

// One claim's row of the claims table (below).
static void add_claim(TableData& t, const InferenceSettings& s, const Frame& frame,
                      const ClaimSpec& k, const AnalysisNote& note);

TableData claims_table(const InferenceSettings& s, const Frame& frame, const std::string& path,
                       const AnalysisNote& note) {
    TableData t =
        TableData::make(path, {str("claim"),    str("statistic"),      str("x"),
                               str("y"),        str("baseline"),       i64("n"),
                               f64("value"),    f64("baseline_value"), f64("p"),
                               f64("naive_lo"), f64("naive_hi"),       f64("lo"),
                               f64("hi"),       str("clusters"),       i64("undefined_draws"),
                               str("paper"),    f64("band_lo"),        f64("band_hi"),
                               str("verdict"),  str("reason")});
    for (const auto& k : s.claims) {
        try {
            add_claim(t, s, frame, k, note);
        } catch (const std::invalid_argument& e) {  // a column the rows turned out not to have
            note("claim " + k.name + ": " + e.what());
            t.add_row({k.name,
                       k.statistic,
                       k.x,
                       k.y,
                       k.baseline,
                       std::int64_t{0},
                       stats::kNaN,
                       stats::kNaN,
                       stats::kNaN,
                       stats::kNaN,
                       stats::kNaN,
                       stats::kNaN,
                       stats::kNaN,
                       std::string(),
                       std::int64_t{0},
                       k.paper,
                       k.band.lo,
                       k.band.hi,
                       std::string("untested"),
                       std::string(e.what())});
        }
    }
    return t;
}

void add_claim(TableData& t, const InferenceSettings& s, const Frame& frame, const ClaimSpec& k,
               const AnalysisNote& note) {
    const auto x = frame.numbers(k.x);
    const auto y = k.y.empty() ? x : frame.numbers(k.y);
    const auto b = k.baseline.empty() ? std::vector<double>{} : frame.numbers(k.baseline);
    std::vector<const std::vector<double>*> need = {&x, &y};
    if (!b.empty()) need.push_back(&b);
    const auto used = finite_rows(where_rows(frame, k), need);
    const auto m =
        measure(s, frame, k.statistic, x, y, b.empty() ? nullptr : &b, used, "claim/" + k.name);
    const double p = b.empty() ? plain_p(k.statistic, x, y, used) : stats::kNaN;
    const auto verdict = stats::judge(m.iv.clustered.lo, m.iv.clustered.hi, k.band);
    if (!m.reason.empty()) note("claim " + k.name + ": " + m.reason);
    t.add_row({k.name,
               k.statistic,
               k.x,
               k.y,
               k.baseline,
               static_cast<std::int64_t>(used.size()),
               m.value,
               m.baseline_value,
               p,
               m.iv.naive.lo,
               m.iv.naive.hi,
               m.iv.clustered.lo,
               m.iv.clustered.hi,
               m.clusters,
               static_cast<std::int64_t>(m.iv.clustered.undefined),
               k.paper,
               k.band.lo,
               k.band.hi,
               stats::verdict_name(verdict),
               m.reason});
}

TableData baselines_table(const InferenceSettings& s, const Frame& frame,
                          const std::vector<std::string>& targets, const std::string& label,
                          const std::string& path) {
    TableData t =
        TableData::make(path, {str("predictor"), str("baseline"), str("target"), str("statistic"),
                               i64("n"), f64("value"), f64("baseline_value"), f64("difference"),
                               f64("naive_lo"), f64("naive_hi"), f64("lo"), f64("hi"),
                               str("clusters"), i64("undefined_draws"), str("reason")});
    std::vector<std::pair<std::string, std::string>> jobs;  // (target, statistic)
    for (const auto& target : targets)
        for (const char* stat : {"pearson", "spearman"}) jobs.emplace_back(target, stat);
    if (targets.empty()) jobs.emplace_back(label, "auroc");
    for (const auto& [predictor, baselines] : s.baselines)
        for (const auto& base : baselines)
            for (const auto& [target, stat] : jobs) {
                const auto x = frame.numbers(predictor), b = frame.numbers(base),
                           y = frame.numbers(target);
                const auto used = finite_rows(all_rows(frame.table.rows()), {&x, &b, &y});
                const auto m =
                    measure(s, frame, stat, x, y, &b, used,
                            "baseline/" + predictor + "/" + base + "/" + target + "/" + stat);
                t.add_row({predictor, base, target, stat, static_cast<std::int64_t>(used.size()),
                           statistic_of(stat, x, y, used), m.baseline_value, m.value, m.iv.naive.lo,
                           m.iv.naive.hi, m.iv.clustered.lo, m.iv.clustered.hi, m.clusters,
                           static_cast<std::int64_t>(m.iv.clustered.undefined), m.reason});
            }
    return t;
}

}  // namespace compatbench
