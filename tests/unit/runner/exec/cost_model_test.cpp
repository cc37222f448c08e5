// The cost model behind the progress ETA, `status` and `plan` (exec/cost_model.h), and the
// dispatch simulation it runs from a part-way state (exec/simulate.h).
#include <gtest/gtest.h>

#include <limits>

#include "exec/cost_model.h"
#include "exec/simulate.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"

using namespace compatbench;

namespace {
// a: 4 tasks of hint 1; b: 2 tasks of hint 3 after all of a; c: 1 task of hint 2.
const char* kYaml =
    "experiment: {name: t, seed: 1}\n"
    "tasks:\n"
    "  - {name: a, kind: noop, count: 4, cost: 1}\n"
    "  - {name: b, kind: noop, count: 2, cost: 3, after: [a]}\n"
    "  - {name: c, kind: noop, cost: 2}\n";
}  // namespace

TEST(CostModel, HintsReadAsSecondsUntilMeasured) {
    const Config config = parse_config(kYaml, "t.yaml");
    const CostModel model(config);
    EXPECT_DOUBLE_EQ(model.scale(0), 1.0);
    EXPECT_DOUBLE_EQ(model.expected(0), 1.0);
    EXPECT_DOUBLE_EQ(model.expected(1), 3.0);
    const TaskGraph graph = TaskGraph::build(config);
    EXPECT_EQ(model.expected_durations(graph), (std::vector<double>{1, 1, 1, 1, 3, 3, 2}));
}

TEST(CostModel, MeasuredMeansAndTheMachineScale) {
    const Config config = parse_config(kYaml, "t.yaml");
    CostModel model(config);
    model.record(0, 0.2);
    model.record(0, 0.3);  // a: mean 0.25, a quarter of its hint
    EXPECT_DOUBLE_EQ(model.expected(0), 0.25);
    EXPECT_DOUBLE_EQ(model.scale(0), 0.25);
    EXPECT_DOUBLE_EQ(model.expected(1), 0.75);  // b: its hint at the machine's scale
    model.record(2, 8.0);                       // c: 4 times its hint
    // The scale is the geometric mean of the measured groups' ratios: sqrt(0.25 * 4) = 1.
    EXPECT_NEAR(model.scale(0), 1.0, 1e-12);
    EXPECT_NEAR(model.expected(1), 3.0, 1e-12);
    model.record(1, -1.0);  // not a duration: ignored
    EXPECT_EQ(model.timing(1).samples, 0u);
}

TEST(CostModel, RemainingTimeFromAPartWayState) {
    const Config config = parse_config(kYaml, "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const CostModel model(config);
    RunState state;
    state.finished.assign(graph.tasks().size(), false);
    // From the start, the time left is the plain simulation of the whole graph.
    const double full = remaining_seconds(graph, config, model, state, cpu_ranks(2));
    EXPECT_DOUBLE_EQ(
        full, simulate_dispatch(graph, config, model.expected_durations(graph), cpu_ranks(2), 0.0)
                  .makespan);
    // a and c done, one b running on rank 0 for 1 s of its 3: 2 s left of it, and the
    // other b starts on rank 1 at once: 3 s.
    for (std::size_t i : {0, 1, 2, 3, 6}) state.finished[i] = true;
    state.running.push_back({0, 4, 1.0});
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(2)), 3.0);
    // On one rank the second b waits for the first: 2 + 3.
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1)), 5.0);
    // A running task past its expected time is late: a quarter of its time so far is left
    // (low: none, high: as long again), and the more it runs, the more.
    state.running[0].elapsed = 10.0;
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1)), 2.5 + 3.0);
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1), Estimate::high),
                     10.0 + 30.0);  // the other b at unmeasured b's high bound, ten times its hint
    state.running[0].elapsed = 40.0;
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1), Estimate::high),
                     40.0 + 30.0);
    // Nothing has finished and nothing is remembered: not known, late task or not.
    EXPECT_FALSE(remaining_range(graph, config, model, state, cpu_ranks(1)).known);
    // With a measured: the late b is a sample of b's time, so the other b is expected to take
    // as long (10 s, ÷ and × the measured band), and the estimate rises while it runs.
    CostModel measured = model;
    for (int k = 0; k < 4; ++k) measured.record(0, 1.0);
    state.running[0].elapsed = 10.0;
    const EtaRange late = remaining_range(graph, config, measured, state, cpu_ranks(1));
    EXPECT_TRUE(late.known);
    EXPECT_EQ(late.unmeasured, 1u);  // b has finished nothing
    EXPECT_DOUBLE_EQ(late.mid, 2.5 + 10.0);
    EXPECT_DOUBLE_EQ(late.low, 0.0 + 10.0 / kMeasuredBand);
    EXPECT_DOUBLE_EQ(late.high, 10.0 + 10.0 * kMeasuredBand);
    state.running[0].elapsed = 20.0;
    EXPECT_GT(remaining_range(graph, config, measured, state, cpu_ranks(1)).mid, late.mid);
    state.running[0].elapsed = 1.0;
    // Everything finished: nothing left.
    state.running.clear();
    state.finished.assign(graph.tasks().size(), true);
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(2)), 0.0);
}

TEST(CostModel, SkippedTasksNeverRunAgain) {
    // a/0 failed, so b's tasks were skipped although a/1 has not run yet; a/2, a/3 are done.
    // Left: a/1 (1 s) and c (2 s) side by side on 2 ranks. When a/1 ends, the skipped b
    // tasks must not be made ready (they would end the simulation early).
    const Config config = parse_config(kYaml, "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const CostModel model(config);
    RunState state;
    state.finished = {true, false, true, true, true, true, false};
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(2)), 2.0);
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1)), 3.0);
}

TEST(CostModel, OnlyTheFirstTaskOfARanksBatchHasBeenRunning) {
    // a/0 and a/1 went to rank 0 together 0.5 s ago: a/0 has 0.5 s left, a/1 all of its 1 s.
    const Config config = parse_config(kYaml, "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const CostModel model(config);
    RunState state;
    state.finished = {false, false, true, true, true, true, true};
    state.running = {{0, 1, 0.5}, {0, 0, 0.5}};
    EXPECT_DOUBLE_EQ(remaining_seconds(graph, config, model, state, cpu_ranks(1)), 1.5);
    state.running.push_back({3, 2, 0.0});  // a rank the run does not have
    state.finished[2] = false;
    EXPECT_THROW(remaining_seconds(graph, config, model, state, cpu_ranks(1)),
                 std::invalid_argument);
}

TEST(Simulation, OneRankRunsTheWorkAndManyRanksTheCriticalPath) {
    const Config config = parse_config(kYaml, "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const std::vector<double> d = CostModel(config).expected_durations(graph);
    const Simulation one = simulate_dispatch(graph, config, d, cpu_ranks(1), 0.0);
    EXPECT_DOUBLE_EQ(one.makespan, 4 * 1 + 2 * 3 + 2);
    EXPECT_DOUBLE_EQ(one.work, 12.0);
    EXPECT_DOUBLE_EQ(one.critical_path, 1 + 3);
    const Simulation many = simulate_dispatch(graph, config, d, cpu_ranks(16), 0.0);
    EXPECT_DOUBLE_EQ(many.makespan, 4.0);  // an a, then a b
}

// The simulation runs the task book's flow: a GPU task goes only to a rank holding enough
// devices, GPU work first, and a GPU rank spares its time for CPU tasks one at a time.
TEST(Simulation, DevicesDecideWhereTasksRun) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: cpu, kind: noop, count: 4, cost: 1}\n"
        "  - {name: gpu, kind: noop, count: 2, cost: 3, gpus: 1}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const std::vector<double> d = CostModel(config).expected_durations(graph);
    // Rank 0 runs the CPU tasks (1+1+1+1); rank 1 the GPU tasks (3+3).
    EXPECT_DOUBLE_EQ(simulate_dispatch(graph, config, d, {0, 1}, 0.0).makespan, 6.0);
    // Two GPU ranks: a GPU task each (3), then the CPU tasks, two at a time (2).
    EXPECT_DOUBLE_EQ(simulate_dispatch(graph, config, d, {1, 1}, 0.0).makespan, 5.0);
    // No rank holds a device: the GPU tasks never run.
    EXPECT_EQ(simulate_dispatch(graph, config, d, cpu_ranks(2), 0.0).makespan,
              std::numeric_limits<double>::infinity());
    EXPECT_THROW(simulate_dispatch(graph, config, d, {}, 0.0), std::invalid_argument);
}

// Without hints: a command group's cost is not a noop's; a measured native group says
// nothing of an unmeasured command group (their classes scale apart); and the time left is a
// range around the point, wide until every group with tasks left is measured.
TEST(CostModel, CommandGroupsAreEstimatedFromEachOtherAndShownAsARange) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: n, kind: noop, count: 2}\n"
        "  - {name: c1, kind: command, count: 2, command: 'true'}\n"
        "  - {name: c2, kind: command, count: 2, command: 'true', after: [c1]}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    CostModel model(config);
    EXPECT_DOUBLE_EQ(model.expected(1), kCommandCost);  // no hint: a command's default
    model.record(0, 0.001);                             // a fast native group...
    EXPECT_DOUBLE_EQ(model.expected(1), kCommandCost);  // ...does not speed up a command
    EXPECT_DOUBLE_EQ(model.expected(1, Estimate::low), kCommandCost / 50);
    EXPECT_DOUBLE_EQ(model.expected(1, Estimate::high), kCommandCost * 10);
    model.record(1, 2.0);  // c1 measured: c2 is estimated from it
    EXPECT_DOUBLE_EQ(model.expected(2), 2.0);
    EXPECT_DOUBLE_EQ(model.expected(2, Estimate::high), 8.0);
    RunState state;
    state.finished.assign(graph.tasks().size(), false);
    for (std::size_t i : {0, 1, 2, 3}) state.finished[i] = true;  // n and c1 done
    EtaRange r = remaining_range(graph, config, model, state, cpu_ranks(1));
    EXPECT_EQ(r.unmeasured, 1u);
    EXPECT_DOUBLE_EQ(r.mid, 4.0);  // two tasks of c2 at 2 s on one rank
    EXPECT_DOUBLE_EQ(r.low, 1.0);
    EXPECT_DOUBLE_EQ(r.high, 16.0);
    model.record(2, 3.0);
    r = remaining_range(graph, config, model, state, cpu_ranks(1));
    EXPECT_EQ(r.unmeasured, 0u);  // every group measured: its mean ÷ and × the band
    EXPECT_DOUBLE_EQ(r.mid, 6.0);
    EXPECT_DOUBLE_EQ(r.low, 6.0 / kMeasuredBand);
    EXPECT_DOUBLE_EQ(r.high, 6.0 * kMeasuredBand);
}
