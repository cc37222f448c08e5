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
//   best_pair           the best pair against the pair of the two highest-Capacity encoders,
//                       with the gap each closes: (S(pair) - S(s)) / (S(full) - S(s)), s the
//                       pair's better singleton
//   saturation          per category: the best score per size and the size from which it is
//                       within `tolerance` (default 0.01) of its maximum
//   erank               per encoder: singleton erank and score, mean erank by subset size
//   erank_pairs         Δrank of each encoder in each pair against alone
//   erank_summary       Spearman(singleton erank, singleton score); Pearson(score residual
//                       after a linear fit on parameter count, the subset's mean erank)
//   taxonomy            core: capacity and necessity >= their medians; else specialist: over
//                       half of its positive per-category necessity in one category; else
//                       adaptive complement: necessity below the median and a positive mean
//                       Δrank when paired with the core encoders; else replaceable
//
//   - {name: encoders, kind: encoder_roles, study: encoders, input: subsets}
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "analyses/analysis_kind.h"
#include "config/config.h"
#include "stats/correlation.h"

namespace compatbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return kNaN;
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// 1-based ranks, highest first (ties: the lower index first).
std::vector<std::int64_t> ranks_desc(const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return v[a] > v[b] || (!std::isnan(v[a]) && std::isnan(v[b]));
    });
    std::vector<std::int64_t> r(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<std::int64_t>(i + 1);
    return r;
}

ColumnSpec f64(const std::string& n) { return {n, ColumnType::f64, 0}; }
ColumnSpec i64(const std::string& n) { return {n, ColumnType::i64, 0}; }
ColumnSpec str(const std::string& n) { return {n, ColumnType::str, 0}; }

// The study's data: per mask, replicate means.
struct Study {
    std::vector<std::string> encoders, categories;
    unsigned full = 0;
    std::map<unsigned, double> tr, im, sd, params, size;
    std::map<std::string, std::map<unsigned, double>> cat, im_cat;
    std::map<unsigned, std::vector<double>> erank;  // per encoder, NaN where absent

    double at(const std::map<unsigned, double>& m, unsigned mask) const {
        const auto it = m.find(mask);
        return it == m.end() ? kNaN : it->second;
    }
    unsigned bit(std::size_t e) const { return 1u << e; }
    std::string names(unsigned mask) const {
        std::string s;
        for (std::size_t e = 0; e < encoders.size(); ++e)
            if (mask & bit(e)) s += (s.empty() ? "" : "+") + encoders[e];
        return s;
    }
};

Study read_study(const AnalysisInput& in) {
    Study s;
    for (const auto& c : in.columns) {
        if (c.name.rfind("erank_", 0) == 0) s.encoders.push_back(c.name.substr(6));
        if (c.name.rfind("im_", 0) == 0 && c.name != "im_average")
            s.categories.push_back(c.name.substr(3));
    }
    s.full = (1u << s.encoders.size()) - 1;
    const auto masks = in.numbers("mask");
    const auto avg = in.numbers("average"), im = in.numbers("im_average");
    const auto params = in.numbers("params"), size = in.numbers("size");
    std::map<unsigned, std::vector<std::size_t>> rows;
    for (std::size_t i = 0; i < masks.size(); ++i)
        rows[static_cast<unsigned>(masks[i])].push_back(i);
    const auto mean = [](const std::vector<double>& v, const std::vector<std::size_t>& r) {
        double t = 0;
        for (std::size_t i : r) t += v[i];
        return t / static_cast<double>(r.size());
    };
    std::map<std::string, std::vector<double>> cat_cols, im_cols;
    for (const auto& c : s.categories) {
        cat_cols[c] = in.numbers(c);
        im_cols[c] = in.numbers("im_" + c);
    }
    std::vector<std::vector<double>> er;
    for (const auto& e : s.encoders) er.push_back(in.numbers("erank_" + e));
    for (const auto& [mask, r] : rows) {
        s.tr[mask] = mean(avg, r);
        s.im[mask] = mean(im, r);
        s.params[mask] = mean(params, r);
        s.size[mask] = mean(size, r);
        double var = 0;
        for (std::size_t i : r) var += (avg[i] - s.tr[mask]) * (avg[i] - s.tr[mask]);
        s.sd[mask] = r.size() > 1 ? std::sqrt(var / static_cast<double>(r.size() - 1)) : kNaN;
        for (const auto& c : s.categories) {
            s.cat[c][mask] = mean(cat_cols[c], r);
            s.im_cat[c][mask] = mean(im_cols[c], r);
        }
        for (std::size_t e = 0; e < s.encoders.size(); ++e) s.erank[mask].push_back(mean(er[e], r));
    }
    return s;
}

class EncoderRolesAnalysis final : public AnalysisKind {
  public:
    std::string_view name() const override { return "encoder_roles"; }
    std::vector<KeyRule> keys() const override {
        return {{"tolerance", KeyType::real, false, 0, 1e9, {}}};
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
        const Study s = read_study(input);
        const std::size_t n = s.encoders.size();
        const double tolerance =
            spec.node["tolerance"] ? spec.node["tolerance"].as<double>() : 0.01;
        std::vector<TableData> out;
        for (unsigned m = 1; m <= s.full; ++m)
            if (!s.tr.count(m)) note("subset " + std::to_string(m) + " has no finished task");

        // Capacity and Necessity, overall and per category.
        TableData cn =
            TableData::make("capacity_necessity",
                            {str("encoder"), str("category"), f64("capacity"), f64("necessity"),
                             f64("singleton"), f64("leave_one_out"), f64("full")});
        std::vector<double> capacity(n), necessity(n);
        std::vector<std::map<std::string, double>> cat_necessity(n);
        for (std::size_t e = 0; e < n; ++e) {
            const auto add = [&](const std::string& cat, const std::map<unsigned, double>& m) {
                const double one = s.at(m, s.bit(e)), loo = s.at(m, s.full & ~s.bit(e)),
                             full = s.at(m, s.full);
                cn.add_row({s.encoders[e], cat, one / full, full - loo, one, loo, full});
                return std::pair{one / full, full - loo};
            };
            std::tie(capacity[e], necessity[e]) = add("overall", s.tr);
            for (const auto& c : s.categories) cat_necessity[e][c] = add(c, s.cat.at(c)).second;
        }
        out.push_back(cn);

        // Rankings under TR and IM, and the contribution's variance across contexts.
        TableData rk = TableData::make(
            "rankings",
            {str("encoder"), f64("tr_singleton"), i64("tr_singleton_rank"), f64("tr_loo_drop"),
             i64("tr_loo_rank"), f64("im_singleton"), i64("im_singleton_rank"), f64("im_loo_drop"),
             i64("im_loo_rank"), f64("tr_context_var"), f64("im_context_var"), i64("contexts")});
        std::vector<double> tr1(n), trl(n), im1(n), iml(n);
        for (std::size_t e = 0; e < n; ++e) {
            tr1[e] = s.at(s.tr, s.bit(e));
            trl[e] = s.at(s.tr, s.full) - s.at(s.tr, s.full & ~s.bit(e));
            im1[e] = s.at(s.im, s.bit(e));
            iml[e] = s.at(s.im, s.full) - s.at(s.im, s.full & ~s.bit(e));
        }
        const auto r_tr1 = ranks_desc(tr1), r_trl = ranks_desc(trl), r_im1 = ranks_desc(im1),
                   r_iml = ranks_desc(iml);
        for (std::size_t e = 0; e < n; ++e) {
            std::vector<double> ctr, cim;
            for (unsigned u = 1; u <= s.full; ++u) {
                if (u & s.bit(e)) continue;
                ctr.push_back(s.at(s.tr, u | s.bit(e)) - s.at(s.tr, u));
                cim.push_back(s.at(s.im, u | s.bit(e)) - s.at(s.im, u));
            }
            const auto var = [](const std::vector<double>& v) {
                if (v.size() < 2) return kNaN;
                const double m =
                    std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
                double t = 0;
                for (double x : v) t += (x - m) * (x - m);
                return t / static_cast<double>(v.size() - 1);
            };
            rk.add_row({s.encoders[e], tr1[e], r_tr1[e], trl[e], r_trl[e], im1[e], r_im1[e], iml[e],
                        r_iml[e], var(ctr), var(cim), static_cast<std::int64_t>(ctr.size())});
        }
        out.push_back(rk);

        TableData ag =
            TableData::make("ranking_agreement",
                            {str("ranking"), i64("n"), f64("spearman"), f64("spearman_p"),
                             f64("kendall"), f64("kendall_p"), str("tr_first"), str("im_first")});
        const auto agree = [&](const char* label, const std::vector<double>& a,
                               const std::vector<double>& b, const std::vector<std::int64_t>& ra,
                               const std::vector<std::int64_t>& rb) {
            const auto sp = stats::spearman(a, b);
            const auto kd = stats::kendall(a, b);
            if (!sp.ok()) note(std::string(label) + " Spearman: " + sp.reason);
            const auto first = [&](const std::vector<std::int64_t>& r) {
                for (std::size_t e = 0; e < n; ++e)
                    if (r[e] == 1) return s.encoders[e];
                return std::string();
            };
            ag.add_row({std::string(label), static_cast<std::int64_t>(n), sp.r, sp.p, kd.r, kd.p,
                        first(ra), first(rb)});
        };
        agree("singleton", tr1, im1, r_tr1, r_im1);
        agree("leave_one_out", trl, iml, r_trl, r_iml);
        out.push_back(ag);

        // Best subset per size.
        TableData bs =
            TableData::make("by_size", {i64("size"), i64("subsets"), str("best"), f64("best_score"),
                                        f64("best_sd"), f64("fraction_of_full"), f64("mean_score"),
                                        str("im_best"), f64("im_best_score")});
        const auto best_of = [&](const std::map<unsigned, double>& m, int size) {
            unsigned best = 0;
            for (unsigned u = 1; u <= s.full; ++u)
                if (std::popcount(u) == size && m.count(u) && (best == 0 || m.at(u) > m.at(best)))
                    best = u;
            return best;
        };
        for (int size = 1; size <= static_cast<int>(n); ++size) {
            const unsigned b = best_of(s.tr, size), bi = best_of(s.im, size);
            double total = 0;
            std::int64_t count = 0;
            for (unsigned u = 1; u <= s.full; ++u)
                if (std::popcount(u) == size && s.tr.count(u)) total += s.tr.at(u), ++count;
            bs.add_row({static_cast<std::int64_t>(size), count, s.names(b), s.at(s.tr, b),
                        s.at(s.sd, b), s.at(s.tr, b) / s.at(s.tr, s.full),
                        count ? total / static_cast<double>(count) : kNaN, s.names(bi),
                        s.at(s.im, bi)});
        }
        out.push_back(bs);

        // The best pair against the two highest-Capacity encoders.
        if (n >= 2) {
            TableData bp = TableData::make(
                "best_pair", {str("pair"), str("chosen_by"), f64("score"), str("better_singleton"),
                              f64("singleton_score"), f64("gap_closed")});
            const auto cap_rank = ranks_desc(capacity);
            unsigned cap_pair = 0;
            for (std::size_t e = 0; e < n; ++e)
                if (cap_rank[e] <= 2) cap_pair |= s.bit(e);
            for (const auto& [pair, label] : {std::pair{best_of(s.tr, 2), "best pair"},
                                              std::pair{cap_pair, "top-2 capacity"}}) {
                std::size_t one = n;
                for (std::size_t e = 0; e < n; ++e)
                    if ((pair & s.bit(e)) && (one == n || tr1[e] > tr1[one])) one = e;
                const double sp = s.at(s.tr, pair), s1 = one < n ? tr1[one] : kNaN;
                bp.add_row({s.names(pair), std::string(label), sp,
                            one < n ? s.encoders[one] : std::string(), s1,
                            (sp - s1) / (s.at(s.tr, s.full) - s1)});
            }
            out.push_back(bp);
        }

        // Per-category saturation.
        std::vector<ColumnSpec> sc = {str("category")};
        for (std::size_t z = 1; z <= n; ++z) sc.push_back(f64("best_size" + std::to_string(z)));
        sc.push_back(i64("saturation_size"));
        TableData sat = TableData::make("saturation", sc);
        std::vector<std::pair<std::string, const std::map<unsigned, double>*>> series = {
            {"average", &s.tr}};
        for (const auto& c : s.categories) series.emplace_back(c, &s.cat.at(c));
        for (const auto& [label, m] : series) {
            std::vector<Value> row = {label};
            std::vector<double> best;
            for (int z = 1; z <= static_cast<int>(n); ++z) best.push_back(s.at(*m, best_of(*m, z)));
            double top = -std::numeric_limits<double>::infinity();
            for (double b : best) top = std::max(top, b);
            std::int64_t at = 0;
            for (std::size_t z = 0; z < best.size(); ++z)
                if (at == 0 && best[z] >= top - tolerance) at = static_cast<std::int64_t>(z + 1);
            for (double b : best) row.emplace_back(b);
            row.emplace_back(at);
            sat.add_row(row);
        }
        out.push_back(sat);

        // Effective rank.
        std::vector<ColumnSpec> ec = {str("encoder"), f64("singleton_erank"),
                                      f64("singleton_score")};
        for (std::size_t z = 1; z <= n; ++z)
            ec.push_back(f64("mean_erank_size" + std::to_string(z)));
        TableData er = TableData::make("erank", ec);
        std::vector<double> single_erank(n);
        for (std::size_t e = 0; e < n; ++e) {
            single_erank[e] = s.erank.count(s.bit(e)) ? s.erank.at(s.bit(e))[e] : kNaN;
            std::vector<Value> row = {s.encoders[e], single_erank[e], tr1[e]};
            for (int z = 1; z <= static_cast<int>(n); ++z) {
                double t = 0;
                int c = 0;
                for (const auto& [u, v] : s.erank)
                    if (std::popcount(u) == z && (u & s.bit(e)) && !std::isnan(v[e]))
                        t += v[e], ++c;
                row.emplace_back(c ? t / c : kNaN);
            }
            er.add_row(row);
        }
        out.push_back(er);

        TableData ep =
            TableData::make("erank_pairs", {str("encoder"), str("partner"), f64("erank_alone"),
                                            f64("erank_in_pair"), f64("delta_rank")});
        std::vector<std::vector<double>> delta(n, std::vector<double>(n, kNaN));
        for (std::size_t e = 0; e < n; ++e)
            for (std::size_t q = 0; q < n; ++q) {
                if (q == e) continue;
                const unsigned pair = s.bit(e) | s.bit(q);
                const double in_pair = s.erank.count(pair) ? s.erank.at(pair)[e] : kNaN;
                delta[e][q] = in_pair - single_erank[e];
                ep.add_row({s.encoders[e], s.encoders[q], single_erank[e], in_pair, delta[e][q]});
            }
        ep.print = false;
        out.push_back(ep);

        TableData es =
            TableData::make("erank_summary", {str("statistic"), i64("n"), f64("r"), f64("p")});
        {
            const auto sp = stats::spearman(single_erank, tr1);
            es.add_row({std::string("spearman(singleton erank, singleton score)"),
                        static_cast<std::int64_t>(sp.n), sp.r, sp.p});
            // Residual of the score after a least-squares line on parameter count.
            std::vector<double> p, y, me;
            for (const auto& [u, v] : s.tr) {
                double t = 0;
                int c = 0;
                for (std::size_t e = 0; e < n; ++e)
                    if ((u & s.bit(e)) && !std::isnan(s.erank.at(u)[e])) t += s.erank.at(u)[e], ++c;
                p.push_back(s.params.at(u));
                y.push_back(v);
                me.push_back(c ? t / c : kNaN);
            }
            const double mp =
                std::accumulate(p.begin(), p.end(), 0.0) / static_cast<double>(p.size());
            const double my =
                std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
            double sxy = 0, sxx = 0;
            for (std::size_t i = 0; i < p.size(); ++i)
                sxy += (p[i] - mp) * (y[i] - my), sxx += (p[i] - mp) * (p[i] - mp);
            const double slope = sxx > 0 ? sxy / sxx : 0.0;
            std::vector<double> resid;
            for (std::size_t i = 0; i < p.size(); ++i)
                resid.push_back(y[i] - my - slope * (p[i] - mp));
            const auto pr = stats::pearson(resid, me);
            if (!pr.ok()) note("residual vs erank: " + pr.reason);
            es.add_row({std::string("pearson(score residual after params, mean erank)"),
                        static_cast<std::int64_t>(pr.n), pr.r, pr.p});
        }
        out.push_back(es);

        // Taxonomy (methods.md §4).
        TableData tx = TableData::make(
            "taxonomy", {str("encoder"), f64("capacity"), f64("necessity"), f64("capacity_median"),
                         f64("necessity_median"), str("top_category"), f64("top_category_share"),
                         f64("delta_rank_with_core"), str("role")});
        const double cmed = median_of(capacity), nmed = median_of(necessity);
        std::vector<bool> core(n);
        for (std::size_t e = 0; e < n; ++e) core[e] = capacity[e] >= cmed && necessity[e] >= nmed;
        for (std::size_t e = 0; e < n; ++e) {
            double positive = 0, top = 0;
            std::string top_cat;
            for (const auto& [c, v] : cat_necessity[e])
                if (v > 0) {
                    positive += v;
                    if (v > top) top = v, top_cat = c;
                }
            const double share = positive > 0 ? top / positive : kNaN;
            double dsum = 0;
            int dn = 0;
            for (std::size_t q = 0; q < n; ++q)
                if (q != e && core[q] && !std::isnan(delta[e][q])) dsum += delta[e][q], ++dn;
            const double dcore = dn ? dsum / dn : kNaN;
            std::string role = "replaceable";
            if (core[e])
                role = "core";
            else if (share > 0.5)
                role = "specialist";
            else if (necessity[e] < nmed && dcore > 0)
                role = "adaptive complement";
            tx.add_row({s.encoders[e], capacity[e], necessity[e], cmed, nmed, top_cat, share, dcore,
                        role});
        }
        out.push_back(tx);
        return out;
    }
};
}  // namespace

const AnalysisKind& encoder_roles_analysis() {
    static const EncoderRolesAnalysis kind;
    return kind;
}

}  // namespace compatbench
