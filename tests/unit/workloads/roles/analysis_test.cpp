// methods.md §4: Capacity, Necessity, rankings, effective rank and the role taxonomy.
#include <gtest/gtest.h>

#include <cmath>

#include "roles/analysis.h"

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
    ASSERT_EQ(r.erank_pairs.size(), 2u);
    EXPECT_DOUBLE_EQ(r.erank_pairs[0].delta_rank, 1.0);
    EXPECT_DOUBLE_EQ(r.erank_pairs[1].delta_rank, -0.5);
    // Medians: capacity (0.833, 0.5) -> 0.667; necessity (0.3, 0.1) -> 0.2.
    ASSERT_EQ(r.taxonomy.size(), 2u);
    EXPECT_EQ(r.taxonomy[0].role, "core");
    EXPECT_EQ(r.taxonomy[1].role, "specialist");  // all its category necessity in c1
    EXPECT_DOUBLE_EQ(r.taxonomy[1].top_category_share, 1.0);
    EXPECT_EQ(r.taxonomy[1].top_category, "c1");
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
