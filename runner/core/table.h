// A table with its data, as analyses make it and the results file writes it, and the
// column specs and paths that go with it.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/value.h"

namespace compatbench {

// Column specs of analysis tables: TableData::make("regions", {str("region"), i64("n"),
// f64("mean")}).
inline ColumnSpec f64(std::string name) { return {std::move(name), ColumnType::f64, 0}; }
inline ColumnSpec i64(std::string name) { return {std::move(name), ColumnType::i64, 0}; }
inline ColumnSpec str(std::string name) { return {std::move(name), ColumnType::str, 0}; }

// A table laid out without its data: a task group's (or the groups sharing it) in
// results.h5: task_id, seed, one column per grid or listed key, then the kind's outputs
// (kind/task_group.h: table_columns).
struct TableLayout {
    std::string path;  // e.g. "demo/work" -> /demo/work/<column>
    std::vector<ColumnSpec> columns;
    std::size_t rows = 0;
};

// What a results file holds before any row is written, as plain tables: every task table at
// its full size, and the rows of /tasks with the widths of its id, kind and group texts.
// Nothing of a run's config or graph (exec/task_rows.h makes it from them).
struct ResultsSchema {
    std::vector<TableLayout> tables;
    std::size_t tasks = 0;
    std::size_t id_width = 1, kind_width = 1, group_width = 1;
};

// A table with its data, column by column (rows = values.size() of any column).
struct TableData {
    // Relative to the study's analysis group ("correlations" -> /<study>/analysis/
    // correlations), or absolute when it starts with '/' ("/alignment/pairs").
    std::string path;
    std::vector<ColumnSpec> columns;
    std::vector<std::vector<Value>> values;  // one vector per column
    bool print = true;  // printed at the end of a run (a summary, not a long listing)

    void add_column(ColumnSpec spec) {
        columns.push_back(std::move(spec));
        values.emplace_back();
    }
    std::size_t rows() const { return values.empty() ? 0 : values.front().size(); }
    // A table with these columns and no rows yet.
    static TableData make(std::string path, const std::vector<ColumnSpec>& columns) {
        TableData t;
        t.path = std::move(path);
        for (const auto& c : columns) t.add_column(c);
        return t;
    }
    // One value per column, in column order.
    void add_row(std::vector<Value> row) {
        if (row.size() != columns.size())
            throw std::logic_error("table " + path + ": a row of " + std::to_string(row.size()) +
                                   " values for " + std::to_string(columns.size()) + " columns");
        for (std::size_t c = 0; c < row.size(); ++c) values[c].push_back(std::move(row[c]));
    }
};

// Where a table of `study` is written: /<study>/analysis/<path>, or `path` when absolute.
inline std::string analysis_table_path(const std::string& study, const std::string& path) {
    if (!path.empty() && path.front() == '/') return path;
    std::string out = "/";
    out += study;
    out += "/analysis/";
    out += path;
    return out;
}

}  // namespace compatbench
