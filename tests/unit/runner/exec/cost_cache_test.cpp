// Task costs remembered across runs (exec/cost_cache.h) and how the cost model prices a group
// from them (exec/cost_model.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <fstream>

#include "exec/cost_cache.h"
#include "exec/cost_model.h"
#include "experiment/experiment.h"

using namespace compatbench;
namespace fs = std::filesystem;

namespace {
Config config_of(const std::string& tasks) {
    return parse_config("experiment: {name: t, seed: 1}\ntasks:\n" + tasks, "t.yaml");
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("cost_cache_test_" + name);
    fs::remove_all(dir);
    return dir;
}
}  // namespace

// The fingerprint follows what a task computes, not what the group is called or hinted.
TEST(CostCache, FingerprintIgnoresNamesAndHints) {
    const Config c = config_of(
        "  - {name: a, kind: sleep, count: 2, seconds: 0.5}\n"
        "  - {name: b, kind: sleep, count: 2, seconds: 0.5, cost: 7, retries: 1, after: [a]}\n"
        "  - {name: c, kind: sleep, count: 2, seconds: 0.6}\n"
        "  - {name: d, kind: noop, count: 2}\n");
    EXPECT_EQ(group_fingerprint(c.groups[0]).size(), 16u);
    EXPECT_EQ(group_fingerprint(c.groups[0]), group_fingerprint(c.groups[1]));
    EXPECT_NE(group_fingerprint(c.groups[0]), group_fingerprint(c.groups[2]));
    EXPECT_NE(group_fingerprint(c.groups[2]), group_fingerprint(c.groups[3]));
}

TEST(CostCache, StoresLoadsAndKeepsOtherEntries) {
    const fs::path path = fresh_dir("store") / "sub/costs.json";
    EXPECT_TRUE(load_cost_cache(path).empty());  // absent: nothing remembered
    store_cost_cache(path, {{"aaaa", {1.5, 3, "a", "node1", 10.0}}});
    store_cost_cache(path, {{"bbbb", {0.25, 8, "b", "node2", 11.0}}});
    store_cost_cache(path, {{"aaaa", {2.0, 4, "a", "node1", 12.0}}});  // the newest run wins
    const auto got = load_cost_cache(path);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_DOUBLE_EQ(got.at("aaaa").seconds, 2.0);
    EXPECT_EQ(got.at("aaaa").samples, 4u);
    EXPECT_EQ(got.at("bbbb").host, "node2");
    EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(CostCache, ADamagedCacheIsNamedAndReplaced) {
    const fs::path path = fresh_dir("damaged") / "costs.json";
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "{ not json";
    try {
        load_cost_cache(path);
        FAIL() << "a damaged cache was read";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string() + ": not a cost cache"),
                  std::string::npos);
    }
    store_cost_cache(path, {{"aaaa", {1.0, 1, "a", "h", 1.0}}});
    EXPECT_EQ(load_cost_cache(path).size(), 1u);
}

// The config's key first, then COMPATBENCH_COST_CACHE, then XDG_CACHE_HOME, then HOME.
TEST(CostCache, PathOrder) {
    const char* home_then = std::getenv("HOME");
    const std::string home = home_then ? home_then : "";
    RunnerSettings r;
    setenv("COMPATBENCH_COST_CACHE", "/tmp/env-costs.json", 1);
    r.cost_cache = "mine.json";
    EXPECT_EQ(cost_cache_path(r, "/cfg"), fs::path("/cfg/mine.json"));
    r.cost_cache = "none";
    EXPECT_TRUE(cost_cache_path(r, "/cfg").empty());
    r.cost_cache.clear();
    EXPECT_EQ(cost_cache_path(r, "/cfg"), fs::path("/tmp/env-costs.json"));
    setenv("COMPATBENCH_COST_CACHE", "none", 1);
    EXPECT_TRUE(cost_cache_path(r, "/cfg").empty());
    unsetenv("COMPATBENCH_COST_CACHE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    EXPECT_EQ(cost_cache_path(r, "/cfg"), fs::path("/xdg/compatbench/costs.json"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    EXPECT_EQ(cost_cache_path(r, "/cfg"), fs::path("/home/u/.cache/compatbench/costs.json"));
    if (home_then) setenv("HOME", home.c_str(), 1);
}

// A remembered group is priced at what it cost, with half and twice that as bounds, until
// this run measures it; the ETA says how many groups are priced so.
TEST(CostCache, RememberedCostsPriceUnmeasuredGroups) {
    const Config config = config_of(
        "  - {name: a, kind: noop, count: 4}\n"
        "  - {name: b, kind: noop, count: 2, after: [a]}\n");
    const TaskGraph graph = TaskGraph::build(config);
    CostModel model(config);
    model.remember(1, 3.0);
    EXPECT_TRUE(model.remembered(1));
    EXPECT_FALSE(model.remembered(0));
    EXPECT_DOUBLE_EQ(model.expected(1), 3.0);
    EXPECT_DOUBLE_EQ(model.expected(1, Estimate::low), 1.5);
    EXPECT_DOUBLE_EQ(model.expected(1, Estimate::high), 6.0);
    model.record(0, 1.0);
    RunState state;
    state.finished.assign(graph.tasks().size(), false);
    const EtaRange r = remaining_range(graph, config, model, state, cpu_ranks(1));
    EXPECT_EQ(r.unmeasured, 1u);
    EXPECT_EQ(r.remembered, 1u);
    EXPECT_DOUBLE_EQ(r.mid, 4 * 1.0 + 2 * 3.0);
    EXPECT_DOUBLE_EQ(r.low, 4 * 1.0 / kMeasuredBand + 2 * 1.5);
    model.record(1, 5.0);  // measured now: the cache no longer counts
    EXPECT_DOUBLE_EQ(model.expected(1), 5.0);
}
