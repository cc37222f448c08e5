// The `command` task kind run directly: success with a JSON result, failures, timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "commands/command_server.h"
#include "core/text_template.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"
#include "kind/task_kind.h"
#include "test_support.h"

using namespace compatbench;
namespace fs = std::filesystem;

namespace {
struct Fixture {
    Config config;
    TaskGraph graph;
    std::atomic<bool> cancel{false};
    fs::path out;
    RankResources resources;
    ServerPool servers;

    explicit Fixture(const std::string& group) {
        config = parse_config("experiment: {name: t, seed: 3}\ntasks:\n" + group, "test.yaml");
        graph = TaskGraph::build(config);
        out = fs::path(::testing::TempDir()) / ("command_test_" + config.hash);
        fs::remove_all(out);
    }
    TaskOutcome run(std::size_t index, int attempt = 1) {
        const Task& t = graph.tasks()[index];
        const TaskContext ctx{t.id,
                              config.groups[t.group],
                              graph.params(config, index),
                              graph.lists(config, index),
                              t.seed,
                              attempt,
                              0,
                              out,
                              cancel,
                              config.seed,
                              &resources,
                              &servers};
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

// A workdir is made for a command that names {workdir} or {result}, and for no other.
TEST(CommandTask, MakesItsWorkdirOnlyWhenTheCommandNamesIt) {
    Fixture f(
        "  - {name: plain, kind: command, command: 'true'}\n"
        "  - {name: dir, kind: command, command: 'test -d {workdir}'}\n"
        "  - {name: res, kind: command, command: 'test -d \"$(dirname {result})\"'}\n");
    for (std::size_t i = 0; i < 3; ++i) ASSERT_EQ(f.run(i).status, TaskStatus::done) << i;
    const auto workdir = [&](std::size_t i) {
        return f.out / "work" / task_file_stem(f.graph.tasks()[i].id);
    };
    EXPECT_FALSE(fs::exists(workdir(0)));
    EXPECT_TRUE(fs::is_directory(workdir(1)));
    EXPECT_TRUE(fs::is_directory(workdir(2)));
    EXPECT_TRUE(
        fs::exists(f.out / "logs" / "tasks" / (task_file_stem(f.graph.tasks()[0].id) + ".log")));
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

// The group's message (bound once) with each grid point's own fail_attempts.
TEST(FailTask, AGridPointKeepsItsOwnNumberAndTheGroupsMessage) {
    Fixture f("  - {name: f, kind: fail, message: boom, grid: {fail_attempts: [1, 3]}}\n");
    EXPECT_EQ(f.run(0, 2).status, TaskStatus::done);
    const auto o = f.run(1, 2);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("boom (attempt 2)"), std::string::npos) << o.error;
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
    const TaskContext ctx{id, config.groups[0], params, lists,   1,      1, 0,
                          "", cancel,           3,      nullptr, nullptr};
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

namespace {
// A served group whose tasks' arguments are the grid's `what` and `arg`
// (tests/checks/user_scripts/behaviour_server.py).
std::string served_group(const std::string& grid, const std::string& more = "") {
    return "  - name: s\n    kind: command\n    grid: " + grid + "\n    server: /usr/bin/python3 " +
           COMPATBENCH_SOURCE_DIR +
           "/tests/checks/user_scripts/behaviour_server.py\n"
           "    command: '{what} {arg} {result}'\n"
           "    outputs: {pid: int, n: int, devices: str}\n" +
           more;
}
std::int64_t pid_of(const TaskOutcome& o) { return std::get<std::int64_t>(o.outputs[0]); }
}  // namespace

TEST(ServedTask, OneServerRunsTheRanksTasks) {
    Fixture f(served_group("{what: [ok], arg: [1, 2, 3]}", "    gpus: 1\n"));
    f.resources = {"h", {"6"}, 1, "test"};
    std::vector<TaskOutcome> o;
    for (std::size_t i = 0; i < 3; ++i) o.push_back(f.run(i));
    for (const auto& x : o) ASSERT_EQ(x.status, TaskStatus::done) << x.error;
    EXPECT_EQ(pid_of(o[0]), pid_of(o[1]));  // one process served all three
    EXPECT_EQ(pid_of(o[1]), pid_of(o[2]));
    EXPECT_EQ(std::get<std::int64_t>(o[2].outputs[1]), 3);
    EXPECT_EQ(std::get<std::string>(o[0].outputs[2]), "6");  // its devices, as a command's
    const std::string log = test::read_file(
        (f.out / "logs" / "tasks" / (task_file_stem(f.graph.tasks()[1].id) + ".log")).string());
    EXPECT_NE(log.find("task ok 2"), std::string::npos) << log;  // the task's output, its log
}

TEST(ServedTask, FailuresEndTheTaskAndTheServerRestarts) {
    Fixture f(
        served_group("{what: [ok, fail, crash, raise, sleep], arg: [5]}", "    timeout: 3\n"));
    // Ids: s/ok+5, s/fail+5, s/crash+5, s/raise+5, s/sleep+5 (grid order).
    const TaskOutcome first = f.run(0);
    ASSERT_EQ(first.status, TaskStatus::done) << first.error;
    const TaskOutcome failed = f.run(1);
    EXPECT_EQ(failed.status, TaskStatus::failed);
    EXPECT_NE(failed.error.find("exit code 5"), std::string::npos) << failed.error;
    EXPECT_NE(failed.error.find("failing on purpose"), std::string::npos) << failed.error;
    EXPECT_EQ(pid_of(f.run(0)), pid_of(first));  // a failed task leaves its server alive
    const TaskOutcome crashed = f.run(2);
    EXPECT_EQ(crashed.status, TaskStatus::failed);
    EXPECT_NE(crashed.error.find("exited during the task (exit code 5"), std::string::npos)
        << crashed.error;
    const TaskOutcome raised = f.run(3);
    EXPECT_EQ(raised.status, TaskStatus::failed);
    EXPECT_NE(raised.error.find("ValueError: raised on purpose"), std::string::npos)
        << raised.error;
    const TaskOutcome after = f.run(0);  // a new server
    ASSERT_EQ(after.status, TaskStatus::done) << after.error;
    EXPECT_NE(pid_of(after), pid_of(first));
    const TaskOutcome slow = f.run(4);  // sleeps 5 s, timeout 3 s
    EXPECT_EQ(slow.status, TaskStatus::failed);
    EXPECT_NE(slow.error.find("timed out after 3"), std::string::npos) << slow.error;
    const TaskOutcome again = f.run(0);
    ASSERT_EQ(again.status, TaskStatus::done) << again.error;
    EXPECT_NE(pid_of(again), pid_of(after));
}

TEST(ServedTask, AServerThatDiesWhileItsChildHoldsTheSocketFailsTheTask) {
    // Its forked child keeps the socket open: no end-of-file, yet the task fails at once
    // (not after its 20 s timeout), and the child ends with the server's group.
    Fixture f(served_group("{what: [forkdie, ok], arg: [7]}", "    timeout: 20\n"));
    const TaskOutcome o = f.run(0);
    EXPECT_EQ(o.status, TaskStatus::failed);
    EXPECT_NE(o.error.find("exited during the task (exit code 7"), std::string::npos) << o.error;
    const TaskOutcome next = f.run(1);  // a new server
    EXPECT_EQ(next.status, TaskStatus::done) << next.error;
}

TEST(ServedTask, AnExitCodeOutsideAnExitStatusFails) {
    // 2^32 would be 0 (success) once truncated to an int; -1 and 256 are no exit status.
    Fixture f(served_group("{what: [fail], arg: [4294967296, -1, 256, 255]}"));
    for (std::size_t i = 0; i < 3; ++i) {
        const TaskOutcome o = f.run(i);
        EXPECT_EQ(o.status, TaskStatus::failed);
        EXPECT_NE(o.error.find("outside an exit status's 0..255"), std::string::npos) << o.error;
    }
    const TaskOutcome last = f.run(3);
    EXPECT_EQ(last.status, TaskStatus::failed);
    EXPECT_NE(last.error.find("exit code 255"), std::string::npos) << last.error;
}

TEST(ServedTask, AServerThatWillNotStartFailsEachTaskWithItsMessage) {
    Fixture f(
        "  - name: s\n    kind: command\n    count: 2\n"
        "    server: echo no such interpreter >&2; exit 7\n"
        "    command: 'x {result}'\n");
    for (std::size_t i = 0; i < 2; ++i) {
        const TaskOutcome o = f.run(i);
        EXPECT_EQ(o.status, TaskStatus::failed);
        EXPECT_NE(o.error.find("exited before it was ready (exit code 7"), std::string::npos)
            << o.error;
        EXPECT_NE(o.error.find("no such interpreter"), std::string::npos) << o.error;
    }
}

TEST(ServedTask, ArgumentsMustBePlainWords) {
    EXPECT_THROW(Fixture("  - name: s\n    kind: command\n    count: 1\n"
                         "    server: python3 serve.py\n    command: 'x {result} > y'\n"),
                 ConfigError);
    EXPECT_THROW(Fixture("  - name: s\n    kind: command\n    count: 1\n"
                         "    server: python3 serve.py {id}\n    command: 'x {result}'\n"),
                 ConfigError);  // {id} is a task's, not a server's
}

// An abandoning stop cancels the task in flight: its server is ended as a command would be,
// and the next task gets a new one.
TEST(ServedTask, CancellingEndsTheServer) {
    Fixture f(served_group("{what: [ok, sleep], arg: [30]}"));
    const TaskOutcome first = f.run(0);
    ASSERT_EQ(first.status, TaskStatus::done) << first.error;
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        f.cancel = true;
    });
    const TaskOutcome cancelled = f.run(1);  // sleeps 30 s unless ended
    stopper.join();
    EXPECT_EQ(cancelled.status, TaskStatus::cancelled) << cancelled.error;
    f.cancel = false;
    const TaskOutcome after = f.run(0);
    ASSERT_EQ(after.status, TaskStatus::done) << after.error;
    EXPECT_NE(pid_of(after), pid_of(first));
}
