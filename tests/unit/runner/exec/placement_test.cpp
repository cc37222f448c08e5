// Placement (exec/placement.h): where a rank's devices come from, in order; how a node's
// list is shared among its ranks; threads; and the start-time check of every group's need.
#include <gtest/gtest.h>

#include "exec/placement.h"
#include "experiment/experiment.h"

using namespace compatbench;

namespace {
using Devices = std::vector<std::string>;

NodeView node(int local_rank, int local_size, bool alike = true) {
    return {"node1", local_rank, local_size, alike};
}
}  // namespace

TEST(Placement, ANodesDevicesAreSharedInContiguousNearEqualParts) {
    const Devices four = {"0", "1", "2", "3"};
    EXPECT_EQ(device_share(four, 0, 2), (Devices{"0", "1"}));
    EXPECT_EQ(device_share(four, 1, 2), (Devices{"2", "3"}));
    EXPECT_EQ(device_share(four, 0, 3), (Devices{"0", "1"}));  // the first share is larger
    EXPECT_EQ(device_share(four, 2, 3), (Devices{"3"}));
    EXPECT_EQ(device_share({"0"}, 1, 2), Devices{});  // more ranks than devices
    EXPECT_EQ(device_share({}, 0, 1), Devices{});
}

TEST(Placement, SourcesAreReadInTheDocumentedOrder) {
    RunnerSettings runner;
    PlacementEnv env;
    env.job_gpus = "4,5";
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2)).devices, Devices{"5"});
    env.step_gpus = "6,7";  // the step's before the job's
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 2)).source, "SLURM_STEP_GPUS");
    env.cuda_visible = "2,3";  // alike on the node under mpirun: shared
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2)).devices, Devices{"3"});
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2, false)).devices, (Devices{"2", "3"}));
    env.srun_step = true;  // SLURM set it for this task: taken as it is
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2)).devices, (Devices{"2", "3"}));
    env.step_gpus.reset();  // the job has GPUs, the step none on this node: inherited, none
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2)).devices, Devices{});
    env.step_gpus = "6,7";
    runner.devices = {{"other", {"9"}}, {"*", {"0", "1"}}};
    EXPECT_EQ(rank_resources(runner, {}, env, node(1, 2)).devices, Devices{"1"});
    runner.devices = {{"node1", {"8"}}, {"*", {"0", "1"}}};  // the host's own entry first
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 1)).devices, Devices{"8"});
    EXPECT_EQ(rank_resources(runner, std::string("0,1,2,3"), env, node(1, 2)).devices,
              (Devices{"2", "3"}));
    EXPECT_EQ(rank_resources(runner, std::string(""), env, node(0, 1)).devices, Devices{});
    EXPECT_THROW(rank_resources(runner, std::string("0,0"), env, node(0, 1)),
                 std::invalid_argument);
}

TEST(Placement, NoDeviceMarkersNameNone) {
    RunnerSettings runner;
    PlacementEnv env;
    for (const char* none : {"", "NoDevFiles", "-1"}) {
        env.cuda_visible = none;
        EXPECT_EQ(rank_resources(runner, {}, env, node(0, 1)).devices, Devices{}) << none;
    }
    env.cuda_visible = "0,,1";
    EXPECT_THROW(rank_resources(runner, {}, env, node(0, 1)), std::invalid_argument);
}

TEST(Placement, ThreadsFollowTheConfigThenSlurmThenTheCores) {
    RunnerSettings runner;
    PlacementEnv env;
    env.online_cpus = 8;
    env.affinity_cpus = 8;
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 2)).threads, 4);  // 8 cores, 2 ranks
    env.affinity_cpus = 1;                                              // bound to one core
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 2)).threads, 1);
    env.cpus_per_task = "3";
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 2)).threads, 3);
    runner.threads = 6;
    EXPECT_EQ(rank_resources(runner, {}, env, node(0, 2)).threads, 6);
}

TEST(Placement, AGroupNoRankCanRunFailsAtStartNamingItsNeed) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: cpu, kind: noop, count: 1}\n"
        "  - {name: train, kind: noop, count: 2, gpus: 2}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    std::vector<RankResources> ranks = {{"a", {}, 1, "none"}, {"b", {"0"}, 1, "x"}};
    const std::string problem = placement_problem(config, graph, ranks);
    EXPECT_NE(problem.find("tasks.train: gpus: 2 needs 2 devices"), std::string::npos) << problem;
    EXPECT_NE(problem.find("rank 1 on b: 1 [0]"), std::string::npos) << problem;
    ranks[1].devices = {"0", "1"};
    EXPECT_EQ(placement_problem(config, graph, ranks), "");
}

TEST(Placement, CpuWorkNeedsARankWhenGpuRanksRefuseIt) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "runner: {cpu_tasks_on_gpu_ranks: false}\n"
        "tasks:\n"
        "  - {name: cpu, kind: noop, count: 1}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const std::vector<RankResources> ranks = {{"a", {"0"}, 1, "x"}};
    EXPECT_NE(placement_problem(config, graph, ranks).find("tasks.cpu: gpus: 0 runs on CPU"),
              std::string::npos);
}

// `plan`'s simulated ranks: nodes filled in rank order, each node's devices shared among its
// ranks as a run's --devices is; and the devices a measured run's ranks held, from /meta.
TEST(Placement, SimulatedRanksShareEachNodesDevices) {
    const auto ranks = simulated_ranks(5, 2, {"0", "1", "2"});
    ASSERT_EQ(ranks.size(), 5u);
    EXPECT_EQ(ranks[0].host, "node0");
    EXPECT_EQ(ranks[0].devices, (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(ranks[1].devices, (std::vector<std::string>{"2"}));
    EXPECT_EQ(ranks[2].host, "node1");
    EXPECT_EQ(ranks[4].host, "node2");  // alone on its node: all three
    EXPECT_EQ(ranks[4].devices.size(), 3u);
    const auto one_node = simulated_ranks(4, 0, {"0", "1"});
    EXPECT_EQ(one_node[3].host, "node0");
    EXPECT_EQ(one_node[1].devices, (std::vector<std::string>{"1"}));
    EXPECT_TRUE(one_node[2].devices.empty());
    EXPECT_EQ(held_devices(placement_json(ranks)), (RankDevices{2, 1, 2, 1, 3}));
    EXPECT_THROW(held_devices("{\"devices\": 3}"), std::invalid_argument);
    EXPECT_THROW(held_devices("not json"), std::invalid_argument);
}
