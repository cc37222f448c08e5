// The coordinator's pieces that need no MPI to run: its ranks (exec/rank_pool.h) and its
// analyses (exec/analysis_runner.h), driven by a task book as the coordinator drives them.
#include <gtest/gtest.h>

#include "exec/analysis_runner.h"
#include "exec/rank_pool.h"
#include "experiment/experiment.h"

using namespace compatbench;

TEST(RankPool, OffersWorkToCpuRanksFirstAndKnowsWhereTasksRun) {
    std::vector<RankResources> ranks(2);
    ranks[0].host = "gpu01";
    ranks[0].devices = {"0", "1"};
    ranks[1].host = "cpu01";
    RankPool pool(ranks, 3, 4);  // a third rank the list does not name holds nothing
    EXPECT_EQ(pool.order(), (std::vector<int>{1, 2, 0}));
    EXPECT_EQ(pool.devices(), (RankDevices{2, 0, 0}));
    EXPECT_TRUE(pool.idle());
    pool.sent(0, {{3, 1}, {1, 2}});
    EXPECT_EQ(pool.outstanding(0), 2u);
    EXPECT_EQ(pool.in_flight(), 2u);
    EXPECT_EQ(pool.rank_of(3), 0);
    EXPECT_EQ(pool.rank_of(0), -1);
    pool.returned(0, 3);
    EXPECT_EQ(pool.rank_of(3), -1);
    EXPECT_EQ(pool.outstanding(0), 1u);
    TaskFact f;
    pool.place(f, 0, 1);
    EXPECT_EQ(f.host, "gpu01");
    EXPECT_EQ(f.devices, "0");  // a 1-GPU task gets the first device of its rank
    pool.place(f, 1, 0);
    EXPECT_EQ(f.devices, "");
    pool.mark_final(0);
    pool.mark_final(1);
    EXPECT_FALSE(pool.all_final());
    pool.mark_final(2);
    EXPECT_TRUE(pool.all_final());
}

TEST(AnalysisRunner, RunsAnAnalysisOnceItsGroupHasFinishedOnItsDoneRows) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: cells, kind: noop, grid: {a: [0, 1], b: {range: [0, 3]}}, id: 'c/{a}-{b}'}\n"
        "  - {name: later, kind: noop, after: [cells]}\n"
        "analyses:\n"
        "  - {name: by_a, kind: kruskal, study: s, input: cells, by: a, values: value}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    TaskBook book(config, graph);
    AnalysisRunner analyses(config, graph);
    book.start();
    analyses.run_ready(book);
    EXPECT_TRUE(analyses.take_tables().empty());  // nothing finished yet
    int attempt = 0;
    for (std::size_t k = 0; k < 6; ++k) {
        const std::size_t i = book.take_ready(0, attempt);
        book.done(i, {Value{static_cast<double>(i % 2 == 0 ? i : 10 * i)}});
        analyses.run_ready(book);
        if (k == 5) break;
        EXPECT_TRUE(analyses.take_tables().empty()) << "ran before its group ended";
    }
    const auto tables = analyses.take_tables();
    ASSERT_FALSE(tables.empty());
    EXPECT_EQ(tables[0].first, "s");
    analyses.run_ready(book);
    EXPECT_TRUE(analyses.take_tables().empty());               // once only
    EXPECT_TRUE(printed_tables(config, graph, book).empty());  // no group prints
}
