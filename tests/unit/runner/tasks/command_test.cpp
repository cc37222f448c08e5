// The `command` task kind run directly: success with a JSON result, failures, timeout.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/text_template.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"
#include "tasks/task_kind.h"

using namespace compatbench;
namespace fs = std::filesystem;

namespace {
struct Fixture {
    Config config;
    TaskGraph graph;
    std::atomic<bool> cancel{false};
    fs::path out;
    RankResources resources;

    explicit Fixture(const std::string& group) {
        config = parse_config("experiment: {name: t, seed: 3}\ntasks:\n" + group, "test.yaml");
        graph = TaskGraph::build(config);
        out = fs::path(::testing::TempDir()) / ("command_test_" + config.hash);
        fs::remove_all(out);
    }
    TaskOutcome run(std::size_t index, int attempt = 1) {
        const Task& t = graph.tasks()[index];
        const TaskContext ctx{t.id,      config.groups[t.group],
                              t.params,  t.lists,
                              t.seed,    attempt,
                              0,         out,
                              cancel,    config.seed,
                              &resources};
        return config.groups[t.group].kind->run(ctx);
    }
};
}  // namespace

TEST(CommandTask, ReadsItsJsonResult) {
    Fixture f(
        "  - name: c\n    kind: command\n    grid: {word: [\"it's\"]}\n"
        "    command: \"printf '{{\\\"n\\\": %d, \\\"w\\\": \\\"%s\\\", \\\"x\\\": 0.5}}' {seed} "
        "{word} > {result}\"\n"
        "    outputs: {n: uint, w: 'str:8', x: float}\n");
    // {seed} is a 64-bit value: printf %d would overflow, so compare through the seed itself.
    const auto o = f.run(0);
    ASSERT_EQ(o.status, TaskStatus::done) << o.error;
    EXPECT_EQ(std::get<std::string>(o.outputs[1]), "it's");
    EXPECT_EQ(std::get<double>(o.outputs[2]), 0.5);
}

TEST(CommandTask, ExitCodeMissingKeyAndTimeoutFail) {
    Fixture f(
        "  - {name: bad, kind: command, command: 'echo oops >&2; exit 3'}\n"
        "  - {name: nokey, kind: command, command: 'echo {{}} > {result}', outputs: {a: int}}\n"
        "  - {name: wrong, kind: command, command: 'echo {{\\\"a\\\": \\\"x\\\"}} > {result}', "
        "outputs: {a: int}}\n"
        "  - {name: slow, kind: command, command: 'sleep 30', timeout: 0.3}\n");
    auto o = f.run(0);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("exit code 3"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("oops"), std::string::npos) << o.error;
    o = f.run(1);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("missing key 'a'"), std::string::npos) << o.error;
    o = f.run(2);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("expected an integer"), std::string::npos) << o.error;
    o = f.run(3);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("timed out"), std::string::npos) << o.error;
    EXPECT_LT(o.duration, 5.0);
}

TEST(FailTask, FailsThenSucceeds) {
    Fixture f("  - {name: f, kind: fail, fail_attempts: 2, message: boom}\n");
    EXPECT_EQ(f.run(0, 1).status, TaskStatus::failed);
    EXPECT_NE(f.run(0, 2).error.find("boom (attempt 2)"), std::string::npos);
    const auto o = f.run(0, 3);
    ASSERT_EQ(o.status, TaskStatus::done);
    EXPECT_EQ(std::get<std::int64_t>(o.outputs[0]), 3);
}

TEST(TaskContext, ListParametersAreTyped) {
    const std::map<std::string, Scalar> params;
    const std::map<std::string, std::vector<Scalar>> lists = {
        {"k_list", {Scalar::parse("10"), Scalar::parse("20")}},
        {"splits", {Scalar::parse("probe"), Scalar::parse("flickr")}}};
    const std::string id = "g/t";
    const auto config = parse_config(
        "experiment: {name: t, seed: 3}\ntasks:\n"
        "  - {name: g, kind: noop, count: 1}\n",
        "test.yaml");
    std::atomic<bool> cancel{false};
    const TaskContext ctx{id, config.groups[0], params, lists, 1, 1, 0, "", cancel, 3, nullptr};
    EXPECT_EQ(ctx.integers("k_list"), (std::vector<int>{10, 20}));
    EXPECT_EQ(ctx.texts("splits"), (std::vector<std::string>{"probe", "flickr"}));
    EXPECT_THROW(ctx.integers("splits"), std::invalid_argument);  // not ints
    EXPECT_THROW(ctx.texts("eval_list"), std::invalid_argument);  // no such list
}

// A command sees exactly its devices (none: an empty CUDA_VISIBLE_DEVICES), the rank's
// thread count, and the group's env: over both.
TEST(CommandTask, SeesItsDevicesThreadsAndEnv) {
    const std::string command =
        "    command: \"printf '{{\\\"d\\\": \\\"%s\\\", \\\"t\\\": \\\"%s\\\", \\\"x\\\": "
        "\\\"%s\\\"}}' \\\"$CUDA_VISIBLE_DEVICES\\\" \\\"$MKL_NUM_THREADS\\\" \\\"$X\\\" > "
        "{result}\"\n    outputs: {d: str, t: str, x: str}\n";
    Fixture gpu(
        "  - name: c\n    kind: command\n    count: 1\n    gpus: 1\n    env: {X: \"a b\"}\n" +
        command);
    gpu.resources = {"h", {"3", "5"}, 7, "test"};
    const TaskOutcome on_gpu = gpu.run(0);
    ASSERT_EQ(on_gpu.status, TaskStatus::done) << on_gpu.error;
    EXPECT_EQ(std::get<std::string>(on_gpu.outputs[0]), "3");  // the first of the rank's
    if (!std::getenv("MKL_NUM_THREADS")) {
        EXPECT_EQ(std::get<std::string>(on_gpu.outputs[1]), "7");
    }
    EXPECT_EQ(std::get<std::string>(on_gpu.outputs[2]), "a b");

    Fixture cpu("  - name: c\n    kind: command\n    count: 1\n" + command);
    cpu.resources = {"h", {"3", "5"}, 1, "test"};
    const TaskOutcome on_cpu = cpu.run(0);
    ASSERT_EQ(on_cpu.status, TaskStatus::done) << on_cpu.error;
    EXPECT_EQ(std::get<std::string>(on_cpu.outputs[0]), "");  // asked for none: none
}

TEST(CommandTask, RefusesToLetEnvSetTheDevices) {
    EXPECT_THROW(Fixture("  - name: c\n    kind: command\n    count: 1\n"
                         "    env: {CUDA_VISIBLE_DEVICES: \"0\"}\n    command: \"true\"\n"),
                 ConfigError);
}
