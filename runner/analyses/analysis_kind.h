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
#include "core/table.h"
#include "core/value.h"

namespace compatbench {

struct AnalysisSpec;
struct GroupSpec;

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
