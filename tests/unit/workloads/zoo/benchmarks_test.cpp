#include <gtest/gtest.h>

#include <map>
#include <set>

#include "zoo/benchmarks.h"

using namespace compatbench::zoo;

TEST(PoolBenchmarks, SixteenInFourCategoriesWithUsableLabels) {
    const WorldSpec spec;
    const World world(spec);
    const Split s = world.make_split("train", 4000);
    const auto benchmarks = pool_benchmarks(spec);
    ASSERT_EQ(benchmarks.size(), 16u);
    std::map<std::string, int> per_category;
    std::set<std::vector<int>> labelings;
    for (const auto& b : benchmarks) {
        ++per_category[b.category];
        const auto y = benchmark_labels(b, s.scenes, spec);
        std::vector<int> count(static_cast<std::size_t>(b.classes), 0);
        for (int v : y) {
            ASSERT_GE(v, 0) << b.name;
            ASSERT_LT(v, b.classes) << b.name;
            ++count[static_cast<std::size_t>(v)];
        }
        for (int c : count) EXPECT_GT(c, 0) << b.name << ": a class never occurs";
        EXPECT_TRUE(labelings.insert(y).second) << b.name << " repeats another benchmark";
    }
    for (const auto& category : benchmark_categories())
        EXPECT_EQ(per_category[category], 4) << category;
    // Knowledge facts depend on the concept alone: every scene of a concept agrees.
    const auto facts = benchmark_labels(benchmarks[4], s.scenes, spec);
    std::map<int, int> fact_of;
    for (std::size_t i = 0; i < facts.size(); ++i) {
        auto [it, fresh] = fact_of.emplace(s.scenes.concept_id[i], facts[i]);
        EXPECT_EQ(it->second, facts[i]);
    }
}
