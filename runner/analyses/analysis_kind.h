// A central analysis: computed by the coordinator once every task of its input group has
// finished, written under /<study>/analysis/ of results.h5. One file per kind, listed in
// runner/analyses/registry.cpp.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_check.h"
#include "core/value.h"

namespace compatbench {

struct AnalysisSpec;
struct GroupSpec;

// A table with its data, column by column (rows = values.size() of any column).
struct TableData {
    std::string path;  // relative to the study's analysis group, e.g. "correlations"
    std::vector<ColumnSpec> columns;
    std::vector<std::vector<Value>> values;  // one vector per column

    void add_column(ColumnSpec spec) {
        columns.push_back(std::move(spec));
        values.emplace_back();
    }
    std::size_t rows() const { return values.empty() ? 0 : values.front().size(); }
};

// The finished rows of an analysis's input group.
struct AnalysisInput {
    const GroupSpec& group;
    std::vector<ColumnSpec> columns;  // all columns of the group's table
    std::vector<const Row*> rows;     // rows of done tasks, in task order

    // Index of column `name`, or -1.
    int find(const std::string& name) const;
    // A column as doubles (int columns converted); throws if missing or a string column.
    std::vector<double> numbers(const std::string& name) const;
    std::vector<std::string> texts(const std::string& name) const;
};

// Where an analysis reports a degenerate statistic (logged by the coordinator).
using AnalysisNote = std::function<void(const std::string&)>;

class AnalysisKind {
  public:
    virtual ~AnalysisKind() = default;
    virtual std::string_view name() const = 0;
    virtual std::vector<KeyRule> keys() const = 0;
    // Checks the spec against the input group's columns (throws ConfigError).
    virtual void check(const AnalysisSpec& spec, const std::vector<ColumnSpec>& input_columns,
                       const YamlChecker& checker) const = 0;
    virtual std::vector<TableData> run(const AnalysisSpec& spec, const AnalysisInput& input,
                                       const AnalysisNote& note) const = 0;
};

std::span<const AnalysisKind* const> analysis_kinds();
const AnalysisKind* find_analysis_kind(std::string_view name);

}  // namespace compatbench
