// results.h5: one parallel-HDF5 file per run, opened with the MPI-IO driver.
//
//   /meta/...             run facts: config text and hash, revision, ranks, hosts, times
//   /tasks/<column>       one row per task: id, kind, group, status, rank, attempt, start,
//                         duration, error (run facts)
//   /<table>/<column>     one row per task of a group (or of the groups sharing the table):
//                         task_id, seed, grid or listed keys, outputs
//   /<study>/analysis/<table>/<column>   tables written by central analyses
//
// Every dataset of a task table is created collectively at its full size when the file is
// made; each rank then writes the rows of the tasks it ran (independent I/O, buffered).
// The file knows its schema (core/table.h ResultsSchema) and the run's metadata, not the
// run: which task is which row, and what its key columns hold, is exec/task_rows.h's.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "comm/comm.h"
#include "core/table.h"
#include "store/h5.h"
#include "store/task_fact.h"

namespace compatbench {

struct RunMeta {
    std::string config_text;
    std::string config_path;
    std::string config_hash;
    std::string git_revision;
    std::string version;
    std::string experiment;
    std::uint64_t seed = 0;  // the experiment seed
    std::int64_t ranks = 1;
    std::string hosts;
    double start_time = 0.0;
    std::string excluded;   // run --exclude patterns, space-separated (written when given)
    std::string placement;  // each rank's host, devices and threads, as JSON (exec/placement.h)
};

// The texts of task `index` in /tasks: its id, kind and group.
struct TaskNames {
    std::string_view id, kind, group;
};
using TaskNamer = std::function<TaskNames(std::size_t index)>;

class ResultsFile {
  public:
    static constexpr std::size_t kErrorWidth = 256;
    static constexpr std::size_t kPlaceWidth = 64;  // /tasks host and devices (longer: cut)

    // Creates (truncates) `path` with every table of `schema`, /tasks and /meta.
    // collective: all ranks, or it hangs.
    ResultsFile(const std::string& path, const comm::Comm& comm, const ResultsSchema& schema,
                const RunMeta& meta);
    ~ResultsFile();
    ResultsFile(const ResultsFile&) = delete;
    ResultsFile& operator=(const ResultsFile&) = delete;

    // Buffers `values`, one per column, as row `row` of the schema's table `table`. Local.
    void stage(std::size_t table, std::size_t row, Row values);
    std::size_t staged() const { return staged_; }
    // Writes every buffered row. Local (independent I/O).
    void flush();

    // Writes the whole /tasks table: row i holds names(i) and facts[i]. Local; call on one
    // rank only.
    void write_task_facts(const std::vector<TaskFact>& facts, const TaskNamer& names);
    // Creates /<study>/analysis/<table> for each entry and, on rank `writer`, fills them.
    // collective: all ranks, or it hangs; every rank passes the same tables.
    void write_analysis_tables(const std::vector<std::pair<std::string, TableData>>& tables,
                               int writer);
    // Sets /meta/end_time, /meta/status and /meta/resumed_tasks. Local; call on one rank only.
    void finish(double end_time, const std::string& status, std::int64_t resumed_tasks);
    // collective: all ranks, or it hangs.
    void close();

  private:
    struct Table {
        std::vector<ColumnSpec> columns;
        std::vector<h5::Handle> datasets;
        std::map<std::size_t, Row> pending;  // row -> full row
    };
    int rank_ = 0;
    h5::Handle file_;
    std::vector<Table> tables_;
    std::vector<ColumnSpec> task_columns_;
    std::vector<h5::Handle> task_datasets_;
    h5::Handle end_time_, status_, resumed_;
    std::size_t staged_ = 0;
};

}  // namespace compatbench
