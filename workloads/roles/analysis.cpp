#include "roles/analysis.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "stats/correlation.h"
#include "stats/summary.h"

namespace compatbench::roles {

namespace {

using stats::kNaN;
using Scores = std::map<unsigned, double>;
using stats::CorrelationResult;

// The subset of `size` encoders with the highest score (0 when none was trained).
unsigned best_of_size(const Subsets& s, const Scores& m, int size) {
    unsigned best = 0;
    for (unsigned u = 1; u <= s.full; ++u)
        if (std::popcount(u) == size && m.count(u) && (best == 0 || m.at(u) > m.at(best))) best = u;
    return best;
}

// Per encoder: its singleton score S({e}) and leave-one-out drop S(full) - S(full \ {e}).
struct Singletons {
    std::vector<double> one, drop;
};
Singletons singletons(const Subsets& s, const Scores& m) {
    Singletons out;
    for (std::size_t e = 0; e < s.encoders.size(); ++e) {
        out.one.push_back(s.at(m, s.bit(e)));
        out.drop.push_back(s.at(m, s.full) - s.at(m, s.full & ~s.bit(e)));
    }
    return out;
}

// Capacity = S({e}) / S(full), Necessity = S(full) - S(full \ {e}), overall and per category.
void capacity_necessity(const Subsets& s, RolesResult& out, std::vector<double>& capacity,
                        std::vector<double>& necessity,
                        std::vector<std::map<std::string, double>>& by_category) {
    const std::size_t n = s.encoders.size();
    capacity.assign(n, kNaN);
    necessity.assign(n, kNaN);
    by_category.assign(n, {});
    for (std::size_t e = 0; e < n; ++e) {
        const auto add = [&](const std::string& category, const Scores& m) {
            const double one = s.at(m, s.bit(e)), loo = s.at(m, s.full & ~s.bit(e)),
                         full = s.at(m, s.full);
            out.capacity_necessity.push_back(
                {s.encoders[e], category, one / full, full - loo, one, loo, full});
            return std::pair{one / full, full - loo};
        };
        std::tie(capacity[e], necessity[e]) = add("overall", s.tr);
        for (const auto& c : s.categories) by_category[e][c] = add(c, s.category.at(c)).second;
    }
}

// Variance across contexts U (non-empty, e not in U) of the contribution S(U + e) - S(U).
double context_variance(const Subsets& s, const Scores& m, std::size_t e, std::int64_t& count) {
    std::vector<double> contribution;
    for (unsigned u = 1; u <= s.full; ++u)
        if (!(u & s.bit(e))) contribution.push_back(s.at(m, u | s.bit(e)) - s.at(m, u));
    count = static_cast<std::int64_t>(contribution.size());
    return stats::sample_variance(contribution);
}

void rankings(const Subsets& s, const Singletons& tr, const Singletons& im, RolesResult& out) {
    const auto r_tr1 = stats::ranks_descending(tr.one), r_trl = stats::ranks_descending(tr.drop),
               r_im1 = stats::ranks_descending(im.one), r_iml = stats::ranks_descending(im.drop);
    for (std::size_t e = 0; e < s.encoders.size(); ++e) {
        std::int64_t contexts = 0;
        const double tr_var = context_variance(s, s.tr, e, contexts);
        const double im_var = context_variance(s, s.im, e, contexts);
        out.rankings.push_back({s.encoders[e], tr.one[e], r_tr1[e], tr.drop[e], r_trl[e], im.one[e],
                                r_im1[e], im.drop[e], r_iml[e], tr_var, im_var, contexts});
    }
    const auto agree = [&](const char* label, const std::vector<double>& a,
                           const std::vector<double>& b) {
        const auto sp = stats::spearman(a, b);
        const auto kd = stats::kendall(a, b);
        if (!sp.ok()) out.notes.push_back(std::string(label) + " Spearman: " + sp.reason);
        const auto first = [&](const std::vector<double>& v) {
            const auto order = stats::order_descending(v);
            return order.empty() ? std::string() : s.encoders[order.front()];
        };
        out.ranking_agreement.push_back({label, static_cast<std::int64_t>(s.encoders.size()), sp.r,
                                         sp.p, kd.r, kd.p, first(a), first(b)});
    };
    agree("singleton", tr.one, im.one);
    agree("leave_one_out", tr.drop, im.drop);
}

void by_size(const Subsets& s, RolesResult& out) {
    for (int size = 1; size <= static_cast<int>(s.encoders.size()); ++size) {
        const unsigned b = best_of_size(s, s.tr, size), bi = best_of_size(s, s.im, size);
        std::vector<double> scores;
        for (unsigned u = 1; u <= s.full; ++u)
            if (std::popcount(u) == size && s.tr.count(u)) scores.push_back(s.tr.at(u));
        out.by_size.push_back({size, static_cast<std::int64_t>(scores.size()), s.names(b),
                               s.at(s.tr, b), s.at(s.sd, b), s.at(s.tr, b) / s.at(s.tr, s.full),
                               stats::mean(scores), s.names(bi), s.at(s.im, bi)});
    }
}

// Encoder e's effective rank in subset u minus its singleton's (NaN where either is absent).
// Differences below 1e-9 are 0: a mean over a different number of equal replicates.
double delta_rank(const Subsets& s, unsigned u, std::size_t e) {
    const auto at = [&](unsigned m) { return s.erank.count(m) ? s.erank.at(m)[e] : kNaN; };
    const double d = at(u) - at(s.bit(e));
    return std::abs(d) < 1e-9 ? 0.0 : d;
}

// The pair's two members as (anchor, complement): the higher singleton score first; nullopt
// when either singleton is missing (no anchor can be named).
std::optional<std::pair<std::size_t, std::size_t>> anchor_complement(
    const Subsets& s, unsigned pair, const std::vector<double>& singleton) {
    std::vector<std::size_t> members;
    for (std::size_t e = 0; e < s.encoders.size(); ++e)
        if (pair & s.bit(e)) members.push_back(e);
    if (std::isnan(singleton[members[0]]) || std::isnan(singleton[members[1]])) return {};
    if (singleton[members[1]] > singleton[members[0]]) std::swap(members[0], members[1]);
    return std::pair{members[0], members[1]};
}

// The gap a pair's score closes from a singleton's up to the full pool's: NaN unless the full
// pool beats that singleton.
double gap_closed(double pair, double singleton, double full) {
    return full > singleton ? (pair - singleton) / (full - singleton) : kNaN;
}

// The best pair against the pair of the two highest-Capacity encoders: each member's
// singleton score and Δrank, and the gap the pair closes from either member (§4).
void best_pair(const Subsets& s, const std::vector<double>& capacity,
               const std::vector<double>& singleton, RolesResult& out) {
    const std::size_t n = s.encoders.size();
    if (n < 2) return;
    const auto cap_rank = stats::ranks_descending(capacity);
    unsigned cap_pair = 0;
    for (std::size_t e = 0; e < n; ++e)
        if (cap_rank[e] <= 2) cap_pair |= s.bit(e);
    for (const auto& [pair, label] : {std::pair{best_of_size(s, s.tr, 2), "best pair"},
                                      std::pair{cap_pair, "top-2 capacity"}}) {
        const auto members =
            std::popcount(pair) == 2 ? anchor_complement(s, pair, singleton) : std::nullopt;
        if (!members) {
            out.notes.push_back(std::string(label) + ": no pair with both singletons trained");
            out.best_pair.push_back({s.names(pair), label, s.at(s.tr, pair), "", kNaN, kNaN, "",
                                     kNaN, kNaN, kNaN, kNaN});
            continue;
        }
        const auto [a, c] = *members;
        const double sp = s.at(s.tr, pair), full = s.at(s.tr, s.full);
        out.best_pair.push_back({s.names(pair), label, sp, s.encoders[a], singleton[a],
                                 delta_rank(s, pair, a), s.encoders[c], singleton[c],
                                 delta_rank(s, pair, c), gap_closed(sp, singleton[c], full),
                                 gap_closed(sp, singleton[a], full)});
    }
}

// Per category: the best score per size and the size from which it is within `tolerance`
// of its maximum.
void saturation(const Subsets& s, double tolerance, RolesResult& out) {
    std::vector<std::pair<std::string, const Scores*>> series = {{"average", &s.tr}};
    for (const auto& c : s.categories) series.emplace_back(c, &s.category.at(c));
    for (const auto& [label, m] : series) {
        SaturationRow row{label, {}, 0};
        for (int z = 1; z <= static_cast<int>(s.encoders.size()); ++z)
            row.best_by_size.push_back(s.at(*m, best_of_size(s, *m, z)));
        double top = -std::numeric_limits<double>::infinity();
        for (double b : row.best_by_size) top = std::max(top, b);
        for (std::size_t z = 0; z < row.best_by_size.size(); ++z)
            if (row.saturation_size == 0 && row.best_by_size[z] >= top - tolerance)
                row.saturation_size = static_cast<std::int64_t>(z + 1);
        out.saturation.push_back(std::move(row));
    }
}

// Mean effective rank of encoder e's block over the subsets of `size` that hold it.
double mean_erank(const Subsets& s, std::size_t e, int size) {
    double t = 0;
    int c = 0;
    for (const auto& [u, v] : s.erank)
        if (std::popcount(u) == size && (u & s.bit(e)) && !std::isnan(v[e])) t += v[e], ++c;
    return c ? t / c : kNaN;
}

// Singleton erank, mean erank per size, and Δrank of every member of every subset of two
// or more; returns delta[e][q]: e beside q against e alone.
std::vector<std::vector<double>> erank_tables(const Subsets& s, const std::vector<double>& score,
                                              std::vector<double>& single, RolesResult& out) {
    const std::size_t n = s.encoders.size();
    single.assign(n, kNaN);
    for (std::size_t e = 0; e < n; ++e) {
        single[e] = s.erank.count(s.bit(e)) ? s.erank.at(s.bit(e))[e] : kNaN;
        ErankRow row{s.encoders[e], single[e], score[e], {}};
        for (int z = 1; z <= static_cast<int>(n); ++z)
            row.mean_erank_by_size.push_back(mean_erank(s, e, z));
        out.erank.push_back(std::move(row));
    }
    for (unsigned u = 1; u <= s.full; ++u)
        for (std::size_t e = 0; e < n; ++e)
            if (std::popcount(u) >= 2 && (u & s.bit(e)))
                out.delta_rank.push_back({s.names(u), std::popcount(u), s.encoders[e], single[e],
                                          s.erank.count(u) ? s.erank.at(u)[e] : kNaN,
                                          delta_rank(s, u, e)});
    std::vector<std::vector<double>> delta(n, std::vector<double>(n, kNaN));
    for (std::size_t e = 0; e < n; ++e)
        for (std::size_t q = 0; q < n; ++q)
            if (q != e) delta[e][q] = delta_rank(s, s.bit(e) | s.bit(q), e);
    return delta;
}

// Spearman(singleton erank, singleton score); Pearson(the score's residual after a
// least-squares line on parameter count, the subset's mean erank).
void erank_summary(const Subsets& s, const std::vector<double>& single,
                   const std::vector<double>& score, RolesResult& out) {
    const auto sp = stats::spearman(single, score);
    out.erank_summary.push_back({"spearman(singleton erank, singleton score)",
                                 static_cast<std::int64_t>(sp.n), sp.r, sp.p});
    std::vector<double> p, y, me;
    for (const auto& [u, v] : s.tr) {
        double t = 0;
        int c = 0;
        for (std::size_t e = 0; e < s.encoders.size(); ++e)
            if ((u & s.bit(e)) && !std::isnan(s.erank.at(u)[e])) t += s.erank.at(u)[e], ++c;
        p.push_back(s.params.at(u));
        y.push_back(v);
        me.push_back(c ? t / c : kNaN);
    }
    const double mp = stats::mean(p), my = stats::mean(y);
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
        sxy += (p[i] - mp) * (y[i] - my), sxx += (p[i] - mp) * (p[i] - mp);
    const double slope = sxx > 0 ? sxy / sxx : 0.0;
    std::vector<double> residual;
    for (std::size_t i = 0; i < p.size(); ++i) residual.push_back(y[i] - my - slope * (p[i] - mp));
    const auto pr = stats::pearson(residual, me);
    if (!pr.ok()) out.notes.push_back("residual vs erank: " + pr.reason);
    out.erank_summary.push_back({"pearson(score residual after params, mean erank)",
                                 static_cast<std::int64_t>(pr.n), pr.r, pr.p});
}

// §4 taxonomy: core, specialist, adaptive complement or replaceable.
void taxonomy(const Subsets& s, const std::vector<double>& capacity,
              const std::vector<double>& necessity,
              const std::vector<std::map<std::string, double>>& by_category,
              const std::vector<std::vector<double>>& delta, RolesResult& out) {
    const std::size_t n = s.encoders.size();
    const double cmed = stats::median(capacity), nmed = stats::median(necessity);
    std::vector<bool> core(n);
    for (std::size_t e = 0; e < n; ++e) core[e] = capacity[e] >= cmed && necessity[e] >= nmed;
    for (std::size_t e = 0; e < n; ++e) {
        double positive = 0, top = 0;
        std::string top_category;
        for (const auto& [c, v] : by_category[e])
            if (v > 0) {
                positive += v;
                if (v > top) top = v, top_category = c;
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
        out.taxonomy.push_back({s.encoders[e], capacity[e], necessity[e], cmed, nmed, top_category,
                                share, dcore, role});
    }
}

// A claim's verdict: untested without the regime or the statistic, else by its rule.
std::string verdict(bool regime, double value, bool agrees) {
    if (!regime || std::isnan(value)) return "untested";
    return agrees ? "agrees" : "disagrees";
}

// The regime gate of §4: the spread of S(U) over the subsets against the median standard
// error of one subset's mean over its replicates (NaN with a single replicate).
double regime_ratio(const Subsets& s) {
    std::vector<double> means, se;
    for (const auto& [u, v] : s.tr) {
        means.push_back(v);
        se.push_back(s.at(s.sd, u) / std::sqrt(s.at(s.replicates, u)));
        if (!std::isfinite(se.back())) return kNaN;  // a subset of one replicate: no noise measured
    }
    const double m = se.empty() ? kNaN : stats::median(se);
    return m > 0 ? stats::sample_sd(means) / m : kNaN;  // equal replicates measure no noise either
}

// Spearman(the complement's Δrank in each pair, the pair's score) over the trained pairs.
CorrelationResult pairs_by_complement(const Subsets& s, const std::vector<double>& singleton) {
    std::vector<double> x, y;
    for (const auto& [u, v] : s.tr) {
        if (std::popcount(u) != 2) continue;
        const auto members = anchor_complement(s, u, singleton);
        const double d = members ? delta_rank(s, u, members->second) : kNaN;
        if (std::isfinite(d) && std::isfinite(v)) x.push_back(d), y.push_back(v);
    }
    return stats::spearman(x, y);
}

// S(U)'s squared standard error over its replicates, U named as Subsets::names gives it.
double squared_se(const Subsets& s, const std::string& names) {
    for (const auto& [u, v] : s.tr)
        if (s.names(u) == names) return std::pow(s.at(s.sd, u), 2) / s.at(s.replicates, u);
    return kNaN;
}

// §4 "The seed's claims": the regime gate, then each claim by its rule. Every row is
// written; a claim whose statistic cannot be had is untested. The Δrank claims are untested
// where no encoder's rank moved (frozen encoders: Δrank is 0 by construction).
void claims(const Subsets& s, const std::vector<double>& singleton, RolesResult& out) {
    const double ratio = regime_ratio(s);
    const bool regime = ratio >= 4;
    out.claims.push_back({"regime", "sd of S(U) over the subsets / median standard error of S(U)",
                          static_cast<std::int64_t>(s.tr.size()), ratio, kNaN, "",
                          std::isnan(ratio) ? "untested"
                          : regime          ? "holds"
                                            : "fails"});
    const auto add = [&](const char* claim, const char* statistic, std::int64_t n, double value,
                         double p, const char* paper, bool testable, bool agrees,
                         double p_exact = kNaN) {
        out.claims.push_back({claim, statistic, n, value, p, paper,
                              verdict(regime && testable, value, agrees), p_exact});
    };
    // The Spearman claims were registered with the Student-t p; the exact p goes beside it.
    const bool moved = std::any_of(out.delta_rank.begin(), out.delta_rank.end(),
                                   [](const DeltaRankRow& d) { return d.delta_rank != 0; });
    const SummaryRow& own = out.erank_summary.front();
    const double own_p = stats::student_t_p(own.r, static_cast<std::size_t>(own.n));
    add("singletons_from_own_rank", "spearman(singleton erank, singleton score)", own.n, own.r,
        own_p, "singleton scores follow own rank", true, own.r > 0 && own_p < 0.05, own.p);
    const auto pc = pairs_by_complement(s, singleton);
    const double pc_p = stats::student_t_p(pc.r, pc.n);
    add("pairs_from_complement_delta_rank", "spearman(complement's delta rank, pair score)",
        static_cast<std::int64_t>(pc.n), pc.r, pc_p, "pairs follow the complement's delta rank",
        moved, pc.r > 0 && pc_p < 0.05, pc.p);
    const BestPairRow none{"", "", kNaN, "", kNaN, kNaN, "", kNaN, kNaN, kNaN, kNaN};
    const BestPairRow& best = out.best_pair.size() > 0 ? out.best_pair[0] : none;
    const BestPairRow& top2 = out.best_pair.size() > 1 ? out.best_pair[1] : none;
    add("full_pool_saturation", "gap closed by the best pair from its complement", 1,
        best.gap_closed, kNaN, "0.97", true, best.gap_closed >= 0.9);
    const double diff = best.score - top2.score,
                 se = std::sqrt(squared_se(s, best.pair) + squared_se(s, top2.pair));
    add("top2_capacity_pair_suboptimal", "S(best pair) - S(top-2 capacity pair)", 2, diff, kNaN,
        "suboptimal", std::isfinite(se), best.pair != top2.pair && diff > 2 * se);
    const double dc = best.complement_delta_rank, da = best.anchor_delta_rank;
    add("anchor_holds_complement_expands", "delta rank of the best pair's complement", 1,
        std::isfinite(da) ? dc : kNaN, kNaN, "the complement's rank expands", moved,
        dc > 0 && dc > da);
    const AgreementRow& first = out.ranking_agreement.front();
    add("retraining_ranks_differently", "kendall(TR, IM singleton scores); first encoders", first.n,
        first.kendall, first.kendall_p, "another encoder ranks first", true,
        first.tr_first != first.im_first);
}

}  // namespace

double Subsets::at(const std::map<unsigned, double>& m, unsigned mask) const {
    const auto it = m.find(mask);
    return it == m.end() ? kNaN : it->second;
}

std::string Subsets::names(unsigned mask) const {
    std::string s;
    for (std::size_t e = 0; e < encoders.size(); ++e)
        if (mask & bit(e)) s += (s.empty() ? "" : "+") + encoders[e];
    return s;
}

std::vector<double> category_means(std::span<const double> scores,
                                   std::span<const std::string> bench_category,
                                   std::span<const std::string> categories) {
    if (!scores.empty() && scores.size() != bench_category.size())
        throw std::invalid_argument("category_means: one score per benchmark");
    std::vector<double> means;
    for (const auto& c : categories) {
        double sum = 0;
        int n = 0;
        for (std::size_t b = 0; b < bench_category.size(); ++b) {
            if (bench_category[b] != c) continue;
            sum += scores.empty() ? kNaN : scores[b];
            ++n;
        }
        means.push_back(n ? sum / n : kNaN);
    }
    double all = 0;
    for (double x : scores) all += x;
    means.push_back(scores.empty() ? kNaN : all / static_cast<double>(scores.size()));
    return means;
}

Subsets subset_means(const Replicates& r) {
    Subsets s;
    s.encoders = r.encoders;
    s.categories = r.categories;
    s.full = (1u << s.encoders.size()) - 1;
    for (const auto& c : s.categories) s.category[c];  // present even when no task finished
    std::map<unsigned, std::vector<std::size_t>> rows;
    for (std::size_t i = 0; i < r.mask.size(); ++i) rows[r.mask[i]].push_back(i);
    for (const auto& [mask, at] : rows) {
        const auto mean = [&](const std::vector<double>& v) {
            return stats::mean(stats::pick(v, at));
        };
        s.tr[mask] = mean(r.average);
        s.im[mask] = mean(r.im_average);
        s.params[mask] = mean(r.params);
        s.sd[mask] = stats::sample_sd(stats::pick(r.average, at));
        s.replicates[mask] = static_cast<double>(at.size());
        for (const auto& c : s.categories) s.category[c][mask] = mean(r.category.at(c));
        for (const auto& e : r.erank) s.erank[mask].push_back(mean(e));
    }
    return s;
}

RolesResult analyse(const Subsets& s, double tolerance) {
    RolesResult out;
    for (unsigned m = 1; m <= s.full; ++m)
        if (!s.tr.count(m))
            out.notes.push_back("subset " + std::to_string(m) + " has no finished task");
    std::vector<double> capacity, necessity, single_erank;
    std::vector<std::map<std::string, double>> by_category;
    capacity_necessity(s, out, capacity, necessity, by_category);
    const Singletons tr = singletons(s, s.tr), im = singletons(s, s.im);
    rankings(s, tr, im, out);
    by_size(s, out);
    best_pair(s, capacity, tr.one, out);
    saturation(s, tolerance, out);
    const auto delta = erank_tables(s, tr.one, single_erank, out);
    erank_summary(s, single_erank, tr.one, out);
    taxonomy(s, capacity, necessity, by_category, delta, out);
    claims(s, tr.one, out);
    return out;
}

}  // namespace compatbench::roles
