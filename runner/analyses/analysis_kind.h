// A central analysis: computed by the coordinator once every task of its input group has
// finished, written under /<study>/analysis/ of results.h5. One file per kind, listed in
// runner/analyses/registry.cpp.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_check.h"
#include "core/value.h"

namespace compatbench {

struct AnalysisSpec;
struct GroupSpec;

// Column specs of analysis tables: TableData::make("regions", {str("region"), i64("n"),
// f64("mean")}).
inline ColumnSpec f64(std::string name) { return {std::move(name), ColumnType::f64, 0}; }
inline ColumnSpec i64(std::string name) { return {std::move(name), ColumnType::i64, 0}; }
inline ColumnSpec str(std::string name) { return {std::move(name), ColumnType::str, 0}; }

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

// The finished rows of an analysis's input group.
struct AnalysisInput {
    const GroupSpec& group;
    std::vector<ColumnSpec> columns;    // all columns of the group's table
    std::vector<const Row*> rows;       // rows of done tasks, in task order
    std::vector<double> seconds;        // each row's task duration (a run fact)
    std::vector<AnalysisInput> others;  // the extra groups of AnalysisKind::extra_inputs

    // Index of column `name`, or -1.
    int find(const std::string& name) const;
    // A column as doubles (int columns converted); throws if missing or a string column.
    std::vector<double> numbers(const std::string& name) const;
    std::vector<std::string> texts(const std::string& name) const;
    // The extra input group `name` (std::invalid_argument if it was not requested).
    const AnalysisInput& other(const std::string& name) const;
};

// The output columns of every task group, by group name (for config-time checks).
using GroupColumns = std::map<std::string, std::vector<ColumnSpec>>;

// Where an analysis reports a degenerate statistic (logged by the coordinator).
using AnalysisNote = std::function<void(const std::string&)>;

class AnalysisKind {
  public:
    virtual ~AnalysisKind() = default;
    virtual std::string_view name() const = 0;
    virtual std::vector<KeyRule> keys() const = 0;
    // Checks the spec against the input group's columns (throws ConfigError); `groups` has
    // the columns of every group of the config, for kinds with extra inputs.
    virtual void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& input_columns,
                       const GroupColumns& groups, const YamlChecker& checker) const = 0;
    // Further task groups the analysis reads besides `input` (it runs once all are finished).
    virtual std::vector<std::string> extra_inputs(const AnalysisSpec& /*spec*/) const { return {}; }
    virtual std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                                       const AnalysisNote& note) const = 0;
};

std::span<const AnalysisKind* const> analysis_kinds();
const AnalysisKind* find_analysis_kind(std::string_view name);

}  // namespace compatbench
