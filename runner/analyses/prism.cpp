// Analysis `prism`: the tables of the PRISM study (methods.md §3) from a `kway_merge` group,
// and the drift fit from a second one merged along fine-tuning checkpoints.
//   operators  mean merged accuracy, retention, destructive share, update norm (% of the
//              mean task vector's) and kept fraction per operator and coefficient (κ = 1)
//   by_k       the same per operator and K at one coefficient (`coef`)
//   kappa      the κ sweep of PRISM, PRISM-hard and the norm-matched mean at `kappa_coef`
//   ablation   paired differences of merged accuracy on the same (backbone, K, c, step):
//              PRISM − PRISM-hard, PRISM − norm-matched, PRISM − TA, TIES − TA, DARE − TA;
//              wins, losses, ties and the two-sided sign-test p; with `clusters:` the mean
//              difference's naive and clustered 95% intervals (naive_lo .. interval_reason)
//   drift      per backbone (and pooled, "all"): the exponent b of score ≈ a·steps^b fitted
//              by least squares on logs, with its 95% interval (Student t) and r², first and
//              last score, and whether the last checkpoint's merges were destructive (PRISM
//              reports b ≈ 1/2 against tokens); `drift_band: [0.4, 0.6]` judges each interval
//              against the band (agrees, disagrees, inconclusive; methods.md §5.3)
//
//   recovery   with `recovery_threshold` (a screening threshold given in advance): per backbone
//              and c, and over every backbone ("all"), PRISM − TA on the merges task
//              arithmetic destroys (sign test), and screen-then-merge (PRISM where the TA
//              merge's screening score is above the threshold, else TA) against always
//              one or the other
//
//   recovery_pairs  every task-arithmetic merge beside PRISM's at the same place: ta, prism,
//              base, norm_matched (merged accuracies; the norm-matched mean NaN where the grid
//              has none), destroyed (TA's merge destructive), and the paired differences
//              prism_minus_ta, prism_minus_base and prism_minus_norm_matched; with `claims:`
//              (and `clusters:`) judged as analyses/inference.h says, in `recovery_claims`
//
//   - {name: prism, kind: prism, study: prism, input: prism_merges, drift: drift_merges,
//      coef: 1.0, kappa_coef: 1.0, recovery_threshold: 1.9e-3}
#include <algorithm>
#include <map>

#include "analyses/analysis_kind.h"
#include "analyses/inference.h"
#include "config/config.h"
#include "prism/analysis.h"
#include "stats/verdict.h"

namespace compatbench {

namespace {

const std::vector<std::string> kNeeded = {
    "backbone",   "step",          "k",           "method",       "coef",
    "kappa",      "merged_mean",   "base_mean",   "retention",    "destructive",
    "update_pct", "keep_fraction", "lambda_mean", "interference", "screen_score"};

prism::Merges read_merges(const AnalysisInput& in) {
    prism::Merges m;
    m.backbone = in.texts("backbone");
    m.method = in.texts("method");
    m.members = in.texts("members");
    const std::pair<const char*, std::vector<double>*> numbers[] = {
        {"step", &m.step},
        {"k", &m.k},
        {"coef", &m.coef},
        {"kappa", &m.kappa},
        {"merged_mean", &m.merged_mean},
        {"base_mean", &m.base_mean},
        {"retention", &m.retention},
        {"destructive", &m.destructive},
        {"update_pct", &m.update_pct},
        {"keep_fraction", &m.keep_fraction},
        {"lambda_mean", &m.lambda_mean},
        {"interference", &m.interference},
        {"screen_score", &m.screen_score}};
    for (const auto& [name, column] : numbers) *column = in.numbers(name);
    return m;
}

std::vector<TableData> tables(const prism::PrismResult& r) {
    TableData ops =
        TableData::make("operators", {str("method"), f64("coef"), i64("n"), f64("merged_mean"),
                                      f64("merged_sd"), f64("base_mean"), f64("retention"),
                                      f64("destructive"), f64("update_pct"), f64("keep_fraction")});
    for (const auto& o : r.operators)
        ops.add_row({o.method, o.coef, o.n, o.merged_mean, o.merged_sd, o.base_mean, o.retention,
                     o.destructive, o.update_pct, o.keep_fraction});
    TableData byk = TableData::make(
        "by_k", {str("method"), i64("k"), i64("n"), f64("merged_mean"), f64("base_mean"),
                 f64("retention"), f64("destructive"), f64("interference"), f64("screen_score")});
    for (const auto& k : r.by_k)
        byk.add_row({k.method, k.k, k.n, k.merged_mean, k.base_mean, k.retention, k.destructive,
                     k.interference, k.screen_score});
    TableData kap = TableData::make(
        "kappa", {str("method"), f64("kappa"), i64("n"), f64("merged_mean"), f64("retention"),
                  f64("destructive"), f64("update_pct"), f64("keep_fraction"), f64("lambda_mean")});
    for (const auto& k : r.kappa)
        kap.add_row({k.method, k.kappa, k.n, k.merged_mean, k.retention, k.destructive,
                     k.update_pct, k.keep_fraction, k.lambda_mean});
    TableData abl =
        TableData::make("ablation", {str("a"), str("b"), i64("n"), f64("mean_diff"), f64("sd_diff"),
                                     i64("wins"), i64("losses"), i64("ties"), f64("sign_p")});
    for (const auto& a : r.ablation)
        abl.add_row({a.a, a.b, a.n, a.mean_diff, a.sd_diff, a.sign.wins, a.sign.losses, a.sign.ties,
                     a.sign.p});
    return {ops, byk, kap, abl};
}

TableData recovery_table(const std::vector<prism::RecoveryRow>& rows) {
    TableData t = TableData::make(
        "recovery", {str("backbone"), f64("coef"), i64("n"), i64("ta_destroyed"),
                     f64("diff_destroyed"), i64("wins"), i64("losses"), i64("ties"), f64("sign_p"),
                     f64("diff_all"), i64("flagged"), f64("always_ta"), f64("always_prism"),
                     f64("screened"), i64("prism_destructive"), i64("screened_destructive")});
    for (const auto& r : rows)
        t.add_row({r.backbone, r.coef, r.n, r.ta_destroyed, r.diff_destroyed, r.sign.wins,
                   r.sign.losses, r.sign.ties, r.sign.p, r.diff_all, r.flagged, r.always_ta,
                   r.always_prism, r.screened, r.prism_destructive, r.screened_destructive});
    return t;
}

// With `drift_band: [lo, hi]` (a paper's exponent with its band, fixed before the run), each
// fit's 95% interval judged against it (methods.md §5.3).
TableData drift_table(const std::vector<prism::DriftRow>& rows, const YAML::Node& band) {
    TableData t = TableData::make(
        "drift", {str("backbone"), str("members"), i64("n"), f64("exponent"), f64("exponent_lo"),
                  f64("exponent_hi"), f64("prefactor"), f64("r2"), i64("first_step"),
                  i64("last_step"), f64("first_score"), f64("last_score"), f64("last_merged_mean"),
                  i64("last_destructive"), str("verdict")});
    for (const auto& d : rows) {
        std::string verdict;
        if (band)
            verdict =
                stats::verdict_name(stats::judge(d.fit.exponent_lo, d.fit.exponent_hi,
                                                 {band[0].as<double>(), band[1].as<double>()}));
        t.add_row({d.backbone, d.members, static_cast<std::int64_t>(d.fit.n), d.fit.exponent,
                   d.fit.exponent_lo, d.fit.exponent_hi, d.fit.prefactor, d.fit.r2, d.first_step,
                   d.last_step, d.first_score, d.last_score, d.last_merged_mean, d.last_destructive,
                   verdict});
    }
    return t;
}

const std::vector<std::string> kPairColumns = {"backbone",
                                               "step",
                                               "k",
                                               "members",
                                               "coef",
                                               "ta",
                                               "prism",
                                               "base",
                                               "norm_matched",
                                               "destroyed",
                                               "prism_minus_ta",
                                               "prism_minus_base",
                                               "prism_minus_norm_matched"};

// Task arithmetic's merge and PRISM's at each place: the frame PRISM's recovery is judged on,
// with the plain baselines beside (the base itself; the norm-matched mean where the grid has
// it, NaN elsewhere).
TableData recovery_pairs(const prism::Merges& m) {
    TableData t = TableData::make(
        "recovery_pairs",
        {str("backbone"), f64("step"), f64("k"), str("members"), f64("coef"), f64("ta"),
         f64("prism"), f64("base"), f64("norm_matched"), i64("destroyed"), f64("prism_minus_ta"),
         f64("prism_minus_base"), f64("prism_minus_norm_matched")});
    t.print = false;
    std::map<std::size_t, std::size_t> matched;  // PRISM's row -> the norm-matched mean's
    for (const auto& [p, n] : prism::paired_places(m, "prism", "norm_matched")) matched[p] = n;
    for (const auto& [i, j] : prism::paired_places(m, "task_arithmetic", "prism")) {
        const double nm = matched.count(j) ? m.merged_mean[matched.at(j)] : stats::kNaN;
        t.add_row({m.backbone[i], m.step[i], m.k[i], m.members[i], m.coef[i], m.merged_mean[i],
                   m.merged_mean[j], m.base_mean[i], nm, std::int64_t{m.destructive[i] != 0},
                   m.merged_mean[j] - m.merged_mean[i], m.merged_mean[j] - m.base_mean[i],
                   m.merged_mean[j] - nm});
    }
    return t;
}

// With `clusters:`, each ablation's mean paired difference gets its naive and clustered 95%
// intervals (methods.md §5.2): the merges of a pair share their members and backbone.
void add_ablation_intervals(TableData& abl, const prism::Merges& m,
                            const InferenceSettings& settings) {
    TableData added = TableData::make(
        abl.path, {f64("naive_lo"), f64("naive_hi"), f64("cl_lo"), f64("cl_hi"), str("clusters"),
                   i64("undefined_draws"), str("interval_reason")});
    const Frame names{abl};
    const auto as = names.texts("a"), bs = names.texts("b");
    for (std::size_t r = 0; r < as.size(); ++r) {
        TableData frame = TableData::make("pairs", {str("backbone"), str("members"), f64("d")});
        for (const auto& [i, j] : prism::paired_places(m, as[r], bs[r]))
            frame.add_row({m.backbone[i], m.members[i], m.merged_mean[i] - m.merged_mean[j]});
        const Frame f{frame};
        std::vector<std::size_t> rows(frame.rows());
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
        const auto d = f.numbers("d");
        try {
            const auto design = cluster_design(settings, f, rows);
            const auto iv = intervals(settings, design, statistic_over("mean", d, d, rows),
                                      "ablation/" + as[r] + "/" + bs[r]);
            added.add_row({iv.naive.lo, iv.naive.hi, iv.clustered.lo, iv.clustered.hi,
                           design.describe(), static_cast<std::int64_t>(iv.clustered.undefined),
                           iv.clustered.reason});
        } catch (const std::invalid_argument& e) {  // clusters on a column pairs do not keep
            added.add_row({stats::kNaN, stats::kNaN, stats::kNaN, stats::kNaN, std::string(),
                           std::int64_t{0}, std::string(e.what())});
        }
    }
    for (std::size_t c = 0; c < added.columns.size(); ++c) {
        abl.add_column(added.columns[c]);
        abl.values.back() = std::move(added.values[c]);
    }
}

class PrismAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "prism"; }
    std::vector<KeyRule> keys() const override {
        std::vector<KeyRule> keys = {
            {.name = "drift", .type = KeyType::string},
            {.name = "coef", .type = KeyType::real, .min = 0, .max = 100},
            {.name = "kappa_coef", .type = KeyType::real, .min = 0, .max = 100},
            {.name = "recovery_threshold", .type = KeyType::real, .min = 0, .max = 1e300},
            {.name = "drift_band", .type = KeyType::list}};
        for (auto& k : inference_keys()) keys.push_back(std::move(k));
        return keys;
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
        if (std::any_of(input.begin(), input.end(),
                        [](const ColumnSpec& c) { return c.name == "keep_floor"; }))
            yc.fail(spec.node["input"], base + ".input",
                    "group '" + spec.input +
                        "' sweeps keep floors (keep_floors): its merges of one place differ "
                        "by floor, which this analysis does not tell apart");
        if (spec.node["drift"]) {
            const std::string d = spec.node["drift"].Scalar();
            need(groups.at(d), spec.node["drift"], base + ".drift", d);
        }
        inference_settings(spec, kPairColumns, yc);
        if (const YAML::Node b = spec.node["drift_band"]) {
            if (!spec.node["drift"])
                yc.fail(b, base + ".drift_band", "judges the drift fit: give `drift` too");
            if (b.size() != 2) yc.fail(b, base + ".drift_band", "expected [lo, hi]");
            if (yc.as_real(b[0], base + ".drift_band[0]") >
                yc.as_real(b[1], base + ".drift_band[1]"))
                yc.fail(b, base + ".drift_band", "lo is above hi");
        }
    }

    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const double coef = spec.node["coef"] ? spec.node["coef"].as<double>() : 1.0;
        const double kappa_coef =
            spec.node["kappa_coef"] ? spec.node["kappa_coef"].as<double>() : 1.0;
        prism::PrismResult r = prism::analyse(read_merges(input), coef, kappa_coef);
        std::vector<TableData> out = tables(r);
        if (spec.node["recovery_threshold"])
            out.push_back(recovery_table(
                prism::recovery(read_merges(input), spec.node["recovery_threshold"].as<double>())));
        if (spec.node["drift"])
            out.push_back(drift_table(
                prism::drift(read_merges(input.other(spec.node["drift"].Scalar())), r.notes),
                spec.node["drift_band"]));
        for (const auto& n : r.notes) note(n);
        const YamlChecker checker("(analysis)");
        const auto settings = inference_settings(spec, kPairColumns, checker);
        if (!settings.clusters.empty())
            for (auto& t : out)
                if (t.path == "ablation") add_ablation_intervals(t, read_merges(input), settings);
        const TableData pairs = recovery_pairs(read_merges(input));
        if (!settings.claims.empty())
            out.push_back(claims_table(settings, Frame{pairs}, "recovery_claims", note));
        out.push_back(pairs);
        return out;
    }
};
}  // namespace

const AnalysisKind& prism_analysis() {
    static const PrismAnalysis kind;
    return kind;
}

}  // namespace compatbench
