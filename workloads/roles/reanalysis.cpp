#include "roles/reanalysis.h"

#include <algorithm>
#include <bit>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/hash.h"
#include "stats/summary.h"
#include "stats/verdict.h"

namespace compatbench::roles {

namespace {

using stats::kNaN;
using PerReplicate = std::map<std::int64_t, double>;

// A mean over replicates with its standard error and 95% Student-t interval (n - 1 df).
struct Mean {
    std::int64_t n = 0;
    double value = kNaN, se = kNaN, lo = kNaN, hi = kNaN;
};

Mean mean_of(const std::vector<double>& v) {
    Mean m;
    m.n = static_cast<std::int64_t>(v.size());
    m.value = stats::mean(v);
    if (v.size() < 2) return m;
    m.se = stats::sample_sd(v) / std::sqrt(static_cast<double>(v.size()));
    const boost::math::students_t t(static_cast<double>(v.size() - 1));
    const double q = boost::math::quantile(t, 0.975);
    m.lo = m.value - q * m.se;
    m.hi = m.value + q * m.se;
    return m;
}

// `values` of the rows of subset `mask`, by replicate.
PerReplicate of_subset(const Replicates& r, unsigned mask, const std::vector<double>& values) {
    PerReplicate out;
    for (std::size_t i = 0; i < r.mask.size(); ++i)
        if (r.mask[i] == mask) out[r.replicate[i]] = values[i];
    return out;
}

// a - b for each replicate of `reps` that both hold.
std::vector<double> paired(const PerReplicate& a, const PerReplicate& b,
                           const std::set<std::int64_t>& reps) {
    std::vector<double> d;
    for (std::int64_t k : reps)
        if (a.count(k) && b.count(k)) d.push_back(a.at(k) - b.at(k));
    return d;
}

std::string joined(const std::set<std::int64_t>& reps) {
    std::string s;
    for (std::int64_t k : reps) {
        if (!s.empty()) s += '+';
        s += std::to_string(k);
    }
    return s;
}

std::string names(const Replicates& r, unsigned mask) {
    std::string s;
    for (std::size_t e = 0; e < r.encoders.size(); ++e)
        if (mask & (1u << e)) s += (s.empty() ? "" : "+") + r.encoders[e];
    return s;
}

// The replicates split in two, seeded: the first half (at least one) selects, the rest tests.
std::pair<std::set<std::int64_t>, std::set<std::int64_t>> split(const Replicates& r,
                                                                std::uint64_t seed) {
    std::vector<std::int64_t> reps(r.replicate.begin(), r.replicate.end());
    std::sort(reps.begin(), reps.end());
    reps.erase(std::unique(reps.begin(), reps.end()), reps.end());
    for (std::size_t i = reps.size(); i > 1; --i)  // Fisher-Yates
        std::swap(reps[i - 1], reps[splitmix64(seed + i) % i]);
    const std::size_t half = std::max<std::size_t>(1, reps.size() / 2);
    return {{reps.begin(), reps.begin() + static_cast<std::ptrdiff_t>(std::min(half, reps.size()))},
            {reps.begin() + static_cast<std::ptrdiff_t>(std::min(half, reps.size())), reps.end()}};
}

// The subset of `size` encoders with the highest mean over `reps` (0 for none).
unsigned best_on(const Replicates& r, int size, const std::set<std::int64_t>& reps,
                 unsigned exclude = 0) {
    std::map<unsigned, std::vector<double>> scores;
    for (std::size_t i = 0; i < r.mask.size(); ++i)
        if (std::popcount(r.mask[i]) == size && reps.count(r.replicate[i]) &&
            r.mask[i] != exclude && std::isfinite(r.average[i]))
            scores[r.mask[i]].push_back(r.average[i]);
    unsigned best = 0;
    double top = -std::numeric_limits<double>::infinity();
    for (const auto& [mask, v] : scores)
        if (stats::mean(v) > top) top = stats::mean(v), best = mask;
    return best;
}

HeldOutPair held_out_pair(const Replicates& r, std::uint64_t seed) {
    HeldOutPair h{};
    const auto [select, test] = split(r, seed);
    h.selection = joined(select);
    h.test = joined(test);
    const unsigned chosen = best_on(r, 2, select), first = best_on(r, 1, select);
    const unsigned capacity = first | best_on(r, 1, select, first);
    h.chosen = names(r, chosen);
    h.capacity = names(r, capacity);
    const auto c = of_subset(r, chosen, r.average), k = of_subset(r, capacity, r.average);
    const Mean d = mean_of(paired(c, k, test));
    std::vector<double> cs, ks;
    for (std::int64_t t : test) {
        if (c.count(t)) cs.push_back(c.at(t));
        if (k.count(t)) ks.push_back(k.at(t));
    }
    h.chosen_score = stats::mean(cs);
    h.capacity_score = stats::mean(ks);
    h.difference = d.value;
    h.se = d.se;
    h.lo = d.lo;
    h.hi = d.hi;
    if (test.empty())
        h.reason = "one replicate: none is left to test on";
    else if (std::popcount(chosen) != 2 || std::popcount(capacity) != 2)
        h.reason = "no pair or no two singletons trained on the selection replicates";
    else if (std::isnan(d.lo))
        h.reason = "fewer than two test replicates: no spread measured";
    return h;
}

unsigned mask_of(const Replicates& r, const std::string& name) {
    unsigned m = 0;
    for (std::size_t e = 0; e < r.encoders.size(); ++e)
        for (std::size_t at = 0; at <= name.size();) {
            const std::size_t next = std::min(name.find('+', at), name.size());
            if (name.substr(at, next - at) == r.encoders[e]) m |= 1u << e;
            at = next + 1;
        }
    return m;
}

std::set<std::int64_t> all_replicates(const Replicates& r) {
    return {r.replicate.begin(), r.replicate.end()};
}

// The held-out pair's (anchor, complement): its members ordered by their singleton means on
// the selection replicates, the higher first.
std::pair<std::size_t, std::size_t> anchor_complement(const Replicates& r, unsigned pair,
                                                      const std::set<std::int64_t>& select) {
    std::vector<std::size_t> m;
    for (std::size_t e = 0; e < r.encoders.size(); ++e)
        if (pair & (1u << e)) m.push_back(e);
    const auto single = [&](std::size_t e) {
        std::vector<double> v;
        for (const auto& [k, x] : of_subset(r, 1u << e, r.average))
            if (select.count(k)) v.push_back(x);
        return stats::mean(v);
    };
    if (single(m[1]) > single(m[0])) std::swap(m[0], m[1]);
    return {m[0], m[1]};
}

// The held-out best pair's complement (the weaker singleton on the selection replicates)
// expands its effective rank in the pair, and more than the anchor: Δrank per test replicate.
ReanalysedClaim expansion_claim(const Replicates& r, const RolesResult& pre, const HeldOutPair& h,
                                std::uint64_t seed) {
    ReanalysedClaim c{"anchor_holds_complement_expands",
                      "delta rank of the held-out best pair's complement (test replicates)",
                      0,
                      kNaN,
                      kNaN,
                      kNaN,
                      kNaN,
                      "the complement's rank expands",
                      "(0, inf), and above the anchor's",
                      "untested",
                      h.reason};
    const bool moved = std::any_of(pre.delta_rank.begin(), pre.delta_rank.end(),
                                   [](const DeltaRankRow& d) { return d.delta_rank != 0; });
    const unsigned pair = mask_of(r, h.chosen);
    if (!moved || !h.reason.empty() || std::popcount(pair) != 2) {
        if (!moved) c.reason = "no encoder's rank moved (frozen encoders)";
        return c;
    }
    const auto [select, test] = split(r, seed);
    const auto [anchor, complement] = anchor_complement(r, pair, select);
    const auto delta = [&](std::size_t e) {
        return paired(of_subset(r, pair, r.erank[e]), of_subset(r, 1u << e, r.erank[e]), test);
    };
    const auto dc = delta(complement), da = delta(anchor);
    std::vector<double> over;
    for (std::size_t i = 0; i < std::min(dc.size(), da.size()); ++i) over.push_back(dc[i] - da[i]);
    const Mean m = mean_of(dc), o = mean_of(over);
    c.n = m.n;
    c.value = m.value;
    c.lo = m.lo;
    c.hi = m.hi;
    c.reason = std::isnan(m.lo) || std::isnan(o.lo) ? "fewer than two test replicates" : "";
    if (!c.reason.empty()) return c;
    if (m.lo > 0 && o.lo > 0)
        c.verdict = "agrees";
    else if (m.hi < 0 || o.hi < 0)
        c.verdict = "disagrees";
    else
        c.verdict = "inconclusive";
    return c;
}

// Retraining ranks the encoders differently: TR's first singleton beats IM's first under TR
// beyond its noise (agrees); the same encoder first under both and ahead of TR's runner-up
// beyond its noise (disagrees); else inconclusive. Paired by replicate.
ReanalysedClaim ranks_claim(const Replicates& r, const RolesResult& pre) {
    const AgreementRow& a = pre.ranking_agreement.front();
    ReanalysedClaim c{"retraining_ranks_differently",
                      "S_TR(TR's first) - S_TR(IM's first), or TR's lead when they are one",
                      0,
                      kNaN,
                      kNaN,
                      kNaN,
                      kNaN,
                      "another encoder ranks first",
                      "lead (0, inf) with different firsts",
                      "untested",
                      ""};
    const unsigned tr = mask_of(r, a.tr_first);
    unsigned other = mask_of(r, a.im_first);
    if (tr == other) {  // TR's runner-up
        std::vector<double> single;
        for (std::size_t e = 0; e < r.encoders.size(); ++e) {
            const auto v = of_subset(r, 1u << e, r.average);
            std::vector<double> x;
            for (const auto& [k, y] : v) x.push_back(y);
            single.push_back((1u << e) == tr ? -INFINITY : stats::mean(x));
        }
        other = 1u << stats::order_descending(single).front();
    }
    const Mean m = mean_of(
        paired(of_subset(r, tr, r.average), of_subset(r, other, r.average), all_replicates(r)));
    c.n = m.n;
    c.value = m.value;
    c.lo = m.lo;
    c.hi = m.hi;
    if (std::isnan(m.lo)) {
        c.reason = "fewer than two replicates";
        return c;
    }
    const bool lead = m.lo > 0;
    c.verdict = !lead ? "inconclusive" : a.tr_first != a.im_first ? "agrees" : "disagrees";
    return c;
}

// A sign claim judged by its exact test (n <= 10): agrees when rho > 0 at p < 0.05, disagrees
// when rho < 0 at p < 0.05, inconclusive otherwise.
ReanalysedClaim sign_claim(const ClaimRow& pre) {
    ReanalysedClaim c{pre.claim,
                      pre.statistic,
                      pre.n,
                      pre.value,
                      pre.p_exact,
                      kNaN,
                      kNaN,
                      pre.paper,
                      "rho > 0 at exact two-sided p < 0.05",
                      "",
                      ""};
    if (pre.n > 0 && pre.n <= 10) {
        double orderings = 1;
        for (std::int64_t k = 2; k <= pre.n; ++k) orderings *= static_cast<double>(k);
        char smallest[32];
        std::snprintf(smallest, sizeof smallest, "%.2g", 2.0 / orderings);
        c.band += " (smallest p at n = " + std::to_string(pre.n) + ": " + smallest + ")";
    }
    if (std::isnan(pre.value) || std::isnan(pre.p_exact)) {
        c.verdict = "untested";
        c.reason = "no statistic";
    } else if (pre.p_exact < 0.05) {
        c.verdict = pre.value > 0 ? "agrees" : "disagrees";
    } else {
        c.verdict = "inconclusive";
    }
    return c;
}

// The gap (P - C)/(F - C) the held-out best pair closes from its complement, measured on the
// test replicates, ± t·SE by the delta method from the three subsets' spreads there; df the
// fewest test replicates minus one.
ReanalysedClaim saturation_claim(const Replicates& r, const HeldOutPair& h, std::uint64_t seed) {
    ReanalysedClaim c{"full_pool_saturation",
                      "gap closed by the held-out best pair from its complement (test replicates)",
                      0,
                      kNaN,
                      kNaN,
                      kNaN,
                      kNaN,
                      "0.97",
                      "[0.90, inf)",
                      "untested",
                      h.reason};
    const unsigned pair = mask_of(r, h.chosen);
    if (!h.reason.empty() || std::popcount(pair) != 2) return c;
    const auto [select, test] = split(r, seed);
    const unsigned comp = 1u << anchor_complement(r, pair, select).second;
    const unsigned full = (1u << r.encoders.size()) - 1;
    const auto on_test = [&](unsigned u) {
        std::vector<double> v;
        for (const auto& [k, x] : of_subset(r, u, r.average))
            if (test.count(k)) v.push_back(x);
        return mean_of(v);
    };
    const Mean P = on_test(pair), C = on_test(comp), F = on_test(full);
    const double d = F.value - C.value;
    c.n = std::min({P.n, C.n, F.n});
    c.value = d > 0 ? (P.value - C.value) / d : kNaN;
    const double se =
        std::sqrt(std::pow(P.se / d, 2) + std::pow(F.se * (P.value - C.value) / (d * d), 2) +
                  std::pow(C.se * (P.value - F.value) / (d * d), 2));
    if (std::isfinite(c.value) && std::isfinite(se) && c.n >= 2) {
        const double q =
            boost::math::quantile(boost::math::students_t(static_cast<double>(c.n - 1)), 0.975);
        c.lo = c.value - q * se;
        c.hi = c.value + q * se;
    }
    c.verdict = stats::verdict_name(stats::judge(c.lo, c.hi, {0.90, INFINITY}));
    c.reason = std::isnan(c.lo)
                   ? "fewer than two test replicates, or the full pool does not beat the complement"
                   : "";
    return c;
}

ReanalysedClaim held_out_claim(const HeldOutPair& h) {
    ReanalysedClaim c{"top2_capacity_pair_suboptimal",
                      "S(best pair) - S(top-2 capacity pair), chosen on replicates " + h.selection +
                          ", tested on " + h.test,
                      static_cast<std::int64_t>(std::count(h.test.begin(), h.test.end(), '+') +
                                                (h.test.empty() ? 0 : 1)),
                      h.difference,
                      kNaN,
                      h.lo,
                      h.hi,
                      "suboptimal",
                      "(0, inf)",
                      "",
                      h.reason};
    if (!h.reason.empty())
        c.verdict = "untested";
    else if (h.chosen == h.capacity)
        c.verdict = "disagrees";  // the held-out best is that pair
    else
        c.verdict =
            stats::verdict_name(stats::judge(c.lo, c.hi, {std::nextafter(0.0, 1.0), INFINITY}));
    return c;
}

}  // namespace

Reanalysis reanalyse(const Replicates& r, const RolesResult& pre, std::uint64_t seed) {
    Reanalysis out;
    out.held_out = held_out_pair(r, seed);
    const auto pre_claim = [&](const std::string& name) -> const ClaimRow& {
        return *std::find_if(pre.claims.begin(), pre.claims.end(),
                             [&](const ClaimRow& c) { return c.claim == name; });
    };
    const ClaimRow& regime = pre.claims.front();
    out.claims.push_back({regime.claim, regime.statistic, regime.n, regime.value, kNaN, kNaN, kNaN,
                          "", ">= 4", regime.verdict, ""});
    out.claims.push_back(sign_claim(pre_claim("singletons_from_own_rank")));
    out.claims.push_back(sign_claim(pre_claim("pairs_from_complement_delta_rank")));
    out.claims.push_back(saturation_claim(r, out.held_out, seed));
    out.claims.push_back(held_out_claim(out.held_out));
    out.claims.push_back(expansion_claim(r, pre, out.held_out, seed));
    out.claims.push_back(ranks_claim(r, pre));
    if (regime.verdict != "holds")
        for (std::size_t i = 1; i < out.claims.size(); ++i) {
            out.claims[i].verdict = "untested";
            out.claims[i].reason = "the regime gate does not hold";
        }
    return out;
}

}  // namespace compatbench::roles
