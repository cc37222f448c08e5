// methods.md §4: Capacity, Necessity, rankings, effective rank and the role taxonomy.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "roles/analysis.h"
#include "roles/reanalysis.h"

using namespace compatbench::roles;

namespace {

// Two encoders a (bit 0) and b (bit 1), one category; the full set trained twice.
Replicates two_encoders() {
    Replicates r;
    r.encoders = {"a", "b"};
    r.categories = {"c1"};
    r.mask = {1, 2, 3, 3};
    r.average = {0.5, 0.3, 0.58, 0.62};
    r.im_average = {0.4, 0.35, 0.6, 0.6};
    r.params = {10, 20, 30, 30};
    r.category["c1"] = {0.4, 0.2, 0.5, 0.5};
    r.erank = {{3, NAN, 4, 4}, {NAN, 2, 1.5, 1.5}};
    return r;
}

// Three encoders a, b, c; three replicates of every subset (sd 0.01). Singletons 0.5, 0.3,
// 0.4; the best pair a+b (0.7) is not the top-2 Capacity pair a+c (0.6); the full pool 0.72.
Subsets three_encoders(double sd = 0.01) {
    Subsets s;
    s.encoders = {"a", "b", "c"};
    s.full = 7;
    s.tr = {{1, 0.5}, {2, 0.3}, {4, 0.4}, {3, 0.7}, {5, 0.6}, {6, 0.55}, {7, 0.72}};
    s.im = s.tr;
    for (const auto& [u, v] : s.tr) {
        s.sd[u] = sd;
        s.replicates[u] = 3;
        s.params[u] = std::popcount(u);
    }
    s.erank = {{1, {3, NAN, NAN}},   {2, {NAN, 2, NAN}},   {4, {NAN, NAN, 1}}, {3, {3.1, 2.5, NAN}},
               {5, {2.8, NAN, 1.5}}, {6, {NAN, 2.2, 0.8}}, {7, {3, 2, 1}}};
    return s;
}

const ClaimRow& claim(const RolesResult& r, const std::string& name) {
    for (const auto& c : r.claims)
        if (c.claim == name) return c;
    throw std::runtime_error("no claim " + name);
}

}  // namespace

TEST(EncoderRoles, SubsetMeansOverReplicates) {
    const Subsets s = subset_means(two_encoders());
    EXPECT_EQ(s.full, 3u);
    EXPECT_DOUBLE_EQ(s.tr.at(3), 0.6);
    EXPECT_NEAR(s.sd.at(3), std::sqrt(2 * 0.02 * 0.02), 1e-12);
    EXPECT_TRUE(std::isnan(s.sd.at(1)));
    EXPECT_EQ(s.names(3), "a+b");
    EXPECT_DOUBLE_EQ(s.erank.at(3)[1], 1.5);
}

TEST(EncoderRoles, CapacityNecessityAndRankings) {
    const RolesResult r = analyse(subset_means(two_encoders()), 0.01);
    ASSERT_EQ(r.capacity_necessity.size(), 4u);  // (overall, c1) × 2 encoders
    const auto& a = r.capacity_necessity[0];
    EXPECT_EQ(a.category, "overall");
    EXPECT_DOUBLE_EQ(a.capacity, 0.5 / 0.6);
    EXPECT_DOUBLE_EQ(a.necessity, 0.6 - 0.3);
    ASSERT_EQ(r.rankings.size(), 2u);
    EXPECT_EQ(r.rankings[0].tr_singleton_rank, 1);
    EXPECT_EQ(r.rankings[1].tr_singleton_rank, 2);
    EXPECT_EQ(r.rankings[0].contexts, 1);
    EXPECT_TRUE(std::isnan(r.rankings[0].tr_context_var));  // one context
    EXPECT_EQ(r.ranking_agreement[0].tr_first, "a");
    // Spearman of two encoders is undefined (n < 3), for both rankings: said, not invented.
    EXPECT_TRUE(std::isnan(r.ranking_agreement[0].spearman));
    ASSERT_GE(r.notes.size(), 2u);
    EXPECT_EQ(r.notes[0].rfind("singleton Spearman: ", 0), 0u);
    EXPECT_EQ(r.notes[1].rfind("leave_one_out Spearman: ", 0), 0u);
}

TEST(EncoderRoles, SizesPairsAndSaturation) {
    const RolesResult r = analyse(subset_means(two_encoders()), 0.01);
    ASSERT_EQ(r.by_size.size(), 2u);
    EXPECT_EQ(r.by_size[0].best, "a");
    EXPECT_DOUBLE_EQ(r.by_size[0].fraction_of_full, 0.5 / 0.6);
    EXPECT_DOUBLE_EQ(r.by_size[0].mean_score, 0.4);
    EXPECT_EQ(r.by_size[1].best, "a+b");
    ASSERT_EQ(r.best_pair.size(), 2u);
    EXPECT_DOUBLE_EQ(r.best_pair[0].gap_closed, 1.0);  // the pair is the full set
    ASSERT_EQ(r.saturation.size(), 2u);                // average, c1
    EXPECT_EQ(r.saturation[0].saturation_size, 2);
    EXPECT_EQ(analyse(subset_means(two_encoders()), 0.2).saturation[0].saturation_size, 1);
}

TEST(EncoderRoles, EffectiveRankAndTaxonomy) {
    const RolesResult r = analyse(subset_means(two_encoders()), 0.01);
    EXPECT_DOUBLE_EQ(r.erank[0].singleton_erank, 3);
    EXPECT_DOUBLE_EQ(r.erank[1].mean_erank_by_size[1], 1.5);
    ASSERT_EQ(r.delta_rank.size(), 2u);  // a and b in a+b
    EXPECT_EQ(r.delta_rank[0].subset, "a+b");
    EXPECT_DOUBLE_EQ(r.delta_rank[0].delta_rank, 1.0);
    EXPECT_DOUBLE_EQ(r.delta_rank[1].delta_rank, -0.5);
    // Medians: capacity (0.833, 0.5) -> 0.667; necessity (0.3, 0.1) -> 0.2.
    ASSERT_EQ(r.taxonomy.size(), 2u);
    EXPECT_EQ(r.taxonomy[0].role, "core");
    EXPECT_EQ(r.taxonomy[1].role, "specialist");  // all its category necessity in c1
    EXPECT_DOUBLE_EQ(r.taxonomy[1].top_category_share, 1.0);
    EXPECT_EQ(r.taxonomy[1].top_category, "c1");
}

TEST(EncoderRoles, TheBestPairsAnchorAndComplement) {
    const RolesResult r = analyse(three_encoders(), 0.01);
    ASSERT_EQ(r.best_pair.size(), 2u);
    const BestPairRow& best = r.best_pair[0];
    EXPECT_EQ(best.pair, "a+b");
    EXPECT_EQ(best.anchor, "a");
    EXPECT_EQ(best.complement, "b");
    EXPECT_DOUBLE_EQ(best.complement_score, 0.3);
    EXPECT_NEAR(best.anchor_delta_rank, 0.1, 1e-12);
    EXPECT_NEAR(best.complement_delta_rank, 0.5, 1e-12);
    EXPECT_NEAR(best.gap_closed, 0.4 / 0.42, 1e-12);  // from the complement: the seed's
    EXPECT_NEAR(best.gap_closed_from_anchor, 0.2 / 0.22, 1e-12);
    const BestPairRow& top2 = r.best_pair[1];
    EXPECT_EQ(top2.pair, "a+c");
    EXPECT_EQ(top2.complement, "c");
    EXPECT_NEAR(top2.anchor_delta_rank, -0.2, 1e-12);
    EXPECT_EQ(r.delta_rank.size(), 9u);  // 3 pairs × 2 + the full pool × 3
}

TEST(EncoderRoles, TheSeedsClaimsByTheirRules) {
    const RolesResult r = analyse(three_encoders(), 0.01);
    ASSERT_EQ(r.claims.size(), 7u);
    EXPECT_EQ(r.claims[0].claim, "regime");
    EXPECT_EQ(r.claims[0].verdict, "holds");
    EXPECT_GT(r.claims[0].value, 4);
    // Singleton erank (3, 2, 1) against score (0.5, 0.3, 0.4): rho 0.5, not significant.
    EXPECT_NEAR(claim(r, "singletons_from_own_rank").value, 0.5, 1e-12);
    EXPECT_EQ(claim(r, "singletons_from_own_rank").verdict, "disagrees");
    // The complements' Δrank (0.5, 0.5, 0.2) against the pairs' scores (0.7, 0.6, 0.55).
    EXPECT_NEAR(claim(r, "pairs_from_complement_delta_rank").value, 1.5 / std::sqrt(3.0), 1e-12);
    EXPECT_EQ(claim(r, "pairs_from_complement_delta_rank").verdict, "disagrees");
    EXPECT_EQ(claim(r, "full_pool_saturation").verdict, "agrees");  // 0.952 >= 0.9
    EXPECT_NEAR(claim(r, "top2_capacity_pair_suboptimal").value, 0.1, 1e-12);
    EXPECT_EQ(claim(r, "top2_capacity_pair_suboptimal").verdict, "agrees");
    EXPECT_EQ(claim(r, "anchor_holds_complement_expands").verdict, "agrees");
    EXPECT_EQ(claim(r, "retraining_ranks_differently").verdict, "disagrees");  // IM = TR
    // A spread within the replicates' noise: the gate fails and no claim is judged.
    const RolesResult noisy = analyse(three_encoders(0.2), 0.01);
    EXPECT_EQ(noisy.claims[0].verdict, "fails");
    for (std::size_t i = 1; i < noisy.claims.size(); ++i)
        EXPECT_EQ(noisy.claims[i].verdict, "untested") << noisy.claims[i].claim;
}

TEST(EncoderRoles, ClaimsThatCannotBeJudgedAreUntested) {
    // One replicate per subset: no standard error, so no regime and no verdict.
    Subsets one = three_encoders();
    for (auto& [u, n] : one.replicates) n = 1;
    for (auto& [u, sd] : one.sd) sd = NAN;
    const RolesResult r1 = analyse(one, 0.01);
    ASSERT_EQ(r1.claims.size(), 7u);
    for (const auto& c : r1.claims) EXPECT_EQ(c.verdict, "untested") << c.claim;
    // Equal replicates measure no noise either.
    Subsets equal = three_encoders(0.0);
    EXPECT_EQ(analyse(equal, 0.01).claims[0].verdict, "untested");
    // Frozen encoders: every erank as alone, so Δrank is 0 and its claims are untested.
    Subsets frozen = three_encoders();
    for (auto& [u, v] : frozen.erank)
        for (std::size_t e = 0; e < 3; ++e)
            if (u & (1u << e)) v[e] = frozen.erank.at(1u << e)[e];
    const RolesResult rf = analyse(frozen, 0.01);
    EXPECT_EQ(claim(rf, "pairs_from_complement_delta_rank").verdict, "untested");
    EXPECT_EQ(claim(rf, "anchor_holds_complement_expands").verdict, "untested");
    EXPECT_EQ(claim(rf, "full_pool_saturation").verdict, "agrees");  // Δrank plays no part
    // A singleton that beats the full pool: the gap from it is undefined.
    Subsets over = three_encoders();
    over.tr[2] = 0.75;  // b alone above the full pool's 0.72
    const RolesResult ro = analyse(over, 0.01);
    EXPECT_EQ(ro.best_pair[0].anchor, "b");
    EXPECT_TRUE(std::isnan(ro.best_pair[0].gap_closed_from_anchor));
    // A missing singleton: the pair has no anchor; its row says so and judges nothing.
    Subsets gone = three_encoders();
    gone.tr.erase(2);
    const RolesResult rg = analyse(gone, 0.01);
    EXPECT_EQ(rg.best_pair[0].pair, "a+b");
    EXPECT_EQ(rg.best_pair[0].anchor, "");
    EXPECT_TRUE(std::isnan(rg.best_pair[0].gap_closed));
    EXPECT_EQ(claim(rg, "full_pool_saturation").verdict, "untested");
    EXPECT_EQ(claim(rg, "anchor_holds_complement_expands").verdict, "untested");
    ASSERT_EQ(rg.claims.size(), 7u);
}

TEST(EncoderRoles, MissingSubsetIsNoted) {
    Replicates in = two_encoders();
    in.mask = {1, 3, 3, 3};  // subset {b} never finished
    const RolesResult r = analyse(subset_means(in), 0.01);
    EXPECT_EQ(r.notes.front(), "subset 2 has no finished task");
    EXPECT_TRUE(std::isnan(r.capacity_necessity[2].capacity));
}

TEST(EncoderRoles, NoFinishedSubsetGivesNotesNotAnError) {
    Replicates in = two_encoders();
    in.mask.clear();
    in.average.clear();
    in.im_average.clear();
    in.params.clear();
    in.category["c1"].clear();
    in.erank = {{}, {}};
    const RolesResult r = analyse(subset_means(in), 0.01);
    ASSERT_GE(r.notes.size(), 3u);
    EXPECT_EQ(r.notes[0], "subset 1 has no finished task");
    EXPECT_EQ(r.notes[2], "subset 3 has no finished task");
    ASSERT_EQ(r.capacity_necessity.size(), 4u);  // per encoder: overall and c1
    EXPECT_TRUE(std::isnan(r.capacity_necessity[0].capacity));
}

TEST(RolesScores, CategoryMeansThenTheOverallMean) {
    const std::vector<std::string> bench = {"ocr", "general", "ocr", "general", "ocr"};
    const std::vector<std::string> cats = {"general", "ocr", "knowledge"};
    const std::vector<double> s = {0.3, 0.5, 0.6, 0.7, 0.9};
    const auto m = category_means(s, bench, cats);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_DOUBLE_EQ(m[0], 0.6);    // (0.5 + 0.7) / 2
    EXPECT_DOUBLE_EQ(m[1], 0.6);    // (0.3 + 0.6 + 0.9) / 3
    EXPECT_TRUE(std::isnan(m[2]));  // no benchmark in the category
    EXPECT_DOUBLE_EQ(m[3], 0.6);
    const auto none = category_means({}, bench, cats);
    for (double v : none) EXPECT_TRUE(std::isnan(v));
    EXPECT_THROW(category_means(std::vector<double>{1.0}, bench, cats), std::invalid_argument);
}

namespace {

// three_encoders() as replicates: `reps` of every subset, replicate k's score the subset's
// mean plus a noise that differs by subset and replicate (mean 0 over four replicates).
Replicates three_replicated(int reps) {
    const Subsets s = three_encoders();
    Replicates r;
    r.encoders = s.encoders;
    const double noise[] = {0.01, -0.01, 0.004, -0.004};
    for (const auto& [mask, score] : s.tr)
        for (int k = 0; k < reps; ++k) {
            r.mask.push_back(mask);
            r.replicate.push_back(k);
            const double d = noise[k % 4] * (1.0 + 0.1 * mask);
            r.average.push_back(score + d);
            r.im_average.push_back(score + d);
            r.params.push_back(std::popcount(mask));
        }
    for (std::size_t e = 0; e < 3; ++e) {
        r.erank.emplace_back();
        for (std::size_t i = 0; i < r.mask.size(); ++i)
            r.erank[e].push_back(s.erank.at(r.mask[i])[e] +
                                 0.01 * static_cast<double>(r.replicate[i]));
    }
    return r;
}

const ReanalysedClaim& again(const Reanalysis& a, const std::string& name) {
    for (const auto& c : a.claims)
        if (c.claim == name) return c;
    throw std::runtime_error("no claim " + name);
}

}  // namespace

TEST(EncoderRoles, ReanalysisChoosesTheBestPairOnHeldOutReplicates) {
    const Replicates r = three_replicated(4);
    const RolesResult pre = analyse(subset_means(r), 0.01);
    const Reanalysis a = reanalyse(r, pre, 42);
    const HeldOutPair& h = a.held_out;
    // Two replicates select, the other two test; none is in both.
    EXPECT_EQ(std::count(h.selection.begin(), h.selection.end(), '+'), 1);
    EXPECT_EQ(std::count(h.test.begin(), h.test.end(), '+'), 1);
    for (char k : h.selection) {
        if (k != '+') {
            EXPECT_EQ(h.test.find(k), std::string::npos) << h.selection << " " << h.test;
        }
    }
    EXPECT_EQ(h.chosen, "a+b");
    EXPECT_EQ(h.capacity, "a+c");
    EXPECT_NEAR(h.difference, 0.1, 0.01);
    EXPECT_LT(h.lo, h.difference);
    EXPECT_TRUE(h.reason.empty()) << h.reason;
    EXPECT_EQ(again(a, "top2_capacity_pair_suboptimal").verdict, "agrees");
    // Three encoders: the smallest exact p is 2/3!, so a sign claim cannot be significant.
    const auto& own = again(a, "singletons_from_own_rank");
    EXPECT_EQ(own.verdict, "inconclusive");
    EXPECT_NE(own.band.find("n = 3"), std::string::npos) << own.band;
    // Every claim is one of the four outcomes, and each but the regime row has its band.
    for (const auto& c : a.claims) {
        EXPECT_TRUE(c.verdict == "agrees" || c.verdict == "disagrees" ||
                    c.verdict == "inconclusive" || c.verdict == "untested" || c.claim == "regime")
            << c.claim << ": " << c.verdict;
        EXPECT_FALSE(c.band.empty()) << c.claim;
    }
    // The same seed splits the same way; one replicate leaves nothing to test on.
    EXPECT_EQ(reanalyse(r, pre, 42).held_out.selection, h.selection);
    const Replicates one = three_replicated(1);
    const Reanalysis lone = reanalyse(one, analyse(subset_means(one), 0.01), 42);
    EXPECT_EQ(lone.held_out.reason, "one replicate: none is left to test on");
    EXPECT_EQ(again(lone, "top2_capacity_pair_suboptimal").verdict, "untested");
}
