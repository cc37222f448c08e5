// The results file (store/results_file.h) on one rank, from its schema alone and from a run's
// (exec/task_rows.h): staged rows land in their group's table at their task's row, an unfinished
// task's row keeps its keys with blank outputs, the task facts and analysis tables are written
// where docs/results.md says, and the file reads back with the serial reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "comm/comm.h"
#include "exec/task_rows.h"
#include "experiment/experiment.h"
#include "graph/task_graph.h"
#include "store/h5.h"
#include "store/h5_read.h"
#include "store/results_file.h"

using namespace compatbench;

namespace {
// MPI for this test process only (singleton: no mpirun), until it exits.
const comm::Comm& self() {
    static const comm::Session session;
    static const comm::Comm alone(MPI_COMM_SELF);
    return alone;
}

// The run metadata of a test's config.
RunMeta meta_of(const Config& config) {
    RunMeta meta;
    meta.experiment = "t";
    meta.config_hash = config.hash;
    return meta;
}

std::string temp_file(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / name).string();
}
}  // namespace

TEST(ResultsFile, RowsFactsAndAnalysisTablesReadBack) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: work, kind: command, grid: {a: [1, 2, 3]}, command: 'true',\n"
        "     outputs: {x: float, n: int, label: 'str:8'}}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const RunMeta meta = meta_of(config);
    const std::string path = temp_file("results_file_test.h5");
    {
        ResultsFile file(path, self(), results_schema(config, graph), meta);
        stage_task_row(file, config, graph, 2, {0.5, std::int64_t{7}, std::string("ok")});
        stage_unfinished_row(file, config, graph, 0);
        EXPECT_EQ(file.staged(), 2u);
        file.flush();
        std::vector<TaskFact> facts(3);
        facts[2].status = "done";
        facts[2].duration = 1.25;
        facts[0].status = "failed";
        facts[0].error = "boom";
        file.write_task_facts(facts, task_names(config, graph));
        TableData summary = TableData::make("summary", {str("name"), f64("v")});
        summary.add_row({std::string("all"), 1.5});
        file.write_analysis_tables({{"demo", summary}}, 0);
        file.finish(2.0, "failed", 0);
        file.close();
    }
    const h5::ResultsReader r(path);
    const auto ids = r.strings("/work/task_id");
    EXPECT_EQ(ids[0], graph.tasks()[0].id);  // an unfinished row keeps its keys
    EXPECT_EQ(ids[2], graph.tasks()[2].id);
    const auto x = r.numbers("/work/x"), n = r.numbers("/work/n"), a = r.numbers("/work/a");
    EXPECT_TRUE(std::isnan(x[0]) && std::isnan(x[1]));  // unfinished, never staged: blank
    EXPECT_EQ(x[2], 0.5);
    EXPECT_TRUE(std::isnan(n[0]));  // INT64_MIN reads as NaN
    EXPECT_EQ(n[2], 7.0);
    EXPECT_EQ(a[0], 1.0);
    EXPECT_EQ(a[2], 3.0);
    EXPECT_EQ(r.strings("/work/label")[2], "ok");
    EXPECT_EQ(r.strings("/tasks/status"), (std::vector<std::string>{"failed", "pending", "done"}));
    EXPECT_EQ(r.strings("/tasks/error")[0], "boom");
    EXPECT_EQ(r.numbers("/tasks/duration")[2], 1.25);
    EXPECT_EQ(r.tables("/demo/analysis"), std::vector<std::string>{"/demo/analysis/summary"});
    EXPECT_EQ(r.numbers("/demo/analysis/summary/v"), std::vector<double>{1.5});
}

// While an exception unwinds, an object of a file marked shared is let go unclosed (its close
// may be collective: the ranks that did not fail would wait in it); otherwise it is closed.
TEST(H5Handle, ObjectsOfASharedFileAreLetGoWhileUnwinding) {
    h5::quiet_errors();
    const std::string path =
        (std::filesystem::path(::testing::TempDir()) / "h5_handle_test.h5").string();
    h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    ASSERT_TRUE(file);
    hid_t kept = -1, closed = -1;
    {
        const h5::Handle d = h5::create_scalar(file.get(), "closed", Value{1.0});
        closed = d.get();
    }
    EXPECT_LE(H5Iis_valid(closed), 0);  // not shared: closed at scope end
    h5::mark_shared(file.get(), true);
    EXPECT_TRUE(h5::in_shared_file(file.get()));
    try {
        const h5::Handle d = h5::create_scalar(file.get(), "kept", Value{2.0});
        kept = d.get();
        throw std::runtime_error("a failed write");
    } catch (const std::runtime_error&) {
    }
    EXPECT_GT(H5Iis_valid(kept), 0);  // let go, not closed
    {
        const h5::Handle d = h5::create_scalar(file.get(), "normal", Value{3.0});
        closed = d.get();
    }
    EXPECT_LE(H5Iis_valid(closed), 0);  // shared, but no exception: closed
    h5::mark_shared(file.get(), false);
    EXPECT_FALSE(h5::in_shared_file(file.get()));
    H5Dclose(kept);
}

// Rows spread over a table are written by one point selection per column, and /tasks in
// slices of 65,536 rows: every row lands where it belongs, across the slices' seam.
TEST(ResultsFile, SpreadRowsAndManySlicesOfFactsLandInPlace) {
    const Config config = parse_config(
        "experiment: {name: t, seed: 1}\n"
        "tasks:\n"
        "  - {name: many, kind: command, count: 70000, command: 'true', outputs: {x: float}}\n",
        "t.yaml");
    const TaskGraph graph = TaskGraph::build(config);
    const RunMeta meta = meta_of(config);
    const std::string path = temp_file("results_file_slices.h5");
    const std::size_t n = graph.tasks().size();
    {
        ResultsFile file(path, self(), results_schema(config, graph), meta);
        std::vector<TaskFact> facts(n);
        for (std::size_t i = 0; i < n; i += 3)
            stage_task_row(file, config, graph, i, {static_cast<double>(i) / 2});
        file.flush();
        for (std::size_t i = 0; i < n; ++i) facts[i].duration = static_cast<double>(i);
        file.write_task_facts(facts, task_names(config, graph));
        file.finish(2.0, "done", 0);
        file.close();
    }
    const h5::ResultsReader r(path);
    const auto x = r.numbers("/many/x"), duration = r.numbers("/tasks/duration");
    const auto ids = r.strings("/tasks/id");
    ASSERT_EQ(x.size(), n);
    ASSERT_EQ(duration.size(), n);
    for (std::size_t i : {0ul, 1ul, 3ul, 65535ul, 65536ul, 65538ul, 69999ul}) {
        if (i % 3 == 0) {
            EXPECT_EQ(x[i], static_cast<double>(i) / 2) << i;
        } else {
            EXPECT_TRUE(std::isnan(x[i])) << i;
        }
        EXPECT_EQ(duration[i], static_cast<double>(i)) << i;
        EXPECT_EQ(ids[i], graph.tasks()[i].id) << i;
    }
}

// The store knows only its schema: a plain table, rows staged by number, and a row of the
// wrong width refused.
TEST(ResultsFile, APlainSchemaNeedsNoConfig) {
    ResultsSchema schema;
    schema.tables = {{"plain/t", {{"x", ColumnType::f64, 0}, {"s", ColumnType::str, 4}}, 3}};
    schema.tasks = 1;
    schema.id_width = 4;  // the texts of /tasks are held to their widths
    schema.kind_width = 4;
    schema.group_width = 5;
    RunMeta meta;
    meta.seed = 9;
    const std::string path = temp_file("results_file_plain.h5");
    {
        ResultsFile file(path, self(), schema, meta);
        file.stage(0, 1, {2.5, std::string("ab")});
        EXPECT_THROW(file.stage(0, 0, {1.0}), std::logic_error);
        file.flush();
        file.write_task_facts(std::vector<TaskFact>(1), [](std::size_t) {
            return TaskNames{"only", "kind", "group"};
        });
        file.close();
    }
    const h5::ResultsReader r(path);
    const auto x = r.numbers("/plain/t/x");
    ASSERT_EQ(x.size(), 3u);
    EXPECT_TRUE(std::isnan(x[0]));
    EXPECT_EQ(x[1], 2.5);
    EXPECT_EQ(r.strings("/plain/t/s")[1], "ab");
    EXPECT_EQ(r.strings("/tasks/id")[0], "only");
}
