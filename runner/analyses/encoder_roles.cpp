// Analysis `encoder_roles`: the tables of the encoder-roles study (methods.md §4) from an
// `encoder_subset` group. Scores are means over the replicates of each subset; S(U) is the
// average over the benchmarks, S_cat(U) a category's.
//   capacity_necessity  per encoder, overall and per category: Capacity = S({e}) / S(full),
//                       Necessity = S(full) - S(full \ {e}), with the scores they come from
//   rankings            per encoder: the TR and IM singleton scores and leave-one-out drops
//                       with their ranks (1 = highest), and the variance of the encoder's
//                       contribution S(U + e) - S(U) across the contexts U (non-empty, e not
//                       in U) under TR and under IM
//   ranking_agreement   singleton and leave-one-out: Spearman and Kendall between the TR and
//                       IM values, and which encoder ranks first under each
//   by_size             best subset per size (TR; IM beside it), its share of S(full), mean
//   best_pair           the best pair against the pair of the two highest-Capacity encoders:
//                       anchor (the better singleton) and complement with their singleton
//                       scores and Δrank, the gap closed (S(pair) - S(c)) / (S(full) - S(c))
//                       from the complement c (the seed's) and the same from the anchor
//   saturation          per category: the best score per size and the size from which it is
//                       within `tolerance` (default 0.01) of its maximum
//   erank               per encoder: singleton erank and score, mean erank by subset size
//   delta_rank          Δrank of each encoder in each subset of two or more against alone
//   erank_summary       Spearman(singleton erank, singleton score); Pearson(score residual
//                       after a linear fit on parameter count, the subset's mean erank)
//   taxonomy            core: capacity and necessity >= their medians; else specialist: over
//                       half of its positive per-category necessity in one category; else
//                       adaptive complement: necessity below the median and a positive mean
//                       Δrank when paired with the core encoders; else replaceable
//   claims              the regime gate, then the seed's claims, each agrees, disagrees or
//                       untested by its rule (methods.md §4), as pre-registered
//   held_out_pair       the best pair chosen on half of the replicates (seeded) against the
//                       top-2 capacity pair, both scored on the other half
//   claims_reanalysis   the same claims with a band and agrees, disagrees, inconclusive or
//                       untested: exact tests, intervals over replicates, the held-out pair
//
//   - {name: encoders, kind: encoder_roles, study: encoders, input: subsets}
#include <algorithm>

#include "analyses/analysis_kind.h"
#include "common/hash.h"
#include "config/config.h"
#include "roles/analysis.h"
#include "roles/reanalysis.h"

namespace compatbench {

namespace {

// The replicates of an encoder_subset table: encoders from its erank_<e> columns,
// categories from its im_<category> columns.
roles::Replicates read_replicates(const AnalysisInput& in) {
    roles::Replicates r;
    for (const auto& c : in.columns) {
        if (c.name.rfind("erank_", 0) == 0) r.encoders.push_back(c.name.substr(6));
        if (c.name.rfind("im_", 0) == 0 && c.name != "im_average")
            r.categories.push_back(c.name.substr(3));
    }
    for (double m : in.numbers("mask")) r.mask.push_back(static_cast<unsigned>(m));
    for (double k : in.numbers("replicate")) r.replicate.push_back(static_cast<std::int64_t>(k));
    r.average = in.numbers("average");
    r.im_average = in.numbers("im_average");
    r.params = in.numbers("params");
    for (const auto& c : r.categories) r.category[c] = in.numbers(c);
    for (const auto& e : r.encoders) r.erank.push_back(in.numbers("erank_" + e));
    return r;
}

std::vector<TableData> score_tables(const roles::RolesResult& r) {
    TableData cn = TableData::make(
        "capacity_necessity", {str("encoder"), str("category"), f64("capacity"), f64("necessity"),
                               f64("singleton"), f64("leave_one_out"), f64("full")});
    for (const auto& c : r.capacity_necessity)
        cn.add_row(
            {c.encoder, c.category, c.capacity, c.necessity, c.singleton, c.leave_one_out, c.full});
    TableData rk = TableData::make(
        "rankings",
        {str("encoder"), f64("tr_singleton"), i64("tr_singleton_rank"), f64("tr_loo_drop"),
         i64("tr_loo_rank"), f64("im_singleton"), i64("im_singleton_rank"), f64("im_loo_drop"),
         i64("im_loo_rank"), f64("tr_context_var"), f64("im_context_var"), i64("contexts")});
    for (const auto& k : r.rankings)
        rk.add_row({k.encoder, k.tr_singleton, k.tr_singleton_rank, k.tr_loo_drop, k.tr_loo_rank,
                    k.im_singleton, k.im_singleton_rank, k.im_loo_drop, k.im_loo_rank,
                    k.tr_context_var, k.im_context_var, k.contexts});
    TableData ag = TableData::make(
        "ranking_agreement", {str("ranking"), i64("n"), f64("spearman"), f64("spearman_p"),
                              f64("kendall"), f64("kendall_p"), str("tr_first"), str("im_first")});
    for (const auto& a : r.ranking_agreement)
        ag.add_row({a.ranking, a.n, a.spearman, a.spearman_p, a.kendall, a.kendall_p, a.tr_first,
                    a.im_first});
    TableData bs =
        TableData::make("by_size", {i64("size"), i64("subsets"), str("best"), f64("best_score"),
                                    f64("best_sd"), f64("fraction_of_full"), f64("mean_score"),
                                    str("im_best"), f64("im_best_score")});
    for (const auto& b : r.by_size)
        bs.add_row({b.size, b.subsets, b.best, b.best_score, b.best_sd, b.fraction_of_full,
                    b.mean_score, b.im_best, b.im_best_score});
    std::vector<TableData> out = {cn, rk, ag, bs};
    if (!r.best_pair.empty()) {
        TableData bp = TableData::make(
            "best_pair",
            {str("pair"), str("chosen_by"), f64("score"), str("anchor"), f64("anchor_score"),
             f64("anchor_delta_rank"), str("complement"), f64("complement_score"),
             f64("complement_delta_rank"), f64("gap_closed"), f64("gap_closed_from_anchor")});
        for (const auto& b : r.best_pair)
            bp.add_row({b.pair, b.chosen_by, b.score, b.anchor, b.anchor_score, b.anchor_delta_rank,
                        b.complement, b.complement_score, b.complement_delta_rank, b.gap_closed,
                        b.gap_closed_from_anchor});
        out.push_back(bp);
    }
    return out;
}

// A label column, one f64 column per subset size (`prefix`1..n), then `last` columns.
TableData by_size_table(const char* path, std::vector<ColumnSpec> first, const char* prefix,
                        std::size_t sizes, std::vector<ColumnSpec> last) {
    for (std::size_t z = 1; z <= sizes; ++z) first.push_back(f64(prefix + std::to_string(z)));
    for (auto& c : last) first.push_back(std::move(c));
    return TableData::make(path, first);
}

std::vector<TableData> erank_and_role_tables(const roles::RolesResult& r, std::size_t n) {
    TableData sat =
        by_size_table("saturation", {str("category")}, "best_size", n, {i64("saturation_size")});
    for (const auto& s : r.saturation) {
        std::vector<Value> row = {s.category};
        for (double b : s.best_by_size) row.emplace_back(b);
        row.emplace_back(s.saturation_size);
        sat.add_row(std::move(row));
    }
    TableData er =
        by_size_table("erank", {str("encoder"), f64("singleton_erank"), f64("singleton_score")},
                      "mean_erank_size", n, {});
    for (const auto& e : r.erank) {
        std::vector<Value> row = {e.encoder, e.singleton_erank, e.singleton_score};
        for (double m : e.mean_erank_by_size) row.emplace_back(m);
        er.add_row(std::move(row));
    }
    TableData dr = TableData::make("delta_rank",
                                   {str("subset"), i64("size"), str("encoder"), f64("erank_alone"),
                                    f64("erank_in_subset"), f64("delta_rank")});
    dr.print = false;
    for (const auto& d : r.delta_rank)
        dr.add_row({d.subset, d.size, d.encoder, d.erank_alone, d.erank_in_subset, d.delta_rank});
    TableData es =
        TableData::make("erank_summary", {str("statistic"), i64("n"), f64("r"), f64("p")});
    for (const auto& s : r.erank_summary) es.add_row({s.statistic, s.n, s.r, s.p});
    TableData tx = TableData::make(
        "taxonomy", {str("encoder"), f64("capacity"), f64("necessity"), f64("capacity_median"),
                     f64("necessity_median"), str("top_category"), f64("top_category_share"),
                     f64("delta_rank_with_core"), str("role")});
    for (const auto& t : r.taxonomy)
        tx.add_row({t.encoder, t.capacity, t.necessity, t.capacity_median, t.necessity_median,
                    t.top_category, t.top_category_share, t.delta_rank_with_core, t.role});
    TableData cl =
        TableData::make("claims", {str("claim"), str("statistic"), i64("n"), f64("value"), f64("p"),
                                   str("paper"), str("verdict")});
    for (const auto& c : r.claims)
        cl.add_row({c.claim, c.statistic, c.n, c.value, c.p, c.paper, c.verdict});
    return {sat, er, dr, es, tx, cl};
}

std::vector<TableData> reanalysis_tables(const roles::Reanalysis& a) {
    const roles::HeldOutPair& h = a.held_out;
    TableData ho = TableData::make(
        "held_out_pair",
        {str("selection"), str("test"), str("chosen"), str("capacity"), f64("chosen_score"),
         f64("capacity_score"), f64("difference"), f64("se"), f64("lo"), f64("hi"), str("reason")});
    ho.add_row({h.selection, h.test, h.chosen, h.capacity, h.chosen_score, h.capacity_score,
                h.difference, h.se, h.lo, h.hi, h.reason});
    TableData cl = TableData::make(
        "claims_reanalysis",
        {str("claim"), str("statistic"), i64("n"), f64("value"), f64("p"), f64("lo"), f64("hi"),
         str("paper"), str("band"), str("verdict"), str("reason")});
    for (const auto& c : a.claims)
        cl.add_row({c.claim, c.statistic, c.n, c.value, c.p, c.lo, c.hi, c.paper, c.band, c.verdict,
                    c.reason});
    return {ho, cl};
}

class EncoderRolesAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "encoder_roles"; }
    std::vector<KeyRule> keys() const override {
        return {{.name = "tolerance", .type = KeyType::real, .min = 0, .max = 1e9}};
    }
    void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& cols, const GroupColumns&,
               const YamlChecker& yc) const override {
        for (const char* c : {"mask", "size", "replicate", "average", "im_average", "params"})
            if (std::none_of(cols.begin(), cols.end(),
                             [&](const ColumnSpec& s) { return s.name == c; }))
                yc.fail(
                    spec.node["input"], "analyses." + spec.name + ".input",
                    "group '" + spec.input + "' has no column '" + c + "' (kind encoder_subset)");
    }

    std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                               const AnalysisNote& note) const override {
        const double tolerance =
            spec.node["tolerance"] ? spec.node["tolerance"].as<double>() : 0.01;
        const roles::Replicates replicates = read_replicates(input);
        const roles::Subsets s = roles::subset_means(replicates);
        const roles::RolesResult r = roles::analyse(s, tolerance);
        for (const auto& n : r.notes) note(n);
        std::vector<TableData> out = score_tables(r);
        for (auto& t : erank_and_role_tables(r, s.encoders.size())) out.push_back(std::move(t));
        if (r.claims.empty() || r.ranking_agreement.empty()) return out;
        const auto again = roles::reanalyse(replicates, r, fnv1a64("held_out/" + spec.name));
        for (auto& t : reanalysis_tables(again)) out.push_back(std::move(t));
        return out;
    }
};
}  // namespace

const AnalysisKind& encoder_roles_analysis() {
    static const EncoderRolesAnalysis kind;
    return kind;
}

}  // namespace compatbench
