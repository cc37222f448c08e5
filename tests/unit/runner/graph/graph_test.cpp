#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/hash.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

using namespace compatbench;

namespace {
TaskGraph graph_of(const std::string& yaml, Config& config) {
    config = parse_config(yaml, "test.yaml");
    return TaskGraph::build(config);
}
}  // namespace

TEST(Seeds, StableAcrossBuildsAndPlatforms) {
    // Golden values: a change here changes every result of every experiment.
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(task_seed(42, "work/1"), task_seed(42, "work/1"));
    EXPECT_NE(task_seed(42, "work/1"), task_seed(43, "work/1"));
    EXPECT_NE(task_seed(42, "work/1"), task_seed(42, "work/2"));
    const double u = unit_double(~0ULL);
    EXPECT_LT(u, 1.0);
    EXPECT_GE(unit_double(0), 0.0);
}

TEST(Graph, ExpandsGridsCountsAndIds) {
    Config c;
    const auto g = graph_of(
        "experiment: {name: t, seed: 7}\n"
        "tasks:\n"
        "  - {name: a, kind: noop, count: 3}\n"
        "  - {name: b, kind: noop, grid: {x: [1, 2], y: [p, q, r]}}\n"
        "  - {name: c, kind: noop, grid: {x: [1, 2]}, id: 'cc/{x}', after: ['a/{x}', a]}\n"
        "  - {name: d, kind: noop}\n",
        c);
    ASSERT_EQ(g.tasks().size(), 3u + 6u + 2u + 1u);
    EXPECT_EQ(g.tasks()[0].id, "a/0");
    EXPECT_EQ(g.tasks()[3].id, "b/1+p");
    EXPECT_EQ(g.tasks()[4].id, "b/1+q");
    EXPECT_EQ(g.tasks()[6].id, "b/2+p");
    EXPECT_EQ(g.tasks()[9].id, "cc/1");
    EXPECT_EQ(g.tasks()[11].id, "d");
    EXPECT_EQ(g.tasks()[9].deps, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_EQ(g.tasks()[0].seed, task_seed(7, "a/0"));
    EXPECT_EQ(g.group_stage(), (std::vector<int>{0, 0, 1, 0}));
    // Table columns: task_id, seed, grid keys typed, outputs.
    const auto& cols = g.tables()[1].columns;
    ASSERT_EQ(cols.size(), 5u);
    EXPECT_EQ(cols[2].name, "x");
    EXPECT_EQ(cols[2].type, ColumnType::i64);
    EXPECT_EQ(cols[3].type, ColumnType::str);
    EXPECT_EQ(cols[4].name, "value");
    EXPECT_EQ(g.tables()[0].columns[0].width, 3u);  // "a/0"
    EXPECT_EQ(g.find("b/2+r").value(), 8u);
    EXPECT_FALSE(g.find("nope").has_value());
}

TEST(Graph, CriticalPathFollowsCostHints) {
    Config c;
    const auto g = graph_of(
        "experiment: {name: t, seed: 7}\n"
        "tasks:\n"
        "  - {name: a, kind: noop, count: 2, cost: 5}\n"
        "  - {name: b, kind: noop, count: 2, after: ['a/{i}']}\n"
        "  - {name: c, kind: noop, cost: 2, after: [b]}\n",
        c);
    const auto path = g.critical_path(c);
    EXPECT_DOUBLE_EQ(path.cost, 5 + 1 + 2);
    ASSERT_EQ(path.tasks.size(), 3u);
    EXPECT_EQ(g.tasks()[path.tasks.back()].id, "c");
}

TEST(Graph, ParamsFromGridOverrideKindKeys) {
    Config c;
    const auto g = graph_of(
        "experiment: {name: t, seed: 7}\n"
        "tasks:\n"
        "  - {name: s, kind: sleep, seconds: 1, grid: {seconds: [0.5, 0.25]}}\n",
        c);
    EXPECT_EQ(g.params(c, 1).at("seconds").as_double(), 0.25);
}

TEST(Graph, FitsAndMergesWaitForTheirGridPair) {
    // An evaluated pair is fitted (or merged) only after its ease and ceiling inputs exist:
    // a pair whose grid task failed is skipped, not fitted and then missing from the grid.
    const Config config =
        load_config(std::string(COMPATBENCH_TEST_DATA) + "/../../configs/smoke.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const auto& tasks = graph.tasks();
    std::size_t checked = 0;
    for (const auto& t : tasks) {
        const std::string& group = config.groups[t.group].name;
        const std::string grid = group == "merges" ? "merge_grid/" : "align_grid/";
        if (group != "align_pairs" && group != "merges") continue;
        const std::string pair = t.id.substr(t.id.find('/') + 1);
        const bool waits = std::any_of(t.deps.begin(), t.deps.end(),
                                       [&](std::size_t d) { return tasks[d].id == grid + pair; });
        EXPECT_TRUE(waits) << t.id << " does not wait for " << grid << pair;
        ++checked;
    }
    EXPECT_EQ(checked, 10u);  // 4 alignment fits and 6 merges in the smoke config
}

TEST(Graph, KwayMergesOfACheckpointSetNameTheirCheckpoints) {
    // configs/real-smoke.yaml: PRISM's K-way merges of the PyTorch fine-tunes (a
    // checkpoint_set), each with its members' checkpoints in merge order and the backbone's;
    // the drift merges take the manifest's checkpoints along fine-tuning.
    const Config config =
        load_config(std::string(COMPATBENCH_TEST_DATA) + "/../../configs/real-smoke.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    std::vector<std::string> drift_steps;
    std::size_t kway = 0;
    for (std::size_t index = 0; index < graph.tasks().size(); ++index) {
        const Task& t = graph.tasks()[index];
        const std::string& group = config.groups[t.group].name;
        if (group != "prism_merges" && group != "drift_merges") continue;
        const auto& members = graph.lists(config, index).at("member_checkpoints");
        const auto& tasks = graph.lists(config, index).at("member_tasks");
        const auto params = graph.params(config, index);
        ASSERT_EQ(members.size(), tasks.size()) << t.id;
        EXPECT_EQ(params.at("base_checkpoint").text, "@out/real/models/mlp_sup.safetensors");
        for (std::size_t i = 0; i < members.size(); ++i) {
            const std::string stem = "@out/real/finetunes/mlp_sup_" + tasks[i].text;
            if (group == "prism_merges") {
                EXPECT_EQ(members[i].text, stem + ".safetensors") << t.id;
            } else if (params.at("step").text != "60") {
                EXPECT_EQ(members[i].text, stem + "@" + params.at("step").text + ".safetensors");
            }
        }
        if (group == "drift_merges") drift_steps.push_back(params.at("step").text);
        kway += group == "prism_merges";
    }
    EXPECT_EQ(kway, 21u);  // 11 operators at K = 2, 10 at K = 3 (SLERP: K = 2 only)
    EXPECT_EQ(drift_steps, (std::vector<std::string>{"20", "40", "60"}));
}

TEST(Graph, KwayMergesOfACheckpointSetNeedTheirSteps) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(::testing::TempDir()) / "kway_steps";
    fs::create_directories(dir);
    std::ofstream(dir / "m.yaml")
        << "backbones: [{name: b, family: f, paradigm: p, checkpoint: b.safetensors}]\n"
           "finetunes:\n"
           "  - {name: b+x, base: b, task: x, checkpoint: x.safetensors,\n"
           "     checkpoints: {10: x10.safetensors, 20: x20.safetensors}}\n"
           "  - {name: b+y, base: b, task: y, checkpoint: y.safetensors,\n"
           "     checkpoints: {10: y10.safetensors}}\n";
    const auto config_with = [&](const std::string& kway) {
        std::ofstream(dir / "c.yaml")
            << "experiment: {name: t, seed: 1}\ntasks:\n"
               "  - {name: fts, kind: checkpoint_set, table: t/f, manifest: m.yaml}\n"
               "  - {name: km, kind: kway_merge, table: t/k, finetunes: fts, k: [2],\n"
               "     methods: [task_arithmetic], coefs: [1.0]"
            << kway << "}\n";
        return (dir / "c.yaml").string();
    };
    const auto message = [&](const std::string& kway) {
        try {
            load_config(config_with(kway));
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message("").find("are evaluated by a command"), std::string::npos) << message("");
    const std::string command = ", evaluate: command, command: 'eval {finetuned} {tasks}'";
    EXPECT_NO_THROW(load_config(config_with(command)));
    const std::string drift = command + ", checkpoints: true";
    EXPECT_NE(message(drift).find("fine-tune 'b+y' has no checkpoint at step 20"),
              std::string::npos)
        << message(drift);
    // The final checkpoints' step must be one value for all.
    std::ofstream(dir / "m.yaml", std::ios::app)
        << "  - {name: b+z, base: b, task: z, checkpoint: z.safetensors, steps: 30}\n";
    EXPECT_NE(message(command).find("give different 'steps'"), std::string::npos)
        << message(command);
}

TEST(Graph, ExcludeLeavesOutTheMatchesAndTheirDependents) {
    // The smoke config without one vision encoder: its features, k-NN lists, grid pairs and
    // fits go; the other encoders' stay, with their tables' rows numbered afresh.
    const Config config =
        load_config(std::string(COMPATBENCH_TEST_DATA) + "/../../configs/smoke.yaml");
    const TaskGraph full = TaskGraph::build(config);
    const TaskGraph graph = TaskGraph::build(config, {"*sup_v_1*"});
    EXPECT_EQ(graph.excluded(), (std::vector<std::string>{"*sup_v_1*"}));
    std::size_t gone = 0;
    for (const auto& t : full.tasks()) {
        const bool kept = graph.find(t.id).has_value();
        if (t.id.find("sup_v_1") != std::string::npos) {
            EXPECT_FALSE(kept) << t.id;
        }
        gone += !kept;
    }
    EXPECT_EQ(graph.tasks().size() + gone, full.tasks().size());
    EXPECT_GT(gone, 3u);
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
        std::size_t row = 0;
        for (std::size_t t = graph.group_begin(g); t < graph.group_end(g); ++t) {
            for (std::size_t d : graph.tasks()[t].deps) EXPECT_LT(d, graph.tasks().size());
            if (graph.table_of_group(g).path == config.groups[g].table && t == graph.group_begin(g))
                row = graph.tasks()[t].row;
            EXPECT_EQ(graph.tasks()[t].row, row++) << graph.tasks()[t].id;
        }
    }
    EXPECT_THROW(TaskGraph::build(config, {"no_such_task*"}), ConfigError);
}

TEST(Graph, KwayMergesOfEveryPairInAnOrderAtEachKeepFloor) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(::testing::TempDir()) / "kway_pairs";
    fs::create_directories(dir);
    std::ofstream(dir / "m.yaml")
        << "backbones: [{name: b, family: f, paradigm: p, checkpoint: b.safetensors}]\n"
           "finetunes:\n"
           "  - {name: b+x, base: b, task: x, checkpoint: x.safetensors}\n"
           "  - {name: b+y, base: b, task: y, checkpoint: y.safetensors}\n"
           "  - {name: b+z, base: b, task: z, checkpoint: z.safetensors}\n";
    const auto config_with = [&](const std::string& kway) {
        const bool coefs = kway.find("coefs:") != std::string::npos;
        std::ofstream(dir / "c.yaml")
            << "experiment: {name: t, seed: 1}\ntasks:\n"
               "  - {name: fts, kind: checkpoint_set, table: t/f, manifest: m.yaml}\n"
               "  - {name: km, kind: kway_merge, table: t/k, finetunes: fts, k: [2, 3],\n"
               "     kappas: [1], evaluate: command, command: 'e {finetuned}'"
            << (coefs ? "" : ", coefs: [1.0]") << kway << "}\n";
        return (dir / "c.yaml").string();
    };
    const auto listed = [&](const std::string& kway) {
        std::vector<std::pair<std::string, std::string>> out;  // (id, members)
        const Config config = load_config(config_with(kway));
        const TaskGraph g = TaskGraph::build(config);
        for (std::size_t i = 0; i < g.tasks().size(); ++i)
            if (config.groups[g.tasks()[i].group].name == "km")
                out.push_back({g.tasks()[i].id, g.params(config, i).at("members").text});
        return out;
    };
    const auto pairs = listed(", methods: [task_arithmetic], pairs: all, order: [z, x, y]");
    ASSERT_EQ(pairs.size(), 4u);  // the 3 pairs in the order's sequence, then the K = 3 merge
    EXPECT_EQ(pairs[0],
              std::make_pair(std::string("km/b/k2/z+x/task_arithmetic/c1"), std::string("z,x")));
    EXPECT_EQ(pairs[1].second, "z,y");
    EXPECT_EQ(pairs[2].second, "x,y");
    EXPECT_EQ(pairs[3],
              std::make_pair(std::string("km/b/k3/task_arithmetic/c1"), std::string("z,x,y")));
    // The nested default: one K = 2 merge; the PRISM family at each floor, a key column.
    const auto floors = listed(", methods: [task_arithmetic, prism], keep_floors: [0.01, 1]");
    ASSERT_EQ(floors.size(), 6u);  // per K: TA, PRISM at 2 floors
    EXPECT_NE(floors[1].first.find("/prism/c1/kappa1/floor0.01"), std::string::npos)
        << floors[1].first;
    const Config config = load_config(config_with(", methods: [prism], keep_floors: [0.01, 1]"));
    const TaskGraph g = TaskGraph::build(config);
    for (std::size_t i = 0; i < g.tasks().size(); ++i) {
        if (config.groups[g.tasks()[i].group].name == "km") {
            EXPECT_TRUE(g.params(config, i).count("keep_floor")) << g.tasks()[i].id;
        }
    }
    const auto message = [&](const std::string& kway) {
        try {
            TaskGraph::build(load_config(config_with(kway)));
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message(", order: [x, y, w]").find("'w' is not one task of backbone 'b'"),
              std::string::npos)
        << message(", order: [x, y, w]");
    EXPECT_NE(message(", order: [x, y]").find("lists 2 tasks, backbone 'b' has 3"),
              std::string::npos);
    EXPECT_NE(message(", keep_floor: 0.1, keep_floors: [0.2]").find("not both"), std::string::npos);
    EXPECT_NE(message(", pairs: some").find("pairs"), std::string::npos);
    EXPECT_NE(message(", methods: [task_arithmetic], keep_floors: [0.2]").find("names none of it"),
              std::string::npos);
    EXPECT_NE(message(", methods: [prism], keep_floors: [0.2, 0.2]").find("given twice"),
              std::string::npos);
    EXPECT_NE(message(", methods: [ties], floor_kernels: true").find("names none of it"),
              std::string::npos);
    EXPECT_EQ(message(", methods: [prism], floor_kernels: true"), "no error");
    EXPECT_EQ(message(", methods: [ties], floor_kernels: false"), "no error");
    EXPECT_NE(message(", methods: [prism], backbones: [b, b]").find("'b' is listed twice"),
              std::string::npos);
    EXPECT_EQ(listed(", methods: [prism], backbones: [b]").size(),
              listed(", methods: [prism]").size());
    EXPECT_NE(message(", methods: [prism], backbones: [zz]").find("'zz' is not one backbone"),
              std::string::npos);
    // Coefficients keep every digit: two 1e-7 apart are two tasks with their own values.
    const auto close = listed(", methods: [task_arithmetic], coefs: [0.1234567, 0.1234568]");
    ASSERT_EQ(close.size(), 4u);
    EXPECT_NE(close[0].first, close[1].first);
    EXPECT_NE(close[0].first.find("/c0.1234567"), std::string::npos) << close[0].first;
}

TEST(Graph, AClusterColumnWithOneValueIsRefusedBeforeTheRun) {
    const std::string head =
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: w, kind: noop, grid: {model: [a, b, c], one: [z], pair: ['a,b', 'b,c']}}\n"
        "analyses:\n"
        "  - {name: c, kind: correlation, study: s, input: w, x: value, y: value, ";
    const auto build = [&](const std::string& clusters) {
        TaskGraph::build(parse_config(head + clusters + "}\n", "test.yaml"));
    };
    EXPECT_NO_THROW(build("clusters: [model]"));
    EXPECT_NO_THROW(build("clusters: [{columns: [pair], split: ','}]"));
    try {
        build("clusters: [model, one]");
        FAIL() << "a constant cluster column was accepted";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("analyses.c.clusters[1]"), std::string::npos) << what;
        EXPECT_NE(what.find("fewer than two clusters"), std::string::npos) << what;
    }
    // Leaving one family out may leave a pool with one value: the written config was checked,
    // and the run goes on (the interval then says why it is undefined).
    const Config config = parse_config(head + "clusters: [model]}\n", "test.yaml");
    EXPECT_NO_THROW(TaskGraph::build(config, {"w/b*", "w/c*"}));
    EXPECT_THROW(TaskGraph::build(parse_config(head + "clusters: [one]}\n", "test.yaml"), {"w/b*"}),
                 ConfigError);
}
