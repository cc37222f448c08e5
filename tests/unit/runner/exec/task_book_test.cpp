// The coordinator's task book (exec/task_book.h): readiness, the dispatch order, retries,
// skips downstream of a failure, cancellation, resume and group completion, without MPI.
#include <gtest/gtest.h>

#include "exec/task_book.h"
#include "experiment/experiment.h"

using namespace compatbench;
using State = TaskBook::State;

namespace {
// a: 2 tasks of hint 1 (one retry); b: 1 task of hint 3 after all of a; c: 1 task of hint 2;
// d: 1 task after b.
const char* kYaml =
    "experiment: {name: t, seed: 1}\n"
    "runner: {retries: 1}\n"
    "tasks:\n"
    "  - {name: a, kind: noop, count: 2, cost: 1}\n"
    "  - {name: b, kind: noop, cost: 3, after: [a]}\n"
    "  - {name: c, kind: noop, cost: 2}\n"
    "  - {name: d, kind: noop, after: [b]}\n";

struct Fixture {
    Config config = parse_config(kYaml, "t.yaml");
    TaskGraph graph = TaskGraph::build(config);
    std::size_t id(const std::string& s) const { return graph.find(s).value(); }
};

// A book of `yaml`'s tasks, started.
struct Started {
    explicit Started(const std::string& yaml)
        : config(parse_config(yaml, "t.yaml")),
          graph(TaskGraph::build(config)),
          book(config, graph) {
        book.start();
    }
    Config config;
    TaskGraph graph;
    TaskBook book;
};

std::size_t take(TaskBook& book, int* attempt = nullptr) {
    int a = 0;
    const std::size_t i = book.take_ready(0, a);
    if (attempt) *attempt = a;
    return i;
}
}  // namespace

TEST(TaskBook, ReadyByCostThenGroupOrderAndDependentsReleased) {
    Fixture f;
    TaskBook book(f.config, f.graph);
    book.start();
    ASSERT_EQ(book.ready_count(), 3u);  // a/0, a/1, c; b and d wait
    EXPECT_EQ(book.state(f.id("b")), State::blocked);
    EXPECT_EQ(take(book), f.id("c"));  // highest cost hint first
    EXPECT_EQ(book.flow().next_group(0), 0u);
    const std::size_t a0 = take(book), a1 = take(book);
    EXPECT_EQ(a0, f.id("a/0"));  // then the spread order: a/0, a/1 for two tasks
    EXPECT_EQ(a1, f.id("a/1"));
    EXPECT_FALSE(book.has_ready());
    book.done(a0, {});
    EXPECT_FALSE(book.has_ready());  // b waits for a/1 too
    EXPECT_FALSE(book.group_finished(0));
    book.done(a1, {});
    EXPECT_TRUE(book.group_finished(0));
    ASSERT_TRUE(book.has_ready());
    EXPECT_EQ(take(book), f.id("b"));
    EXPECT_EQ(book.done_count(), 2u);
    EXPECT_EQ(book.ran(), 2u);
    EXPECT_FALSE(book.all_terminal());
}

TEST(TaskBook, RetriesThenFailsForGoodAndSkipsDownstream) {
    Fixture f;
    TaskBook book(f.config, f.graph);
    book.start();
    take(book);  // c
    int attempt = 0;
    const std::size_t a0 = take(book, &attempt);
    EXPECT_EQ(attempt, 1);
    EXPECT_TRUE(book.failed(a0, "boom"));  // one retry
    EXPECT_EQ(book.state(a0), State::ready);
    std::size_t again = take(book, &attempt);
    while (again != a0) again = take(book, &attempt);
    EXPECT_EQ(attempt, 2);
    EXPECT_FALSE(book.failed(a0, "boom again"));
    EXPECT_EQ(book.state(a0), State::failed);
    EXPECT_EQ(book.fact(a0).error, "boom again");
    for (const char* id : {"b", "d"}) {
        EXPECT_EQ(book.state(f.id(id)), State::skipped) << id;
        EXPECT_EQ(book.fact(f.id(id)).error, "dependency a/0 failed") << id;
    }
    EXPECT_EQ(book.failed_count(), 1u);
    EXPECT_EQ(book.skipped_count(), 2u);
    EXPECT_TRUE(book.group_finished(1));
    EXPECT_TRUE(book.group_finished(3));
    EXPECT_EQ(book.pending_count(), 2u);  // a/1 running, c running
}

TEST(TaskBook, CancelledTasksStayPendingAndAreNotHandedOutAgain) {
    Fixture f;
    TaskBook book(f.config, f.graph);
    book.start();
    const std::size_t c = take(book);
    book.cancelled(c);
    EXPECT_EQ(book.state(c), State::ready);
    EXPECT_EQ(book.fact(c).status, "pending");
    take(book);
    take(book);
    EXPECT_FALSE(book.has_ready());
    EXPECT_EQ(book.pending_count(), 5u);
}

TEST(TaskBook, ResumeRestoresDoneTasksAndAttemptNumbers) {
    Fixture f;
    TaskBook book(f.config, f.graph);
    TaskFact fact;
    fact.rank = 1;
    fact.duration = 2.5;
    EXPECT_TRUE(book.restore_done(f.id("a/0"), {Value(std::int64_t{7})}, fact));
    EXPECT_FALSE(book.restore_done(f.id("a/0"), {}, fact));  // once only
    EXPECT_TRUE(book.restore_done(f.id("a/1"), {}, fact));
    book.count_earlier_failure(f.id("c"));
    book.count_earlier_failure(f.id("c"));
    book.start();
    EXPECT_EQ(book.done_count(), 2u);
    EXPECT_EQ(book.ran(), 0u);  // nothing ran in this run yet
    EXPECT_TRUE(book.group_finished(0));
    EXPECT_EQ(book.fact(f.id("a/0")).status, "done");
    EXPECT_EQ(book.fact(f.id("a/0")).duration, 2.5);
    EXPECT_EQ(std::get<std::int64_t>(book.outputs(f.id("a/0")).at(0)), 7);
    int attempt = 0;
    EXPECT_EQ(book.take_ready(0, attempt), f.id("b"));  // released by the restored a
    EXPECT_EQ(book.take_ready(0, attempt), f.id("c"));
    EXPECT_EQ(attempt, 3);  // two failed attempts before
}

// Tasks that need devices go only to ranks holding enough of them; a rank holding devices
// takes the GPU work that needs the most of what it holds first, then CPU work (docs/gpus.md).
TEST(TaskBook, DevicesDecideWhichRankTakesATask) {
    const std::string yaml =
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: cpu, kind: noop, count: 1, cost: 9}\n"
        "  - {name: one, kind: noop, count: 1, gpus: 1}\n"
        "  - {name: two, kind: noop, count: 1, gpus: 2}\n";
    Started started(yaml);
    TaskBook& book = started.book;
    const TaskGraph& graph = started.graph;
    int attempt = 0;
    EXPECT_TRUE(book.flow().has_ready_for(0));
    EXPECT_EQ(book.flow().next_group(0), 0u);  // a CPU-only rank sees the CPU task only
    EXPECT_EQ(book.flow().next_group(1), 1u);  // one device: the 1-GPU task before the CPU task
    EXPECT_EQ(book.take_ready(2, attempt), graph.find("two/0").value());  // most devices first
    EXPECT_EQ(book.take_ready(2, attempt), graph.find("one/0").value());
    EXPECT_EQ(book.take_ready(2, attempt), graph.find("cpu/0").value());
    EXPECT_FALSE(book.has_ready());
}

TEST(TaskBook, CpuTasksStayOffGpuRanksWhenTheConfigSaysSo) {
    const std::string yaml =
        "experiment: {name: t, seed: 1}\n"
        "runner: {cpu_tasks_on_gpu_ranks: false}\n"
        "tasks:\n"
        "  - {name: cpu, kind: noop, count: 1}\n"
        "  - {name: two, kind: noop, count: 1, gpus: 2}\n";
    Started started(yaml);
    TaskBook& book = started.book;
    const TaskGraph& graph = started.graph;
    int attempt = 0;
    EXPECT_FALSE(book.flow().has_ready_for(1));  // the 2-GPU task does not fit; the CPU one may not
    EXPECT_EQ(book.take_ready(2, attempt), graph.find("two/0").value());
    EXPECT_FALSE(book.flow().has_ready_for(2));
    EXPECT_TRUE(book.flow().has_ready_for(0));
}

// Within a group, tasks go out in the spread order of exec/dispatch_policy.h (bit-reversed
// positions), so that the first tasks sample the whole group; groups of equal hint go out in
// config order.
TEST(TaskBook, AGroupGoesOutInSpreadOrder) {
    EXPECT_EQ(policy_spread(0, 5), 0u);
    EXPECT_EQ(policy_spread(1, 5), 4u);
    EXPECT_EQ(policy_spread(3, 5), 6u);
    EXPECT_EQ(policy_spread(0, 1), 0u);
    const std::string yaml =
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: a, kind: noop, count: 5}\n"
        "  - {name: b, kind: noop, count: 2}\n";
    Started started(yaml);
    TaskBook& book = started.book;
    const TaskGraph& graph = started.graph;
    std::vector<std::string> order;
    int attempt = 0;
    while (book.has_ready()) order.push_back(graph.tasks()[book.take_ready(0, attempt)].id);
    EXPECT_EQ(order, (std::vector<std::string>{"a/0", "a/4", "a/2", "a/1", "a/3", "b/0", "b/1"}));
}

// Resume after a purge: b was done, but a/0 upstream of it runs again. d, after b, waits for
// a/0 too (it may read a/0's files itself); a failure of a/0 skips d and leaves b done.
TEST(TaskBook, ARestoredTaskHoldsItsDependentsWhileItsUpstreamRunsAgain) {
    for (const bool a0_fails : {false, true}) {
        Fixture f;
        f.config.runner.retries = 0;
        for (auto& g : f.config.groups) g.retries = 0;
        TaskBook book(f.config, f.graph);
        TaskFact fact;
        book.restore_done(f.id("a/1"), {}, fact);
        book.restore_done(f.id("b"), {}, fact);
        book.start();
        EXPECT_EQ(book.state(f.id("d")), State::blocked);  // b is done, a/0 is not
        EXPECT_EQ(book.ready_count(), 2u);                 // a/0 and c
        take(book);                                        // c
        const std::size_t a0 = take(book);
        ASSERT_EQ(a0, f.id("a/0"));
        if (a0_fails) {
            EXPECT_FALSE(book.failed(a0, "purged input"));
            EXPECT_EQ(book.state(f.id("d")), State::skipped);
            EXPECT_EQ(book.state(f.id("b")), State::done);
        } else {
            book.done(a0, {});
            EXPECT_EQ(book.state(f.id("d")), State::ready);
        }
    }
}
