// Analysis `prism`: the tables of the PRISM study (methods.md §3) from a `kway_merge` group,
// and the drift fit from a second one merged along fine-tuning checkpoints.
//   operators  mean merged accuracy, retention, destructive share, update norm (% of the
//              mean task vector's) and kept fraction per operator and coefficient (κ = 1)
//   by_k       the same per operator and K at one coefficient (`coef`)
//   kappa      the κ sweep of PRISM, PRISM-hard and the norm-matched mean at `kappa_coef`
//   ablation   paired differences of merged accuracy on the same (backbone, K, c, step):
//              PRISM − PRISM-hard, PRISM − norm-matched, PRISM − TA, TIES − TA, DARE − TA;
//              wins, losses, ties and the two-sided sign-test p
//   drift      per backbone (and pooled, "all"): the exponent b of score ≈ a·steps^b fitted
//              by least squares on logs, with r², first and last score, and whether the last
//              checkpoint's merges were destructive (PRISM reports b ≈ 1/2 against tokens)
//
//   - {name: prism, kind: prism, study: prism, input: prism_merges, drift: drift_merges,
//      coef: 1.0, kappa_coef: 1.0}
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analyses/analysis_kind.h"
#include "config/config.h"
#include "stats/fit.h"

namespace compatbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<std::string> kMethodOrder = {"task_arithmetic", "ties",        "dare",
                                               "slerp",           "model_stock", "prism",
                                               "prism_hard",      "norm_matched"};

std::size_t method_rank(const std::string& m) {
    return static_cast<std::size_t>(std::find(kMethodOrder.begin(), kMethodOrder.end(), m) -
                                    kMethodOrder.begin());
}

double mean_of(const std::vector<double>& v, const std::vector<std::size_t>& rows) {
    double s = 0;
    std::size_t n = 0;
    for (std::size_t i : rows)
        if (!std::isnan(v[i])) s += v[i], ++n;
    return n ? s / static_cast<double>(n) : kNaN;
}

double sd_of(const std::vector<double>& v, const std::vector<std::size_t>& rows) {
    const double m = mean_of(v, rows);
    double s = 0;
    std::size_t n = 0;
    for (std::size_t i : rows)
        if (!std::isnan(v[i])) s += (v[i] - m) * (v[i] - m), ++n;
    return n > 1 ? std::sqrt(s / static_cast<double>(n - 1)) : kNaN;
}

const std::vector<std::string> kNeeded = {
    "backbone",   "step",          "k",           "method",       "coef",
    "kappa",      "merged_mean",   "base_mean",   "retention",    "destructive",
    "update_pct", "keep_fraction", "lambda_mean", "interference", "screen_score"};

// The columns of one kway_merge group, read once.
struct Merges {
    std::vector<std::string> backbone, method, members;
    std::map<std::string, std::vector<double>> num;
    explicit Merges(const AnalysisInput& in) {
        backbone = in.texts("backbone");
        method = in.texts("method");
        members = in.texts("members");
        for (const auto& c : kNeeded)
            if (c != "backbone" && c != "method") num[c] = in.numbers(c);
    }
    const std::vector<double>& operator[](const std::string& c) const { return num.at(c); }
    std::size_t size() const { return backbone.size(); }
};

class PrismAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "prism"; }
    std::vector<KeyRule> keys() const override {
        return {{"drift", KeyType::string, false, 0, 0, {}},
                {"coef", KeyType::real, false, 0, 100, {}},
                {"kappa_coef", KeyType::real, false, 0, 100, {}}};
    }
    std::vector<std::string> extra_inputs(const AnalysisSpec& spec) const override {
        if (spec.node["drift"]) return {spec.node["drift"].Scalar()};
        return {};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& input,
               const GroupColumns& groups, const YamlChecker& yc) const override {
        const auto need = [&](const std::vector<ColumnSpec>& cols, const YAML::Node& node,
                              const std::string& path, const std::string& group) {
            for (const auto& c : kNeeded)
                if (std::none_of(cols.begin(), cols.end(),
                                 [&](const ColumnSpec& s) { return s.name == c; }))
                    yc.fail(node, path,
                            "group '" + group + "' has no column '" + c + "' (kind kway_merge)");
        };
        const std::string base = "analyses." + spec.name;
        need(input, spec.node["input"], base + ".input", spec.input);
        if (spec.node["drift"]) {
            const std::string d = spec.node["drift"].Scalar();
            need(groups.at(d), spec.node["drift"], base + ".drift", d);
        }
    }

    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const Merges m(input);
        const double coef_at = spec.node["coef"] ? spec.node["coef"].as<double>() : 1.0;
        const double kappa_coef =
            spec.node["kappa_coef"] ? spec.node["kappa_coef"].as<double>() : 1.0;
        const auto& kappa = m["kappa"];
        const auto& coef = m["coef"];
        const auto main_kappa = [&](std::size_t i) { return kappa[i] == 0.0 || kappa[i] == 1.0; };
        const auto close = [](double a, double b) { return std::abs(a - b) < 1e-12; };

        // Rows grouped by an ordered key.
        using Key = std::tuple<std::size_t, double, std::string>;
        const auto grouped = [&](auto&& keep, auto&& key) {
            std::map<Key, std::vector<std::size_t>> g;
            for (std::size_t i = 0; i < m.size(); ++i)
                if (keep(i)) g[key(i)].push_back(i);
            return g;
        };
        std::vector<TableData> out;

        TableData ops = TableData::make("operators", {{"method", ColumnType::str, 0},
                                                      {"coef", ColumnType::f64, 0},
                                                      {"n", ColumnType::i64, 0},
                                                      {"merged_mean", ColumnType::f64, 0},
                                                      {"merged_sd", ColumnType::f64, 0},
                                                      {"base_mean", ColumnType::f64, 0},
                                                      {"retention", ColumnType::f64, 0},
                                                      {"destructive", ColumnType::f64, 0},
                                                      {"update_pct", ColumnType::f64, 0},
                                                      {"keep_fraction", ColumnType::f64, 0}});
        for (const auto& [key, rows] :
             grouped([&](std::size_t i) { return main_kappa(i); },
                     [&](std::size_t i) {
                         return Key{method_rank(m.method[i]), coef[i], ""};
                     })) {
            ops.add_row({kMethodOrder[std::get<0>(key)], std::get<1>(key),
                         static_cast<std::int64_t>(rows.size()), mean_of(m["merged_mean"], rows),
                         sd_of(m["merged_mean"], rows), mean_of(m["base_mean"], rows),
                         mean_of(m["retention"], rows), mean_of(m["destructive"], rows),
                         mean_of(m["update_pct"], rows), mean_of(m["keep_fraction"], rows)});
        }
        out.push_back(ops);

        TableData byk = TableData::make("by_k", {{"method", ColumnType::str, 0},
                                                 {"k", ColumnType::i64, 0},
                                                 {"n", ColumnType::i64, 0},
                                                 {"merged_mean", ColumnType::f64, 0},
                                                 {"base_mean", ColumnType::f64, 0},
                                                 {"retention", ColumnType::f64, 0},
                                                 {"destructive", ColumnType::f64, 0},
                                                 {"interference", ColumnType::f64, 0},
                                                 {"screen_score", ColumnType::f64, 0}});
        const auto& kcol = m["k"];
        for (const auto& [key, rows] :
             grouped([&](std::size_t i) { return main_kappa(i) && close(coef[i], coef_at); },
                     [&](std::size_t i) {
                         return Key{method_rank(m.method[i]), kcol[i], ""};
                     })) {
            byk.add_row({kMethodOrder[std::get<0>(key)],
                         static_cast<std::int64_t>(std::get<1>(key)),
                         static_cast<std::int64_t>(rows.size()), mean_of(m["merged_mean"], rows),
                         mean_of(m["base_mean"], rows), mean_of(m["retention"], rows),
                         mean_of(m["destructive"], rows), mean_of(m["interference"], rows),
                         mean_of(m["screen_score"], rows)});
        }
        if (byk.rows() == 0) note("by_k: no merge at coef " + std::to_string(coef_at));
        out.push_back(byk);

        TableData kap = TableData::make("kappa", {{"method", ColumnType::str, 0},
                                                  {"kappa", ColumnType::f64, 0},
                                                  {"n", ColumnType::i64, 0},
                                                  {"merged_mean", ColumnType::f64, 0},
                                                  {"retention", ColumnType::f64, 0},
                                                  {"destructive", ColumnType::f64, 0},
                                                  {"update_pct", ColumnType::f64, 0},
                                                  {"keep_fraction", ColumnType::f64, 0},
                                                  {"lambda_mean", ColumnType::f64, 0}});
        for (const auto& [key, rows] :
             grouped([&](std::size_t i) { return kappa[i] > 0 && close(coef[i], kappa_coef); },
                     [&](std::size_t i) {
                         return Key{method_rank(m.method[i]), kappa[i], ""};
                     })) {
            kap.add_row({kMethodOrder[std::get<0>(key)], std::get<1>(key),
                         static_cast<std::int64_t>(rows.size()), mean_of(m["merged_mean"], rows),
                         mean_of(m["retention"], rows), mean_of(m["destructive"], rows),
                         mean_of(m["update_pct"], rows), mean_of(m["keep_fraction"], rows),
                         mean_of(m["lambda_mean"], rows)});
        }
        out.push_back(kap);

        // Paired ablations: the same backbone, step, K and c (κ = 1 for the PRISM family).
        TableData abl = TableData::make("ablation", {{"a", ColumnType::str, 0},
                                                     {"b", ColumnType::str, 0},
                                                     {"n", ColumnType::i64, 0},
                                                     {"mean_diff", ColumnType::f64, 0},
                                                     {"sd_diff", ColumnType::f64, 0},
                                                     {"wins", ColumnType::i64, 0},
                                                     {"losses", ColumnType::i64, 0},
                                                     {"ties", ColumnType::i64, 0},
                                                     {"sign_p", ColumnType::f64, 0}});
        std::map<std::tuple<std::string, double, double, double, std::string>, std::size_t> at;
        for (std::size_t i = 0; i < m.size(); ++i)
            if (main_kappa(i)) at[{m.backbone[i], m["step"][i], kcol[i], coef[i], m.method[i]}] = i;
        const std::pair<const char*, const char*> pairs[] = {{"prism", "prism_hard"},
                                                             {"prism", "norm_matched"},
                                                             {"prism", "task_arithmetic"},
                                                             {"ties", "task_arithmetic"},
                                                             {"dare", "task_arithmetic"}};
        for (const auto& [a, b] : pairs) {
            std::vector<double> d;
            for (const auto& [key, i] : at) {
                if (std::get<4>(key) != a) continue;
                auto other = key;
                std::get<4>(other) = b;
                const auto j = at.find(other);
                if (j == at.end()) continue;
                d.push_back(m["merged_mean"][i] - m["merged_mean"][j->second]);
            }
            if (d.empty()) continue;
            std::vector<std::size_t> all(d.size());
            for (std::size_t i = 0; i < d.size(); ++i) all[i] = i;
            const auto s = stats::sign_test(d);
            abl.add_row({std::string(a), std::string(b), static_cast<std::int64_t>(d.size()),
                         mean_of(d, all), sd_of(d, all), s.wins, s.losses, s.ties, s.p});
        }
        out.push_back(abl);

        if (spec.node["drift"])
            out.push_back(drift_table(input.other(spec.node["drift"].Scalar()), note));
        return out;
    }

  private:
    static TableData drift_table(const AnalysisInput& in, const AnalysisNote& note) {
        const Merges d(in);
        TableData t = TableData::make("drift", {{"backbone", ColumnType::str, 0},
                                                {"members", ColumnType::str, 0},
                                                {"n", ColumnType::i64, 0},
                                                {"exponent", ColumnType::f64, 0},
                                                {"prefactor", ColumnType::f64, 0},
                                                {"r2", ColumnType::f64, 0},
                                                {"first_step", ColumnType::i64, 0},
                                                {"last_step", ColumnType::i64, 0},
                                                {"first_score", ColumnType::f64, 0},
                                                {"last_score", ColumnType::f64, 0},
                                                {"last_merged_mean", ColumnType::f64, 0},
                                                {"last_destructive", ColumnType::i64, 0}});
        std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by;
        std::vector<std::size_t> everything;
        for (std::size_t i = 0; i < d.size(); ++i) {
            by[{d.backbone[i], d.members[i]}].push_back(i);
            everything.push_back(i);
        }
        const auto& step = d["step"];
        const auto& score = d["screen_score"];
        const auto add = [&](const std::string& bb, const std::string& members,
                             std::vector<std::size_t> rows) {
            std::stable_sort(rows.begin(), rows.end(),
                             [&](std::size_t a, std::size_t b) { return step[a] < step[b]; });
            std::vector<double> x, y;
            for (std::size_t i : rows) x.push_back(step[i]), y.push_back(score[i]);
            const auto f = stats::power_law_fit(x, y);
            if (!f.ok()) note("drift " + bb + ": " + f.reason);
            // First and last checkpoint: means over the rows at that step (one per backbone).
            const double s0 = step[rows.front()], s1 = step[rows.back()];
            std::vector<std::size_t> at0, at1;
            for (std::size_t i : rows) {
                if (step[i] == s0) at0.push_back(i);
                if (step[i] == s1) at1.push_back(i);
            }
            std::int64_t destructive = 0;
            for (std::size_t i : at1) destructive += d["destructive"][i] != 0.0;
            t.add_row({bb, members, static_cast<std::int64_t>(f.n), f.exponent, f.prefactor, f.r2,
                       static_cast<std::int64_t>(s0), static_cast<std::int64_t>(s1),
                       mean_of(score, at0), mean_of(score, at1), mean_of(d["merged_mean"], at1),
                       destructive});
        };
        for (const auto& [key, rows] : by) add(key.first, key.second, rows);
        if (by.size() > 1) add("all", "", everything);
        return t;
    }
};
}  // namespace

const AnalysisKind& prism_analysis() {
    static const PrismAnalysis kind;
    return kind;
}

}  // namespace compatbench
